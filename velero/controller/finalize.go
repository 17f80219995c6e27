package controller

import (
	"context"
	"errors"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/restoregraph/restoregraph/velero"
)

// finalize does what Velero's restore controller does for a deleted Restore that holds
// ExternalResourcesFinalizer: it removes the restore's files from the location of its
// backup (none when the backup is gone, as Velero), then the finalizer, under the
// Restore's resourceVersion (of several processes, one does it; the files' removal is
// the same done twice).
func (c *Controller) finalize(ctx context.Context, u *unstructured.Unstructured) error {
	if !slices.Contains(u.GetFinalizers(), ExternalResourcesFinalizer) {
		return nil
	}
	backup, _, _ := unstructured.NestedString(u.Object, "spec", "backupName")
	if backup != "" {
		loc, err := c.velero.BackupLocation(ctx, backup)
		switch {
		case errors.Is(err, velero.ErrBackupNotFound):
			c.log.Info("the deleted restore's backup is gone: its files are left", "restore", u.GetName(), "backup", backup)
		case err != nil:
			return err
		default:
			store, err := c.velero.OpenLocation(ctx, c.host, loc, c.commands...)
			if err != nil {
				return err
			}
			err = store.DeleteRestoreFiles(ctx, u.GetName())
			store.Close()
			if err != nil {
				return err
			}
		}
	}
	o := u.DeepCopy()
	o.SetFinalizers(slices.DeleteFunc(o.GetFinalizers(), func(f string) bool { return f == ExternalResourcesFinalizer }))
	_, err := c.velero.Dynamic.Resource(velero.RestoresResource).Namespace(c.velero.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: the change brings it here again
	}
	if err == nil {
		c.log.Info("deleted restore's files removed", "restore", u.GetName())
	}
	return err
}
