package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/sirupsen/logrus"

	"github.com/restoregraph/restoregraph/test/velero/internal/credentials"
)

// dirStore is an object store (Velero's ObjectStore interface) over a directory: bucket
// B's key K is the file ROOT/B/K, ROOT being the location's config "root". A location
// whose config sets "breakAt" has each GetObject stream fail after that many bytes, the
// first time only (once per marker file $ROOT/.broke), as a connection that drops. When
// ROOT/.credentials exists, Init requires the location's credentialsFile to hold the
// same bytes, as a store checks its credentials.
type dirStore struct {
	root    string
	breakAt int64
}

func newDirStore(logrus.FieldLogger) (any, error) { return &dirStore{}, nil }

func (s *dirStore) Init(config map[string]string) error {
	s.root = config["root"]
	if s.root == "" {
		return errors.New("config: root is required")
	}
	if v := config["breakAt"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("config: breakAt: %w", err)
		}
		s.breakAt = n
	}
	return credentials.Check(s.root, config)
}
