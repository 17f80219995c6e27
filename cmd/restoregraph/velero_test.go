package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A backup is named once, and one named through Velero comes with what reading it
// needs: the plugins that reach its location, and the cluster where Velero runs.
func TestFromBackupFlags(t *testing.T) {
	backup := capiTarball(t, 1)
	for name, c := range map[string]struct {
		args []string
		says string
	}{
		"none":                  {[]string{"plan", "--embedded"}, "name the backup: --backup FILE|URL, --from-backup NAME or --from-schedule NAME"},
		"two":                   {[]string{"plan", "--backup", backup, "--from-backup", "nightly", "--embedded"}, "give one"},
		"no plugins":            {[]string{"restore", "--from-backup", "nightly", "--embedded"}, "give the directory of Velero's plugins with --plugins"},
		"embedded, no source":   {[]string{"verify", "--from-schedule", "daily", "--plugins", t.TempDir(), "--embedded"}, "give --source-kubeconfig"},
		"endpoint with a name":  {[]string{"plan", "--from-backup", "nightly", "--s3-endpoint", "http://127.0.0.1:1", "--embedded"}, "--s3-endpoint is for an s3:// --backup"},
		"no plugin in the dir":  {[]string{"plan", "--from-backup", "nightly", "--plugins", t.TempDir(), "--source-kubeconfig", "kc", "--embedded"}, "holds no executable"},
		"source with a tarball": {[]string{"plan", "--backup", backup, "--source-kubeconfig", "kc", "--embedded"}, "--source-kubeconfig is where Velero runs"},
	} {
		t.Run(name, func(t *testing.T) {
			r := rg(t, c.args...)
			assert.Equal(t, 2, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, c.says)
		})
	}
}
