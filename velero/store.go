package velero

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// Store is a backup storage location's bucket, reached through the location's
// object-store plugin and laid out as Velero lays it out: backups under
// PREFIX/backups/NAME/, the files of restores under PREFIX/restores/NAME/.
type Store struct {
	*pluginhost.ObjectStore
	Location Location

	credentials string // the file written for the plugin, which remove removes
	remove      func()
}

// OpenLocation returns the object store of loc, through the plugin among commands that
// serves its provider, configured as Velero configures it: the location's config with
// bucket and prefix, caCert from the location or its Secret, and the credential's Secret
// key written to a file only this user reads, as credentialsFile. A location that names
// no credential leaves the plugin to its environment's (as Velero's server leaves it to
// the credentials mounted into its Pod). Close removes the file.
func (v Client) OpenLocation(ctx context.Context, host *pluginhost.Host, loc Location, commands ...[]string) (*Store, error) {
	config := maps.Clone(loc.Config)
	if config == nil {
		config = map[string]string{}
	}
	config["bucket"], config["prefix"] = loc.Bucket, loc.Prefix
	switch {
	case loc.CACertRef != nil:
		ca, err := v.secret(ctx, loc.CACertRef)
		if err != nil {
			return nil, fmt.Errorf("backup storage location %s: caCertRef: %w", loc.Name, err)
		}
		config["caCert"] = string(ca)
	case loc.CACert != nil:
		config["caCert"] = string(loc.CACert)
	}
	credentials, remove := "", func() {}
	if loc.Credential != nil {
		creds, err := v.secret(ctx, loc.Credential)
		if err != nil {
			return nil, fmt.Errorf("backup storage location %s: credential: %w", loc.Name, err)
		}
		path, rm, err := writeSecretFile(creds)
		if err != nil {
			return nil, err
		}
		config["credentialsFile"], credentials, remove = path, path, rm
	}
	o, err := host.ObjectStore(ctx, pluginhost.ProviderPlugin(loc.Provider), loc.Bucket, config, commands...)
	if err != nil {
		remove()
		return nil, fmt.Errorf("backup storage location %s: %w", loc.Name, err)
	}
	return &Store{ObjectStore: o, Location: loc, credentials: credentials, remove: remove}, nil
}

// Close removes what the store holds of its own (the credentials file written for its
// plugin); the plugin process ends with its Host.
func (s *Store) Close() error {
	if s.remove != nil {
		s.remove()
		s.remove = nil
	}
	return nil
}

// BackupKey is the key of a backup's tarball in the store.
func (s *Store) BackupKey(name string) string { return archive.TarballKey(s.Location.Prefix, name) }

// RestoreKey is the key of a restore's file in a location: PREFIX/restores/NAME/FILE.
func RestoreKey(prefix, name, file string) string { return path.Join(prefix, "restores", name, file) }

// PutRestoreFiles writes rec's results, resource list and log under restores/NAME/,
// where Velero keeps its own: with the Restore's status (RestoreRecord.Status), what
// velero restore describe --details and logs read.
func (s *Store) PutRestoreFiles(ctx context.Context, rec RestoreRecord) error {
	files, err := rec.Files()
	if err != nil {
		return fmt.Errorf("recording restore %s: %w", rec.Name, err)
	}
	for _, f := range files {
		if err := s.Put(ctx, RestoreKey(s.Location.Prefix, rec.Name, f.Name), bytes.NewReader(f.Data)); err != nil {
			return fmt.Errorf("recording restore %s: %w", rec.Name, err)
		}
	}
	return nil
}

// DeleteRestoreFiles removes every file under restores/NAME/, as Velero's restore
// controller does when its Restore is deleted (velero restore delete). Each file is
// tried; the error joins those that failed.
func (s *Store) DeleteRestoreFiles(ctx context.Context, name string) error {
	keys, err := s.List(ctx, RestoreKey(s.Location.Prefix, name, "")+"/")
	if err != nil {
		return err
	}
	var errs []error
	for _, key := range keys {
		errs = append(errs, s.Delete(ctx, key))
	}
	return errors.Join(errs...)
}

// writeSecretFile writes data to a file only this user reads, for a plugin that takes
// a path: Velero hands credentials to object stores this way.
func writeSecretFile(data []byte) (path string, remove func(), err error) {
	f, err := os.CreateTemp("", "restoregraph-credentials-*")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.Remove(f.Name()) }
	if _, err := f.Write(data); err != nil {
		f.Close()
		remove()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		remove()
		return "", nil, err
	}
	return f.Name(), remove, nil
}
