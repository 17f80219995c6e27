package workload

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/manifest"
)

// TestGraphShapes reads back a small backup of each shape, made smaller to match (its
// namespaces, chains and fans scaled down), and checks what the benchmarks rely on:
// the objects written, their namespaces, the depth of the longest owner chain and how
// many dependents the widest owner has, every owner in the backup.
func TestGraphShapes(t *testing.T) {
	for _, tc := range []struct {
		g                         Graph
		namespaces, depth, widest int
	}{
		{Graph{Name: "chains", PerNamespace: 100, Depth: 5, Value: 40}, 10, 5, 1},
		{Graph{Name: "long", PerNamespace: 500, Depth: 250, Value: 40}, 2, 250, 1},
		{Graph{Name: "fan", PerNamespace: 1_000, Depth: 1, FanOut: 999, Value: 40}, 1, 2, 999},
		{Graph{Name: "flat", PerNamespace: 1 << 62, Depth: 1, Value: 40}, 1, 1, 0},
		{Graph{Name: "large", PerNamespace: 250, Depth: 1, Value: 4 << 10}, 4, 1, 0},
	} {
		t.Run(tc.g.Name, func(t *testing.T) {
			const objects = 1_000
			var buf bytes.Buffer
			n, err := WriteGraph(&buf, objects+tc.namespaces, 1, tc.g)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := resourceOrder(t, buf.Bytes()), []string{"configmaps", "namespaces", "secrets", "deployments.apps"}; !slices.Equal(got, want) {
				t.Errorf("resources written in the order %v, Velero's is %v", got, want)
			}
			b, err := archive.Read(context.Background(), &buf, archive.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			m := b.Manifest()
			if m.Len() != n || n != objects+tc.namespaces {
				t.Fatalf("read %d objects, wrote %d, asked for %d", m.Len(), n, objects+tc.namespaces)
			}
			count := map[string]int{}
			dependents := map[*manifest.Item]int{}
			depth := map[*manifest.Item]int{}
			var depthOf func(it *manifest.Item) int
			depthOf = func(it *manifest.Item) int {
				if d, ok := depth[it]; ok {
					return d
				}
				d := 1
				for _, uid := range it.OwnerUIDs {
					owner, ok := m.ByUID(uid)
					if !ok {
						t.Fatalf("%s %s/%s: owner %s is not in the backup", it.Kind, it.Namespace, it.Name, uid)
					}
					d = max(d, depthOf(owner)+1)
				}
				depth[it] = d
				return d
			}
			var deepest, widest int
			var configMap *manifest.Item
			for _, it := range m.Items() {
				count[it.Resource]++
				for _, uid := range it.OwnerUIDs {
					owner, _ := m.ByUID(uid)
					dependents[owner]++
					widest = max(widest, dependents[owner])
				}
				deepest = max(deepest, depthOf(it))
				if it.Resource == "configmaps" {
					configMap = it
				}
			}
			if count["namespaces"] != tc.namespaces || deepest != tc.depth || widest != tc.widest {
				t.Errorf("%d namespaces, the longest chain %d, the widest owner %d dependents; want %d, %d, %d",
					count["namespaces"], deepest, widest, tc.namespaces, tc.depth, tc.widest)
			}
			if c, s, d := count["configmaps"], count["secrets"], count["deployments"]; max(c, s, d)-min(c, s, d) > tc.namespaces {
				t.Errorf("ConfigMaps, Secrets and Deployments not in turn: %d, %d, %d", c, s, d)
			}
			it := configMap
			body, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(body) < tc.g.Value {
				t.Errorf("%s's body is %d bytes, its value alone %d", it.Name, len(body), tc.g.Value)
			}
		})
	}
}

// resourceOrder is the order the resources' directories first appear in a tarball.
func resourceOrder(t *testing.T, tarball []byte) []string {
	zr, err := gzip.NewReader(bytes.NewReader(tarball))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var order []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return order
		}
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(h.Name, "resources/")
		if !ok {
			continue
		}
		resource, _, _ := strings.Cut(rest, "/")
		if !slices.Contains(order, resource) {
			order = append(order, resource)
		}
	}
}
