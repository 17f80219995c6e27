package modifier

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/gobwas/glob"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// Version is the one version of the format.
const Version = "v1"

// Spec is resource modifiers as a user writes them: Velero's ResourceModifiers.
type Spec struct {
	Version string `json:"version"`
	Rules   []Rule `json:"resourceModifierRules"`
}

// Rule is one rule: what it applies to and how it changes it. Exactly one of Patches,
// MergePatches and StrategicPatches is given.
type Rule struct {
	Conditions       Conditions   `json:"conditions"`
	Patches          []JSONPatch  `json:"patches,omitempty"`
	MergePatches     []MergePatch `json:"mergePatches,omitempty"`
	StrategicPatches []MergePatch `json:"strategicPatches,omitempty"`
}

// Conditions say which objects a rule applies to; every condition given must hold.
type Conditions struct {
	// GroupResource is a glob over "resource.group" ("pods" for the core group), "."
	// separating its parts: "*.apps" is every resource of apps.
	GroupResource string `json:"groupResource"`
	// Namespaces are globs; an object in none of them is not matched. Cluster-scoped
	// objects are not held to them.
	Namespaces []string `json:"namespaces,omitempty"`
	// ResourceNameRegex is a regular expression the object's name matches (anywhere in
	// it, unless anchored).
	ResourceNameRegex string                `json:"resourceNameRegex,omitempty"`
	LabelSelector     *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// Matches are values fields of the object hold, each a JSON patch test.
	Matches []Match `json:"matches,omitempty"`
}

// Match says that the field at Path (a JSON pointer) holds Value, read as a JSON
// patch's value is.
type Match struct {
	Path  string `json:"path,omitempty"`
	Value string `json:"value,omitempty"`
}

// JSONPatch is one operation of RFC 6902: add, remove, replace, move, copy or test.
// Value is read as Velero reads it (see the package comment).
type JSONPatch struct {
	Operation string `json:"operation"`
	From      string `json:"from,omitempty"`
	Path      string `json:"path"`
	Value     string `json:"value,omitempty"`
}

// MergePatch is a JSON merge patch (RFC 7386) or a strategic merge patch, in YAML or
// JSON.
type MergePatch struct {
	PatchData string `json:"patchData,omitempty"`
}

// Modifiers are parsed, checked and compiled rules.
type Modifiers struct {
	spec  Spec
	rules []rule
}

// RuleError is a rule that is not valid, or that failed on an object: Field names
// where, as resourceModifierRules[i].field.
type RuleError struct {
	Rule  int
	Field string
	Err   error
}

