package velero

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/restoregraph/restoregraph/restore"
)

var configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// DeleteDataUploadResults deletes the ConfigMaps Velero's DataUpload action left in
// Velero's namespace for the restore whose UID is uid: each holds the result of a
// DataUpload of the backup, which the claim's action starts its DataDownload from.
// Velero deletes them at the end of its restore; a caller deletes them once every claim
// that needed one is restored, and keeps them for a restore run again.
func (v Client) DeleteDataUploadResults(ctx context.Context, uid types.UID) error {
	sel := labels.SelectorFromSet(labels.Set{"velero.io/restore-uid": string(uid), "velero.io/resource-usage": "DataUploadResult"})
	err := v.Dynamic.Resource(configMapsResource).Namespace(v.namespace()).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return fmt.Errorf("deleting the DataUpload results of restore %s: %w", uid, err)
	}
	return nil
}

// MovesData says whether any of vols comes back by data movement: a restore of them
// leaves DataUpload results to delete once it is done.
func MovesData(vols []restore.Volume) bool {
	return slices.ContainsFunc(vols, func(v restore.Volume) bool { return v.Method == restore.VolumeDataMovement })
}
