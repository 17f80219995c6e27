package modifier

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
)

// Identity is what a rule's conditions but matches judge: the object's group-resource,
// its namespace and name as the backup holds them (before namespace mappings, as
// Velero judges them), and its labels.
type Identity struct {
	GroupResource   schema.GroupResource
	Namespace, Name string
	Labels          labels.Labels // nil: none
}

// Candidate is a rule that applies to an object by its identity; Conditional when it
// also has matches, which only the object's body can answer.
type Candidate struct {
	Rule        int  `json:"rule"`
	Conditional bool `json:"conditional,omitempty"`
}

// Candidates returns the rules that apply to the object id names, as far as its
// identity tells: what a plan shows without reading bodies.
func (m *Modifiers) Candidates(id Identity) []Candidate {
	var out []Candidate
	for i := range m.rules {
		if m.rules[i].holds(id) {
			out = append(out, Candidate{Rule: i, Conditional: len(m.rules[i].matches) > 0})
		}
	}
	return out
}

// RulesFor returns the rules whose groupResource matches gr, whatever else their
// conditions say: the rules that may change an object of gr.
func (m *Modifiers) RulesFor(gr schema.GroupResource) []int {
	var out []int
	for i := range m.rules {
		if m.rules[i].gr.Match(gr.String()) {
			out = append(out, i)
		}
	}
	return out
}

// holds reports whether every condition of r but matches holds for id.
func (r *rule) holds(id Identity) bool {
	if id.Namespace != "" && len(r.namespaces) > 0 {
		in := false
		for _, g := range r.namespaces {
			if g.Match(id.Namespace) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	if !r.gr.Match(id.GroupResource.String()) {
		return false
	}
	if r.name != nil && !r.name.MatchString(id.Name) {
		return false
	}
	if r.selector == nil {
		return true
	}
	if id.Labels == nil {
		return r.selector.Matches(labels.Set(nil))
	}
	return r.selector.Matches(id.Labels)
}

// Apply changes obj by every rule that applies to it, in order, and returns the rules
// applied. gr, namespace and name are the object's in the backup; labels and matches
// are judged on obj as it was given. A rule that fails is a *RuleError, and obj is
// left as the rules before it made it.
func (m *Modifiers) Apply(obj *unstructured.Unstructured, gr schema.GroupResource, namespace, name string) ([]int, error) {
	// Every rule is judged on obj as it came: its labels are a copy, and its JSON is
	// taken before the first patch, when a rule that holds so far has matches to test.
	id := Identity{GroupResource: gr, Namespace: namespace, Name: name, Labels: labels.Set(obj.GetLabels())}
	var hold []int
	tests := false
	for i := range m.rules {
		if m.rules[i].holds(id) {
			hold = append(hold, i)
			tests = tests || len(m.rules[i].matches) > 0
		}
	}
	var origin []byte
	if tests {
		var err error
		if origin, err = obj.MarshalJSON(); err != nil {
			return nil, fmt.Errorf("resource modifiers: %w", err)
		}
	}
	var applied []int
	for _, i := range hold {
		r := &m.rules[i]
		if len(r.matches) > 0 {
			ok, err := test(r.matches, origin)
			if err != nil {
				return applied, &RuleError{Rule: i, Field: "conditions.matches", Err: err}
			}
			if !ok {
				continue
			}
		}
		changed, err := r.apply(obj)
		if err != nil {
			return applied, &RuleError{Rule: i, Err: err}
		}
		if changed {
			applied = append(applied, i)
		}
	}
	return applied, nil
}

// test reports whether the test operations hold for doc; a path that is not there is
// a test that fails.
func test(tests jsonpatch.Patch, doc []byte) (bool, error) {
	_, err := tests.Apply(doc)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jsonpatch.ErrTestFailed), errors.Is(err, jsonpatch.ErrMissing):
		return false, nil
	}
	return false, err
}

// apply patches obj by r; changed is false when a test operation of a JSON patch did
// not hold, which leaves obj as it was.
func (r *rule) apply(obj *unstructured.Unstructured) (changed bool, err error) {
	switch r.kind {
	case jsonPatch:
		doc, err := obj.MarshalJSON()
		if err != nil {
			return false, err
		}
		out, err := r.patch.Apply(doc)
		if errors.Is(err, jsonpatch.ErrTestFailed) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("patches: %w", err)
		}
		return true, obj.UnmarshalJSON(out)
	case mergePatch:
		doc, err := obj.MarshalJSON()
		if err != nil {
			return false, err
		}
		for i, p := range r.merges {
			if doc, err = jsonpatch.MergePatch(doc, p); err != nil {
				return false, fmt.Errorf("mergePatches[%d]: %w", i, err)
			}
		}
		return true, obj.UnmarshalJSON(doc)
	default:
		gvk := obj.GroupVersionKind()
		ref, err := scheme.Scheme.New(gvk)
		if err != nil {
			return false, fmt.Errorf("strategicPatches: %s is not a built-in kind, and only those have a strategic merge schema: use mergePatches", gvk)
		}
		doc := runtime.DeepCopyJSON(obj.Object) // the patch works in place; a failure leaves obj
		for i, p := range r.merges {
			var patch map[string]any
			strict, err := kjson.UnmarshalStrict(p, &patch)
			if err == nil && len(strict) > 0 {
				err = errors.Join(strict...)
			}
			if err != nil {
				return false, fmt.Errorf("strategicPatches[%d]: %w", i, err)
			}
			if doc, err = strategicpatch.StrategicMergeMapPatch(doc, patch, ref); err != nil {
				return false, fmt.Errorf("strategicPatches[%d]: %w", i, err)
			}
		}
		obj.Object = doc
		return true, nil
	}
}

var _ json.Marshaler = (*Modifiers)(nil)
