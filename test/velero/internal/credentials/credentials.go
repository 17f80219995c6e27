// Package credentials checks the credentials a test plugin is given, as a provider
// checks them.
package credentials

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Check requires, when root/.credentials exists, that config's credentialsFile hold the
// same bytes.
func Check(root string, config map[string]string) error {
	want, err := os.ReadFile(filepath.Join(root, ".credentials"))
	if err != nil {
		return nil
	}
	got, err := os.ReadFile(config["credentialsFile"])
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	if !bytes.Equal(got, want) {
		return errors.New("credentials: not the provider's")
	}
	return nil
}
