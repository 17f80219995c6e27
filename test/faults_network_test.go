package test

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
)

// TestRestoreThroughACutConnection restores 3,010 objects through a proxy before
// kube-apiserver that, 5 s in, resets every connection and every new one for 5 s, and
// 3 s later holds every byte for 10 s, connections open. The restore finishes by
// itself, exit 0, every object once and whole.
func TestRestoreThroughACutConnection(t *testing.T) {
	const namespaces, perNamespace = 10, 300
	tarball := wideBackup(t, "cut", namespaces, perNamespace)
	requireCLI(t)
	c := startCluster(t, harness.Options{})
	u, err := url.Parse(c.Config.Host)
	require.NoError(t, err)
	proxy := newTCPProxy(t, u.Host)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, c.WriteKubeconfig(kubeconfig, "https://"+proxy.Addr, "admin"))

	faulted := make(chan struct{})
	go func() {
		defer close(faulted)
		time.Sleep(5 * time.Second)
		proxy.Cut(5 * time.Second)
		time.Sleep(3 * time.Second)
		proxy.Stall(10 * time.Second)
	}()
	run := runCLI(t, "restore", "--backup", tarball, "--kubeconfig", kubeconfig, "-o", "json",
		"--client-qps", "100", "--client-burst", "100", "--workers", "8", "--item-timeout", "3m")
	<-faulted
	require.Zero(t, run.exit, "after %s\n%s", run.took, tail(run.stderr, 4000))
	assert.Less(t, 23*time.Second, run.took, "the restore was running through both faults")
	assert.Positive(t, proxy.cut.Load(), "connections under way were reset")
	restored, retries := 0, 0
	for _, o := range run.report(t).Objects {
		if o.Status == restore.Restored {
			restored++
		}
		retries += o.Retries
	}
	assert.Equal(t, namespaces*(1+perNamespace), restored, "every object restored")
	assert.Positive(t, retries, "requests were cut and tried again")
	t.Logf("cut 5 s, stalled 10 s: exit 0 after %s, %d connections made, %d reset, %d retries", run.took.Round(100*time.Millisecond),
		proxy.accepted.Load(), proxy.cut.Load(), retries)
	assertWhole(t, c, "cut", namespaces, perNamespace)
}

// apfTight puts every request of the restorer into a priority level of one share that
// rejects (429) what it cannot seat at once, instead of queuing it; the restorer may do
// anything else.
const apfTight = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: restoregraph-tight}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: restoregraph-tight}
spec:
  priorityLevelConfiguration: {name: restoregraph-tight}
  matchingPrecedence: 100
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: restorer}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: restorer-is-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: restorer}]
`

// TestRestoreUnderPriorityAndFairness restores as a user whom API Priority and Fairness
// gives a few seats and rejects beyond them, with 16 workers: the API server answers
// 429, and the restore finishes by itself, every object once and whole.
func TestRestoreUnderPriorityAndFairness(t *testing.T) {
	const namespaces, perNamespace = 2, 150
	tarball := wideBackup(t, "apf", namespaces, perNamespace)
	c := startCluster(t, harness.Options{})
	applyYAML(t, c, apfTight)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, c.WriteKubeconfig(kubeconfig, "", harness.Restorer))
	waitForFlowSchema(t, c, "restoregraph-tight")
	before := rejected(t, c, "restoregraph-tight")

	run := runCLI(t, "restore", "--backup", tarball, "--kubeconfig", kubeconfig, "-o", "json",
		"--client-qps", "1000", "--client-burst", "1000", "--workers", "16", "--item-timeout", "3m")
	require.Zero(t, run.exit, "after %s\n%s", run.took, tail(run.stderr, 4000))
	n := rejected(t, c, "restoregraph-tight") - before
	assert.Positive(t, n, "API Priority and Fairness rejected requests of the restore (429)")
	restored := 0
	for _, o := range run.report(t).Objects {
		if o.Status == restore.Restored {
			restored++
		}
	}
	assert.Equal(t, namespaces*(1+perNamespace), restored, "every object restored")
	t.Logf("%d requests rejected with 429: exit 0 after %s", n, run.took.Round(100*time.Millisecond))
	assertWhole(t, c, "apf", namespaces, perNamespace)
}

// applyYAML creates the objects of a YAML stream as the admin.
func applyYAML(t testing.TB, c *harness.Cluster, docs string) {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(docs, "\n---\n") {
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
		objs = append(objs, obj)
	}
	createAll(t, c, "", objs)
}

// waitForFlowSchema waits until the restorer's requests are classified by the flow
// schema named: the API server says which in a header of each response.
func waitForFlowSchema(t *testing.T, c *harness.Cluster, name string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	fs, err := cs.FlowcontrolV1().FlowSchemas().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	rt, err := rest.TransportFor(c.ConfigAs(harness.Restorer))
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	require.Eventually(t, func() bool {
		resp, err := client.Get(c.Config.Host + "/api/v1/namespaces/default")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == string(fs.UID)
	}, 30*time.Second, 200*time.Millisecond, "the restorer's requests go to %s", name)
}

// rejected sums what API Priority and Fairness rejected under a flow schema, from the
// API server's metrics.
func rejected(t *testing.T, c *harness.Cluster, flowSchema string) int {
	t.Helper()
	total := 0
	for _, s := range counters(t, c, "apiserver_flowcontrol_rejected_requests_total") {
		if s.label("flow_schema") == flowSchema {
			total += int(s.value)
		}
	}
	return total
}
