package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/bucket"
)

// destination is where -o URL or --storage-location say a backup goes, kept as Velero
// keeps backups: the bucket, the tarball's key in it, and the location velero-backup.json
// names.
type destination struct {
	bucket   velero.Bucket
	key      string // PREFIX/backups/NAME/NAME.tar.gz
	where    string // for messages: the URL, or the location
	location string
}

// urlDestination is the bucket of URL u, whose location is named location.
func urlDestination(ctx context.Context, u bucket.URL, location string) (destination, error) {
	store, err := u.Open(ctx)
	if err != nil {
		return destination{}, badInput("-o %w", err)
	}
	return destination{bucket: store, key: u.Key, where: u.Raw, location: location}, nil
}

// locationDestination opens --storage-location of Velero's, in the cluster cfg reaches,
// through its object-store plugin among --plugins, for backup name to be written there.
func (bf *backupFlags) locationDestination(ctx context.Context, cmd *cobra.Command, cfg *rest.Config, name string) (destination, func(), error) {
	rf := restoreFlags{pluginDir: bf.pluginDir, pluginPaths: bf.pluginPaths}
	host, commands, stopHost, err := rf.pluginHost(cfg, cmd.ErrOrStderr())
	if err != nil {
		return destination{}, nil, err
	}
	if host == nil {
		stopHost()
		return destination{}, nil, badInput("--plugins %s holds no executable", bf.pluginDir)
	}
	fail := func(err error) (destination, func(), error) { stopHost(); return destination{}, nil, veleroError(err) }
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fail(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(err)
	}
	v := velero.Client{Dynamic: dyn, Secrets: cs.CoreV1(), Namespace: bf.veleroNS}
	loc, err := v.Location(ctx, bf.storageLocation)
	if err == nil {
		err = loc.Writable()
	}
	if err != nil {
		return fail(err)
	}
	store, err := v.OpenLocation(ctx, host, loc, commands...)
	if err != nil {
		return fail(err)
	}
	return destination{bucket: store, key: store.BackupKey(name), location: loc.Name,
			where: fmt.Sprintf("location %s/%s (%s, bucket %s)", bf.veleroNS, loc.Name, loc.Provider, loc.Bucket)},
		func() { store.Close(); stopHost() }, nil
}

// put writes the tarball at local and rec's files where d says.
func (d destination) put(ctx context.Context, local string, rec velero.BackupRecord) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := velero.PutBackup(ctx, d.bucket, d.key, f, rec); err != nil {
		return &exitError{code: exitUnreachable, err: fmt.Errorf("%s: %w", d.where, err)}
	}
	return nil
}

// write backs up the cluster cfg reaches into the tarball local, selected by spec,
// admitted as --admission says.
func (bf *backupFlags) write(ctx context.Context, cfg *rest.Config, local, name string, spec filter.Spec) (*backup.Result, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var adm admission.Admitter
	if adm, err = newAdmitter(bf.admission, bf.admissionNS, cfg); err != nil {
		return nil, err
	}
	tmp := local + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600) // Secrets are in it
	if err != nil {
		return nil, badInput("%w", err)
	}
	defer os.Remove(tmp)
	res, err := backup.Run(ctx, backup.Source{Dynamic: dyn, Discovery: disc}, f, backup.Options{Filter: spec,
		SpillDir: filepath.Dir(local), Admitter: adm, Name: name})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, &exitError{code: exitBadInput, err: err}
	}
	return res, os.Rename(tmp, local)
}
