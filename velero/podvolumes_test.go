package velero

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
)

func podVolumeBackup(name, backup, ns, pod, volume, snapshot string) *unstructured.Unstructured {
	return veleroObject("PodVolumeBackup", name, map[string]string{"velero.io/backup-name": backup},
		map[string]any{"pod": map[string]any{"kind": "Pod", "namespace": ns, "name": pod}, "volume": volume, "uploaderType": "kopia"},
		map[string]any{"phase": "Completed", "snapshotID": snapshot})
}

// The volumes a restore fills are those the backup's PodVolumeBackups hold, by their
// Pod, leaving out another backup's and one without a snapshot; with no node-agent in
// the target, filling them fails saying so, before anything is made.
func TestPodVolumesAreTheBackupsPodVolumeBackups(t *testing.T) {
	ctx := context.Background()
	lists := map[schema.GroupVersionResource]string{podVolumeBackupsResource: "PodVolumeBackupList", podVolumeRestoresResource: "PodVolumeRestoreList",
		backupRepositoriesResource: "BackupRepositoryList", daemonSetsResource: "DaemonSetList", podsResource: "PodList"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists,
		podVolumeBackup("daily-a", "daily", "shop", "db-0", "data", "s-1"),
		podVolumeBackup("daily-b", "daily", "shop", "db-0", "logs", "s-2"),
		podVolumeBackup("daily-c", "daily", "shop", "web-1", "empty", ""),
		podVolumeBackup("weekly-a", "weekly", "shop", "web-1", "data", "s-3"))
	v := Client{Dynamic: dyn}
	r, err := v.PodVolumeRestorer(ctx, &Backup{Name: "daily", Location: Location{Name: "default"}}, v)
	require.NoError(t, err)
	assert.Equal(t, []string{"data", "logs"}, r.Volumes("shop", "db-0"))
	assert.Empty(t, r.Volumes("shop", "web-1"), "another backup's, and one without a snapshot")

	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "db-0", "namespace": "shop", "uid": "uid-pod"}}}
	err = r.RestorePodVolumes(ctx, pod, "shop", &ria.Restore{Name: "r-1", UID: "uid-r"})
	assert.EqualError(t, err, "no DaemonSet velero/node-agent: Velero's node-agent fills pod volumes (velero install --use-node-agent)")
	made, err := dyn.Resource(podVolumeRestoresResource).Namespace("velero").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, made.Items)
}

// PodVolumeRestores this restore made for a Pod before (a run stopped, run again from
// its journal) are followed, not made again; another restore's are not taken for them.
func TestPodVolumeRestoresMadeBeforeAreFollowed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // not made again: nothing to wait for
	defer cancel()
	lists := map[schema.GroupVersionResource]string{podVolumeBackupsResource: "PodVolumeBackupList", podVolumeRestoresResource: "PodVolumeRestoreList",
		backupRepositoriesResource: "BackupRepositoryList", daemonSetsResource: "DaemonSetList", podsResource: "PodList"}
	pvr := func(name, restoreUID, volume, phase string) *unstructured.Unstructured {
		return veleroObject("PodVolumeRestore", name, map[string]string{"velero.io/pod-uid": "uid-pod", "velero.io/restore-uid": restoreUID},
			map[string]any{"pod": map[string]any{"kind": "Pod", "namespace": "shop", "name": "db-0", "uid": "uid-pod"}, "volume": volume},
			map[string]any{"phase": phase, "message": "disk full"})
	}
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "db-0", "namespace": "shop", "uid": "uid-pod"},
		"spec":     map[string]any{"volumes": []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}, map[string]any{"name": "logs", "emptyDir": map[string]any{}}}}}}
	agent := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": "node-agent", "namespace": "velero"}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists,
		podVolumeBackup("daily-a", "daily", "shop", "db-0", "data", "s-1"),
		podVolumeBackup("daily-b", "daily", "shop", "db-0", "logs", "s-2"),
		pod, agent,
		pvr("r-1-data", "uid-r", "data", "Completed"), pvr("r-1-logs", "uid-r", "logs", "Failed"), pvr("r-0-logs", "uid-earlier", "logs", "Completed"))
	v := Client{Dynamic: dyn}
	r, err := v.PodVolumeRestorer(ctx, &Backup{Name: "daily", Location: Location{Name: "default"}}, v)
	require.NoError(t, err)

	err = r.RestorePodVolumes(ctx, pod, "shop", &ria.Restore{Name: "r-1", UID: "uid-r"})
	assert.EqualError(t, err, "volume logs: PodVolumeRestore velero/r-1-logs failed: disk full", "this restore's, followed to their end")
	made, err := dyn.Resource(podVolumeRestoresResource).Namespace("velero").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, made.Items, 3, "none made again")
}
