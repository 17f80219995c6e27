package test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
)

// fillingPods stands for Velero's node-agent: it says which Pods' volumes a file-system
// backup holds, and fills them at once.
type fillingPods struct {
	mu     sync.Mutex
	byPod  map[string][]string
	filled []string
}

func (f *fillingPods) Volumes(namespace, name string) []string { return f.byPod[namespace+"/"+name] }

func (f *fillingPods) RestorePodVolumes(_ context.Context, pod *unstructured.Unstructured, _ string, _ *ria.Restore) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filled = append(f.filled, pod.GetNamespace()+"/"+pod.GetName())
	return nil
}

// restoreWait stands for Velero's velero.io/pod-volume-restore action, which the plan
// asks for when Pods' volumes are filled; the Pod is left as it is.
type restoreWait struct{}

func (restoreWait) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"pods"}}, nil
}

func (restoreWait) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	return &ria.ExecuteOutput{UpdatedItem: in.Item}, nil
}

// TestAJobAdoptsItsPodRestoredBeforeIt: a Job's Pod whose volume a file-system backup
// holds is restored before its Job, without an owner, for its volume to be filled
// before anything starts a Pod of its own. The real Job controller then adopts that Pod
// and starts none beside it: the restored Job keeps the selector it had (its Pods'
// controller-uid label), where the Job's action takes it off for the API server to make
// one of the new Job's UID, which the restored Pod does not match.
func TestAJobAdoptsItsPodRestoredBeforeIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t, harness.Options{Controllers: harness.AppControllers})
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "batch"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: "batch"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "migrate", Image: "busybox:1.37", Command: []string{"sh", "-c", "echo migrated > /scratch/done"},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}}}}
	require.Eventually(t, func() bool { // once the namespace's default ServiceAccount is there
		_, err = cs.BatchV1().Jobs("batch").Create(ctx, job, metav1.CreateOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "%v", err)
	var pod string
	require.Eventually(t, func() bool {
		pods, err := cs.CoreV1().Pods("batch").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0].Name
		return true
	}, 30*time.Second, 100*time.Millisecond, "the Job controller starts the Job's Pod")

	b, err := archive.ReadFile(ctx, backupOf(t, c, filter.Spec{IncludeNamespaces: []string{"batch"}}), archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })

	var reg plugin.Registry
	require.NoError(t, reg.Register(restore.PodVolumeAction, plugin.V1, restoreWait{}))
	fill := &fillingPods{byPod: map[string][]string{"batch/" + pod: {"scratch"}}}
	tgt := restoreTarget(t, c.Config)
	p, err := restore.NewPlan(ctx, b, tgt, restore.PlanOptions{
		Selection:  restore.Selection{NamespaceMappings: map[string]string{"batch": "restored"}},
		Extensions: restore.Extensions{PodVolumes: fill, Plugins: &reg}})
	require.NoError(t, err)
	rep, err := restore.Apply(ctx, p, tgt, restore.RunOptions{Name: "adopt"})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v", rep.Summary)
	assert.Equal(t, []string{"restored/" + pod}, fill.filled)

	restored, err := cs.BatchV1().Jobs("restored").Get(ctx, "migrate", metav1.GetOptions{})
	require.NoError(t, err)
	var seen []string
	owned := func() bool {
		pods, err := cs.CoreV1().Pods("restored").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		seen = seen[:0]
		for _, p := range pods.Items {
			owner := "none"
			if ref := metav1.GetControllerOf(&p); ref != nil {
				owner = ref.Kind + "/" + ref.Name + " " + string(ref.UID)
			}
			seen = append(seen, p.Name+" owned by "+owner)
		}
		return len(pods.Items) == 1 && pods.Items[0].Name == pod && metav1.IsControlledBy(&pods.Items[0], restored)
	}
	if !assert.Eventually(t, owned, 30*time.Second, 100*time.Millisecond) {
		t.Fatalf("the restored Pod adopted by Job %s, and no Pod beside it: %v", restored.UID, seen)
	}
	assert.Never(t, func() bool { return !owned() }, 3*time.Second, 200*time.Millisecond, "no Pod beside the adopted one: %v", seen)
	assert.True(t, restored.Spec.ManualSelector != nil && *restored.Spec.ManualSelector, "the backup's selector, kept")
}
