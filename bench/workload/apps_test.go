package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/restoregraph/restoregraph/archive"
)

// TestEnvelopeShape reads back a backup in the Envelope shape and counts what a million
// objects would hold: it must stay within Kubernetes' scalability thresholds for
// namespaces, Services and Pods, and every owner must be in the backup.
func TestEnvelopeShape(t *testing.T) {
	var buf bytes.Buffer
	n, err := WriteShaped(&buf, 20_000, 1, Envelope)
	if err != nil {
		t.Fatal(err)
	}
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := b.Manifest()
	count := map[string]int{}
	for _, it := range m.Items() {
		count[it.Resource]++
		for _, uid := range it.OwnerUIDs {
			if _, ok := m.ByUID(uid); !ok {
				t.Fatalf("%s %s/%s: owner %s is not in the backup", it.Kind, it.Namespace, it.Name, uid)
			}
		}
	}
	if len(m.Items()) != n {
		t.Fatalf("read %d objects, wrote %d", len(m.Items()), n)
	}
	apps := count["deployments"]
	for resource, want := range map[string]int{
		"replicasets": apps * (Envelope.OldReplicaSets + 1),
		"pods":        apps * 3,
		"services":    (apps + Envelope.ServiceEvery - 1) / Envelope.ServiceEvery,
		"secrets":     apps * (Envelope.HelmReleases + 1),
		"namespaces":  (apps + Envelope.AppsPerNamespace - 1) / Envelope.AppsPerNamespace,
	} {
		if count[resource] != want {
			t.Errorf("%d %s for %d applications, want %d", count[resource], resource, apps, want)
		}
	}
	// Every Deployment has settled after its rollouts: its status has observed the
	// generation its last rollout made.
	for _, it := range m.Items() {
		if it.Resource != "deployments" {
			continue
		}
		body, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Metadata struct{ Generation int64 }
			Status   struct{ ObservedGeneration int64 }
		}
		if err := json.Unmarshal(body, &d); err != nil {
			t.Fatal(err)
		}
		if want := int64(Envelope.OldReplicaSets + 1); d.Metadata.Generation != want || d.Status.ObservedGeneration != want {
			t.Fatalf("Deployment %s/%s: generation %d, observed %d; want both %d", it.Namespace, it.Name, d.Metadata.Generation, d.Status.ObservedGeneration, want)
		}
	}
	// At a million objects, within the thresholds.
	scale := 1e6 / float64(n)
	for resource, limit := range map[string]float64{"namespaces": 10_000, "services": 10_000, "pods": 150_000} {
		if got := float64(count[resource]) * scale; got > limit {
			t.Errorf("%.0f %s in a million objects, over the threshold of %.0f", got, resource, limit)
		}
	}
	t.Logf("%d objects: %v", n, count)
}
