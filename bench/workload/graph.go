package workload

import (
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/restoregraph/restoregraph/archive"
)

// Graph is a backup's shape as its owners and namespaces make it: what the engine's own
// cost depends on, apart from what the objects are. Its objects are ConfigMaps, Secrets
// and Deployments in turn, with two labels and a value of Value bytes (a ConfigMap's or
// Secret's data, a Deployment's annotation), spread evenly over namespaces of
// PerNamespace objects each (the last may hold fewer).
type Graph struct {
	// Name names the shape in benchmarks and files.
	Name string
	// PerNamespace is how many objects each namespace holds, beside the Namespace.
	PerNamespace int
	// Depth: each object is owned by the one before it in its namespace, in chains of
	// this many objects (1: none owns another). FanOut, when positive, instead makes the
	// first object of each run of FanOut+1 in a namespace the owner of the FanOut after
	// it.
	Depth, FanOut int
	// Value is the size in bytes of each object's value: 40 for small bodies.
	Value int
}

// The shapes the scale benchmarks restore, each at 100k and a million objects (what a
// cluster of that shape would hold is not the point: what the restore's cost does with
// it is).
var (
	// Chains5: namespaces of 10,000 (100 at a million), owner chains of depth 5, small
	// bodies: as a backup of applications with a few levels of ownership.
	Chains5 = Graph{Name: "chains5", PerNamespace: 10_000, Depth: 5, Value: 40}
	// Chains1000: chains of depth 1,000, the longest path the graph may have to walk.
	Chains1000 = Graph{Name: "chains1000", PerNamespace: 10_000, Depth: 1_000, Value: 40}
	// FanOut: one owner of 100,000 dependents.
	FanOut = Graph{Name: "fanout", PerNamespace: 100_001, Depth: 1, FanOut: 100_000, Value: 40}
	// ManyNamespaces: namespaces of 100 objects (10,000 of them at a million).
	ManyNamespaces = Graph{Name: "namespaces100", PerNamespace: 100, Depth: 1, Value: 40}
	// OneNamespace: every object in one namespace.
	OneNamespace = Graph{Name: "namespace1", PerNamespace: 1 << 62, Depth: 1, Value: 40}
	// LargeBodies: values of 64 KiB, in namespaces of 1,000. A million of them would be
	// 64 GB; the benchmarks write fewer.
	LargeBodies = Graph{Name: "large", PerNamespace: 1_000, Depth: 1, Value: 64 << 10}
)

// Graphs are the shapes, in the order the benchmarks run them.
var Graphs = []Graph{Chains5, Chains1000, FanOut, ManyNamespaces, OneNamespace, LargeBodies}

// WriteGraph writes, as a Velero tarball in format 1.1.0 without a manifest, a backup
// of objects objects in shape g, as Velero writes one: resource after resource in the
// order it backs them up (configmaps, namespaces, secrets, then apps' deployments), each
// body under its resource and again under its preferred version. So a dependent often
// comes before its owner (a ConfigMap owned by a Deployment). It streams, making the
// objects once per resource from the same seed, and returns how many objects it wrote,
// Namespaces included.
func WriteGraph(w io.Writer, objects int, seed uint64, g Graph) (int, error) {
	if g.PerNamespace < 1 || g.Depth < 1 || g.FanOut < 0 || g.Value < 0 {
		return 0, fmt.Errorf("workload: graph %+v: PerNamespace and Depth must be positive, FanOut and Value not negative", g)
	}
	aw, err := archive.NewWriter(w, archive.Format11)
	if err != nil {
		return 0, err
	}
	written := 0
	for _, resource := range veleroOrder {
		gw := &graphWriter{appWriter: appWriter{aw: aw, rng: rand.New(rand.NewPCG(seed, 11)), only: resource}, g: g}
		for ns := 0; gw.made < objects; ns++ {
			name := fmt.Sprintf("ns-%05d", ns)
			if err := gw.namespace(name); err != nil {
				return written + gw.written, err
			}
			for i := 0; i < g.PerNamespace && gw.made < objects; i++ {
				if err := gw.object(name, i); err != nil {
					return written + gw.written, err
				}
			}
		}
		written += gw.written
	}
	return written, aw.Close()
}

// veleroOrder is the order Velero's backup takes the resources of WriteGraph in: the
// core group's first, in discovery's order, then apps'.
var veleroOrder = []string{"configmaps", "namespaces", "secrets", "deployments"}

type graphWriter struct {
	appWriter
	g Graph
	// The owner of the next object, when it has one: its kind, name and UID.
	ownerKind, ownerName, ownerUID string
	value                          []byte
}

// kinds are what the objects are, in turn.
var kinds = [3]struct{ apiVersion, kind, resource string }{
	{"v1", "ConfigMap", "configmaps"}, {"v1", "Secret", "secrets"}, {"apps/v1", "Deployment", "deployments"},
}

// object writes the i-th object of namespace ns, owned as g says.
func (gw *graphWriter) object(ns string, i int) error {
	k := kinds[i%len(kinds)]
	name := fmt.Sprintf("%s-%07d", strings.ToLower(k.kind), i)
	uid := gw.uid()
	var owned bool
	if gw.g.FanOut > 0 {
		owned = i%(gw.g.FanOut+1) != 0
	} else {
		owned = i%gw.g.Depth != 0
	}
	extra := fmt.Sprintf(`,"labels":{"app.kubernetes.io/name":%q,"shape":%q}`, name, gw.g.Name)
	if owned {
		apiVersion := "v1"
		if gw.ownerKind == "Deployment" {
			apiVersion = "apps/v1"
		}
		extra += fmt.Sprintf(`,"ownerReferences":[{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q}]`, apiVersion, gw.ownerKind, gw.ownerName, gw.ownerUID)
	}
	value := gw.valueOf()
	var rest string
	switch k.kind {
	case "ConfigMap":
		rest = fmt.Sprintf(`,"data":{"value":%q}`, value)
	case "Secret":
		rest = fmt.Sprintf(`,"type":"Opaque","data":{"value":%q}`, base64.StdEncoding.EncodeToString([]byte(value)))
	case "Deployment":
		extra += fmt.Sprintf(`,"annotations":{"value":%q}`, value)
		rest = fmt.Sprintf(`,"spec":{"replicas":1,"selector":{"matchLabels":{"app.kubernetes.io/name":%q}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":%q}},"spec":{"containers":[{"name":"app","image":"registry.example.com/app:1"}]}}}`, name, name)
	}
	m := gw.meta(ns, name, uid, extra)
	body := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,%s%s}`, k.apiVersion, k.kind, m, rest)
	if gw.g.FanOut == 0 || !owned { // in a chain each object owns the next; a fan's owner all of its run
		gw.ownerKind, gw.ownerName, gw.ownerUID = k.kind, name, uid
	}
	return gw.put(k.apiVersion, k.resource, ns, name, body)
}

// valueOf is an object's value: Value printable bytes, random, so that the bodies
// compress no better than values of that size in real objects would.
func (gw *graphWriter) valueOf() string {
	if cap(gw.value) < gw.g.Value {
		gw.value = make([]byte, gw.g.Value)
	}
	v := gw.value[:gw.g.Value]
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_" // 6 bits each
	for i := 0; i < len(v); {
		for x, j := gw.rng.Uint64(), 0; j < 10 && i < len(v); j, i = j+1, i+1 {
			v[i] = letters[x&63]
			x >>= 6
		}
	}
	return string(v)
}
