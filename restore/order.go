package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/restoregraph/restoregraph/manifest"
)

// Order is a user's order between kinds, given without Go code: each dependency starts
// the objects of one kind once every object of another that the restore holds is
// healthy (kstatus Current). It is written as Backup for GKE writes a restore order:
//
//	groupKindDependencies:
//	- satisfying: {resourceGroup: cert-manager.io, resourceKind: Certificate}
//	  requiring: {resourceGroup: apps, resourceKind: Deployment}
//
// ParseOrder reads it from a file, LoadOrder from a ConfigMap. The plan shows its
// edges as the restore-order rule's; a dependency that would close a cycle of the
// objects' own edges is left out with a warning, and a cycle among the kinds is an
// *OrderError.
type Order struct {
	Dependencies []KindDependency `json:"groupKindDependencies"`
}

// KindDependency starts the objects of Requiring once those of Satisfying are healthy.
type KindDependency struct {
	Satisfying GroupKind `json:"satisfying"`
	Requiring  GroupKind `json:"requiring"`
}

// GroupKind is a kind as an order names it: resourceGroup "" is the core group.
type GroupKind struct {
	Group string `json:"resourceGroup"`
	Kind  string `json:"resourceKind"`
}

func (gk GroupKind) groupKind() schema.GroupKind {
	return schema.GroupKind{Group: gk.Group, Kind: gk.Kind}
}

func (gk GroupKind) String() string { return gk.groupKind().String() }

// OrderConfigMap is the ConfigMap, in Velero's namespace, from which the controller
// reads the restore order of every Restore it carries out; OrderConfigMapKey the entry
// it reads.
const (
	OrderConfigMap    = "restoregraph-restore-order"
	OrderConfigMapKey = "restore-order.yaml"
)

// ErrOrder is wrapped by an *OrderError.
var ErrOrder = errors.New("invalid restore order")

// OrderError says what is wrong with a restore order: where (the file or ConfigMap,
// the dependency's index) and why.
type OrderError struct {
	Source string
	Index  int // the dependency's, from 0; -1 when the document as a whole is wrong
	Reason string
}

func (e *OrderError) Error() string {
	where := e.Source
	if e.Index >= 0 {
		where += fmt.Sprintf(": groupKindDependencies[%d]", e.Index)
	}
	return fmt.Sprintf("%v: %s: %s", ErrOrder, where, e.Reason)
}

func (e *OrderError) Unwrap() error { return ErrOrder }

// ParseOrder reads an order from r; source names where it came from in errors. Fields
// it does not know, a dependency missing a kind or of a kind on itself, and a cycle
// among the kinds are *OrderErrors.
func ParseOrder(r io.Reader, source string) (*Order, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var o Order
	if err := yaml.UnmarshalStrict(data, &o); err != nil {
		return nil, &OrderError{Source: source, Index: -1, Reason: err.Error()}
	}
	for i, d := range o.Dependencies {
		switch {
		case d.Satisfying.Kind == "" || d.Requiring.Kind == "":
			return nil, &OrderError{Source: source, Index: i, Reason: "satisfying and requiring each need a resourceKind"}
		case d.Satisfying == d.Requiring:
			return nil, &OrderError{Source: source, Index: i, Reason: fmt.Sprintf("%s cannot wait for itself", d.Requiring)}
		}
	}
	if cycle := o.cycle(); cycle != nil {
		names := make([]string, len(cycle))
		for i, gk := range cycle {
			names[i] = gk.String()
		}
		return nil, &OrderError{Source: source, Index: -1, Reason: "the kinds wait for each other: " + strings.Join(names, " → ")}
	}
	return &o, nil
}

// ReadOrderFile reads the order in the file at path.
func ReadOrderFile(path string) (*Order, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseOrder(f, path)
}

// LoadOrder reads the order from the ConfigMap namespace/name, its OrderConfigMapKey
// entry or its only one. A ConfigMap that does not exist means no order: nil.
func LoadOrder(ctx context.Context, cms corev1client.ConfigMapsGetter, namespace, name string) (*Order, error) {
	cm, err := cms.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	source := "ConfigMap " + namespace + "/" + name
	if err != nil {
		return nil, fmt.Errorf("restore order %s: %w", source, err)
	}
	text, ok := cm.Data[OrderConfigMapKey]
	if !ok && len(cm.Data) == 1 {
		for _, v := range cm.Data {
			text, ok = v, true
		}
	}
	if !ok {
		return nil, &OrderError{Source: source, Index: -1, Reason: fmt.Sprintf("no entry %q", OrderConfigMapKey)}
	}
	return ParseOrder(strings.NewReader(text), source)
}

// cycle returns the kinds of a cycle among o's dependencies, the first one again at
// its end, or nil when there is none.
func (o *Order) cycle() []GroupKind {
	next := map[GroupKind][]GroupKind{}
	for _, d := range o.Dependencies {
		next[d.Satisfying] = append(next[d.Satisfying], d.Requiring)
	}
	const (
		unseen = iota
		open
		closed
	)
	state := map[GroupKind]int{}
	var path []GroupKind
	var visit func(GroupKind) []GroupKind
	visit = func(gk GroupKind) []GroupKind {
		state[gk] = open
		path = append(path, gk)
		for _, n := range next[gk] {
			switch state[n] {
			case open:
				at := slices.Index(path, n)
				return append(slices.Clone(path[at:]), n)
			case unseen:
				if c := visit(n); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[gk] = closed
		return nil
	}
	for _, d := range o.Dependencies {
		if state[d.Satisfying] == unseen {
			if c := visit(d.Satisfying); c != nil {
				return c
			}
		}
	}
	return nil
}

// rule returns the plan rule of o's dependencies over the objects the restore makes,
// the objects whose dependents then wait until they are healthy, and a warning for
// each kind o names that the restore does not make.
func (o *Order) rule(m *manifest.Manifest, restored func(*manifest.Item) bool) (*orderRule, map[*manifest.Item]readyGate, []string) {
	byKind := map[schema.GroupKind][]int{}
	for i, it := range m.Items() {
		if restored(it) {
			gk := schema.GroupKind{Group: it.Group, Kind: it.Kind}
			byKind[gk] = append(byKind[gk], i)
		}
	}
	r := &orderRule{name: "restore-order"}
	gates := map[*manifest.Item]readyGate{}
	items := m.Items()
	var warnings []string
	named := map[GroupKind]bool{}
	for _, d := range o.Dependencies {
		before, after := byKind[d.Satisfying.groupKind()], byKind[d.Requiring.groupKind()]
		for _, gk := range []GroupKind{d.Satisfying, d.Requiring} {
			if len(byKind[gk.groupKind()]) == 0 && !named[gk] {
				named[gk] = true
				warnings = append(warnings, fmt.Sprintf("the restore order names %s, which the restore does not make", gk))
			}
		}
		if len(before) == 0 || len(after) == 0 {
			continue
		}
		r.steps = append(r.steps, orderStep{barrier: fmt.Sprintf("%s before %s", d.Satisfying, d.Requiring), before: before, after: after})
		for _, i := range before {
			if _, ok := gates[items[i]]; !ok {
				gates[items[i]] = readyGate{until: "Current", why: fmt.Sprintf("the restore order starts %s after it", d.Requiring)}
			}
		}
	}
	return r, gates, warnings
}
