package pluginhost

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/plugin/builtin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	riav2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
	"github.com/restoregraph/restoregraph/velero/internal/testbin"
)

// veleroEnvironment is an embedded server as Velero's actions expect to find one: the
// velero namespace and Deployment, and a kubeconfig for it.
func veleroEnvironment(t *testing.T) string {
	s, err := memcluster.StartServer(memcluster.Options{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	dyn, err := dynamic.NewForConfig(s.Config())
	require.NoError(t, err)
	ctx := context.Background()
	_, err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "velero"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("velero").Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "velero", "namespace": "velero"},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"name": "velero"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"name": "velero"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "velero", "image": "velero/velero:v1.18.3"}}}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: embedded, cluster: {server: %q}}]
users: [{name: anyone, user: {}}]
contexts: [{name: embedded, context: {cluster: embedded, user: anyone}}]
current-context: embedded
`, s.Config().Host)), 0o600))
	return kc
}

// sanitized is the object as both restores hand it to their actions: the server's
// metadata and the status removed.
func sanitized(t *testing.T, data []byte) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(data))
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	delete(u.Object, "status")
	return u
}

// runAll passes an object through every action of reg that applies, as a restore does.
func runAll(t *testing.T, actions []*plugin.Action, it *manifest.Item, obj *unstructured.Unstructured) (*unstructured.Unstructured, []string, string) {
	var extra []string
	body := obj.DeepCopy()
	for _, a := range actions {
		if !a.AppliesTo(it.GroupResource(), it.Namespace, it.Labels) {
			continue
		}
		out, err := riav2.Execute(context.Background(), a.RestoreItemAction, &ria.ExecuteInput{Item: body, ItemFromBackup: obj, Restore: &ria.Restore{Name: "compare", Backup: "shop"}})
		if err != nil {
			return nil, nil, a.Name + ": " + err.Error()
		}
		if out.SkipRestore {
			return nil, nil, a.Name + " skips it"
		}
		if out.UpdatedItem != nil {
			body = out.UpdatedItem
		}
		for _, x := range out.AdditionalItems {
			extra = append(extra, x.String())
		}
	}
	sort.Strings(extra)
	return body, extra, ""
}

// diff lists the paths where two JSON values differ.
func diff(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var out []string
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			out = append(out, diff(path+"."+k, am[k], bm[k])...)
		}
		return out
	}
	if !reflect.DeepEqual(a, b) {
		av, _ := json.Marshal(a)
		bv, _ := json.Marshal(b)
		return []string{fmt.Sprintf("%s: velero %s, restoregraph %s", path, av, bv)}
	}
	return nil
}

// TestVeleroBuiltinActionsAgainstRestoregraphs passes every object of the real shop
// backup through Velero's built-in restore actions, served by the velero binary itself,
// and through restoregraph's, and lists where they differ.
func TestVeleroBuiltinActionsAgainstRestoregraphs(t *testing.T) {
	bin := testbin.Velero(t)
	h := &Host{Env: []string{"KUBECONFIG=" + veleroEnvironment(t)}}
	defer h.Close()
	plugins, err := h.Discover(context.Background(), []string{bin, "run-plugins"})
	require.NoError(t, err)
	var velero, ours plugin.Registry
	// Two of Velero's actions look up Velero's own records of the backup (the Backup,
	// its PodVolumeBackups), which only a Velero install has: they restore volume data,
	// which restoregraph does not do.
	require.NoError(t, h.Register(&velero, plugins, "velero.io/csi-pvc-restorer", "velero.io/pod-volume-restore"))
	b, err := archive.ReadFile(context.Background(), "../../testdata/backups/shop-k8s-1.37.tar.gz", archive.Options{})
	require.NoError(t, err)
	m := b.Manifest()
	require.NoError(t, builtin.Register(&ours, builtin.Options{InBackup: func(id manifest.ID) bool { _, ok := m.Get(id); return ok }}))
	va, err := velero.Actions()
	require.NoError(t, err)
	oa, err := ours.Actions()
	require.NoError(t, err)

	var differences []string
	for _, it := range m.Items() {
		data, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err)
		obj := sanitized(t, data)
		vb, vextra, verr := runAll(t, va, it, obj)
		ob, oextra, oerr := runAll(t, oa, it, obj)
		where := it.Kind + " " + it.Name
		if verr != "" || oerr != "" {
			differences = append(differences, fmt.Sprintf("%s: velero %q, restoregraph %q", where, verr, oerr))
			continue
		}
		for _, d := range diff("", vb.Object, ob.Object) {
			differences = append(differences, where+": "+d)
		}
		if !slices.Equal(vextra, oextra) {
			differences = append(differences, fmt.Sprintf("%s: additional items: velero %v, restoregraph %v", where, vextra, oextra))
		}
	}
	t.Logf("%d objects, %d differences:\n%s", m.Len(), len(differences), strings.Join(differences, "\n"))
	// Every difference has its reason (README, "Velero's built-in restore actions"):
	justified := map[string]int{}
	for _, d := range differences {
		switch {
		case strings.Contains(d, ": .status: velero {"):
			// Velero's actions convert to typed objects and back, which writes an empty
			// status; the API server drops status on create.
			justified["typed status"]++
		case strings.HasPrefix(d, "Job migrate: .spec.selector: velero {}"):
			// The same round trip writes an empty selector; the server generates the
			// selector from the Job's UID either way.
			justified["typed selector"]++
		case strings.HasPrefix(d, "Job migrate: .metadata.labels.") && strings.Contains(d, "controller-uid") && strings.HasSuffix(d, "restoregraph null"):
			// restoregraph also clears the Job's own controller-uid labels: they name the
			// source Job's UID.
			justified["job labels"]++
		case strings.HasPrefix(d, "Pod ") && strings.Contains(d, ": additional items:"):
			// restoregraph restores a Pod's ServiceAccount first: the API server refuses a
			// Pod whose ServiceAccount is missing. Velero relies on its resource order.
			v, r := d[strings.Index(d, "velero [")+len("velero ["):], d[strings.Index(d, "restoregraph [")+len("restoregraph ["):]
			v, r = strings.TrimSuffix(v[:strings.Index(v, "]")], " "), strings.TrimSuffix(r, "]")
			rest := slices.DeleteFunc(strings.Fields(r), func(s string) bool { return strings.HasPrefix(s, "serviceaccounts/") })
			require.Equal(t, strings.Fields(v), rest, "apart from the ServiceAccount, the same additional items: %s", d)
			justified["pod serviceaccount"]++
		default:
			t.Errorf("an unexplained difference: %s", d)
		}
	}
	require.Equal(t, map[string]int{"typed status": 11, "typed selector": 1, "job labels": 2, "pod serviceaccount": 6}, justified)
}