func (e *RuleError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("resource modifiers: resourceModifierRules[%d]: %v", e.Rule, e.Err)
	}
	return fmt.Sprintf("resource modifiers: resourceModifierRules[%d].%s: %v", e.Rule, e.Field, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

// Parse reads resource modifiers in YAML or JSON, refusing unknown fields, and checks
// and compiles every rule.
func Parse(data []byte) (*Modifiers, error) {
	var spec Spec
	if err := yaml.UnmarshalStrict(data, &spec); err != nil {
		return nil, fmt.Errorf("resource modifiers: %w", err)
	}
	return New(spec)
}

// FromConfigMap reads the resource modifiers that cm holds, as Velero keeps them: in
// its one data key, whatever the key's name.
func FromConfigMap(cm *corev1.ConfigMap) (*Modifiers, error) {
	if len(cm.Data) != 1 {
		return nil, fmt.Errorf("resource modifiers: ConfigMap %s/%s has %d data keys, not one", cm.Namespace, cm.Name, len(cm.Data))
	}
	var data string
	for _, v := range cm.Data {
		data = v
	}
	m, err := Parse([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return m, nil
}

// New checks and compiles spec.
func New(spec Spec) (*Modifiers, error) {
	if !strings.EqualFold(spec.Version, Version) {
		return nil, fmt.Errorf("resource modifiers: version %q: only %q is defined", spec.Version, Version)
	}
	if len(spec.Rules) == 0 {
		return nil, errors.New("resource modifiers: resourceModifierRules: no rule")
	}
	m := &Modifiers{spec: spec, rules: make([]rule, len(spec.Rules))}
	for i, r := range spec.Rules {
		c, err := compile(r)
		if err != nil {
			err.Rule = i
			return nil, err
		}
		m.rules[i] = c
	}
	return m, nil
}

// Spec returns the rules as given.
func (m *Modifiers) Spec() Spec { return m.spec }

// Len returns the number of rules.
func (m *Modifiers) Len() int { return len(m.rules) }

// MarshalJSON writes the rules as given.
func (m *Modifiers) MarshalJSON() ([]byte, error) { return json.Marshal(m.spec) }

// UnmarshalJSON reads rules as Parse does.
func (m *Modifiers) UnmarshalJSON(data []byte) error {
	p, err := Parse(data)
	if err != nil {
		return err
	}
	*m = *p
	return nil
}

// patchKind is the kind of a rule's patches.
type patchKind uint8

const (
	jsonPatch patchKind = iota
	mergePatch
	strategicPatch
)

// rule is a Rule compiled.
type rule struct {
	gr         glob.Glob
	namespaces []glob.Glob // nil: any
	name       *regexp.Regexp
	selector   labels.Selector
	matches    jsonpatch.Patch // test operations
	kind       patchKind
	patch      jsonpatch.Patch // the JSON patch, as one document
	merges     [][]byte        // merge or strategic patches, as JSON
}

func compile(r Rule) (rule, *RuleError) {
	bad := func(field string, err error) (rule, *RuleError) { return rule{}, &RuleError{Field: field, Err: err} }
	var c rule
	var err error
	if r.Conditions.GroupResource == "" {
		return bad("conditions.groupResource", errors.New("empty"))
	}
	if c.gr, err = glob.Compile(r.Conditions.GroupResource, '.'); err != nil {
		return bad("conditions.groupResource", err)
	}
	for i, ns := range r.Conditions.Namespaces {
		g, err := glob.Compile(ns)
		if err != nil {
			return bad(fmt.Sprintf("conditions.namespaces[%d]", i), err)
		}
		c.namespaces = append(c.namespaces, g)
	}
	if r.Conditions.ResourceNameRegex != "" {
		if c.name, err = regexp.Compile(r.Conditions.ResourceNameRegex); err != nil {
			return bad("conditions.resourceNameRegex", err)
		}
	}
	if r.Conditions.LabelSelector != nil {
		if c.selector, err = metav1.LabelSelectorAsSelector(r.Conditions.LabelSelector); err != nil {
			return bad("conditions.labelSelector", err)
		}
	}
	if len(r.Conditions.Matches) > 0 {
		tests := make([]JSONPatch, len(r.Conditions.Matches))
		for i, m := range r.Conditions.Matches {
			if m.Path == "" {
				return bad(fmt.Sprintf("conditions.matches[%d].path", i), errors.New("empty"))
			}
			tests[i] = JSONPatch{Operation: "test", Path: m.Path, Value: m.Value}
		}
		var rerr *RuleError
		if c.matches, rerr = decodeJSONPatch(tests, "conditions.matches"); rerr != nil {
			return rule{}, rerr
		}
	}
	kinds := 0
	for _, n := range []int{len(r.Patches), len(r.MergePatches), len(r.StrategicPatches)} {
		if n > 0 {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		return bad("patches", errors.New("no patch: give patches, mergePatches or strategicPatches"))
	case kinds > 1:
		return bad("patches", errors.New("only one of patches, mergePatches, strategicPatches can be given"))
	case len(r.Patches) > 0:
		c.kind = jsonPatch
		var rerr *RuleError
		if c.patch, rerr = decodeJSONPatch(r.Patches, "patches"); rerr != nil {
			return rule{}, rerr
		}
	default:
		field, patches := "mergePatches", r.MergePatches
		c.kind = mergePatch
		if len(r.StrategicPatches) > 0 {
			c.kind, field, patches = strategicPatch, "strategicPatches", r.StrategicPatches
		}
		for i, p := range patches {
			data, err := yaml.YAMLToJSON([]byte(p.PatchData))
			if err != nil {
				return bad(fmt.Sprintf("%s[%d].patchData", field, i), err)
			}
			var obj map[string]any
			if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
				return bad(fmt.Sprintf("%s[%d].patchData", field, i), errors.New("not an object"))
			}
			c.merges = append(c.merges, data)
		}
	}
	return c, nil
}

// operations are the operations of RFC 6902.
var operations = map[string]bool{"add": true, "remove": true, "replace": true, "move": true, "copy": true, "test": true}

// decodeJSONPatch makes one JSON patch of ops, their values read as Velero reads them.
func decodeJSONPatch(ops []JSONPatch, field string) (jsonpatch.Patch, *RuleError) {
	type op struct {
		Op    string          `json:"op"`
		From  string          `json:"from"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	doc := make([]op, len(ops))
	for i, p := range ops {
		name := strings.ToLower(p.Operation)
		switch {
		case p.Operation == "":
			return nil, &RuleError{Field: fmt.Sprintf("%s[%d].operation", field, i), Err: errors.New("empty")}
		case !operations[name]:
			return nil, &RuleError{Field: fmt.Sprintf("%s[%d].operation", field, i), Err: fmt.Errorf("%q is not add, remove, replace, move, copy or test", p.Operation)}
		case p.Path == "":
			return nil, &RuleError{Field: fmt.Sprintf("%s[%d].path", field, i), Err: errors.New("empty")}
		}
		v, err := Value(p.Value)
		if err != nil {
			return nil, &RuleError{Field: fmt.Sprintf("%s[%d].value", field, i), Err: err}
		}
		doc[i] = op{Op: name, From: p.From, Path: p.Path, Value: v}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, &RuleError{Field: field, Err: err}
	}
	patch, err := jsonpatch.DecodePatch(data)
	if err != nil {
		return nil, &RuleError{Field: field, Err: err}
	}
	return patch, nil
}

// Value reads a JSON patch's value as Velero does: "" and "quoted" values are strings;
// null, true, false, numbers, objects and arrays are JSON; anything else is a string.
// An object, array or number that is not valid JSON is an error (Velero would fail the
// whole patch on each object).
func Value(s string) (json.RawMessage, error) {
	str := func(s string) (json.RawMessage, error) { return json.Marshal(s) }
	switch {
	case s == "":
		return str(s)
	case len(s) >= 2 && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`):
		return str(s[1 : len(s)-1])
	case s == "null":
		return json.RawMessage(s), nil
	case strings.EqualFold(s, "true") || strings.EqualFold(s, "false"):
		return json.RawMessage(strings.ToLower(s)), nil
	}
	_, numErr := strconv.ParseFloat(s, 64)
	if numErr != nil && !strings.HasPrefix(s, "{") && !strings.HasPrefix(s, "[") {
		return str(s)
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("%q reads as a number, object or array but is not valid JSON; quote it (\"...\") for a string", s)
	}
	return json.RawMessage(s), nil
}
