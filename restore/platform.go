package restore

import (
	"encoding/json"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/versionselect"
)

// The plan's rules for the objects that serve the API itself, which Disabled.Rules may
// switch off.
const (
	// AdmissionWebhooks restores a Validating- or MutatingWebhookConfiguration after
	// every object of the restore that its webhooks would intercept, and after the
	// workloads behind its Service are Available: created first, a webhook whose
	// backend is not running yet refuses the restore's own objects (failurePolicy
	// Fail), its backend's Pods among them.
	AdmissionWebhooks = "restoregraph.dev/admission-webhooks"
	// APIServices restores an APIService after the workloads behind its Service are
	// Available, and the objects of its group after it is Available.
	APIServices = "restoregraph.dev/api-services"
	// ConversionWebhooks restores the custom resources of a CRD whose versions a
	// webhook converts, when they are not restored at the version it stores, after the
	// workloads behind the webhook's Service are Available. (Version selection prefers
	// the stored version where the backup holds it: then nothing is called.)
	ConversionWebhooks = "restoregraph.dev/conversion-webhooks"
)

var (
	validatingWebhooks = schema.GroupResource{Group: admissionv1.GroupName, Resource: "validatingwebhookconfigurations"}
	mutatingWebhooks   = schema.GroupResource{Group: admissionv1.GroupName, Resource: "mutatingwebhookconfigurations"}
	apiServices        = schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}
	services           = schema.GroupResource{Resource: "services"}
	// workloadResources are what a Service's selector is matched against for its backend.
	workloadResources = []schema.GroupResource{
		{Group: "apps", Resource: "deployments"}, {Group: "apps", Resource: "statefulsets"}, {Group: "apps", Resource: "daemonsets"},
	}
	// notIntercepted are what the API server never sends to admission webhooks: the
	// objects that configure admission itself.
	notIntercepted = []schema.GroupResource{validatingWebhooks, mutatingWebhooks,
		{Group: admissionv1.GroupName, Resource: "validatingadmissionpolicies"},
		{Group: admissionv1.GroupName, Resource: "validatingadmissionpolicybindings"},
		{Group: admissionv1.GroupName, Resource: "mutatingadmissionpolicies"},
		{Group: admissionv1.GroupName, Resource: "mutatingadmissionpolicybindings"},
	}
)

// orderRule is a plan rule whose edges the plan worked out from the objects' bodies:
// each step orders one group of items after another, through a barrier where both are
// more than one.
type orderRule struct {
	name  string
	steps []orderStep
}

// orderStep starts every item of after once every item of before is ready; items are
// manifest indexes.
type orderStep struct {
	barrier       string
	before, after []int
}

func (r *orderRule) Name() string { return r.name }

func (r *orderRule) AddEdges(b *graph.RuleBuilder) {
	for _, s := range r.steps {
		from, to := s.before, s.after
		if len(from) > 1 && len(to) > 1 {
			bar := b.Barrier(s.barrier)
			for _, f := range from {
				b.Edge(f, bar)
			}
			from = []int{bar}
		}
		for _, f := range from {
			for _, t := range to {
				b.Edge(f, t)
			}
		}
	}
}

// readyGate says why an object's dependents wait until it is healthy (Health's
// judgement: kstatus Current; an APIService Available), not only created: until
// names the state ("Available"), why what the dependents need of it.
type readyGate struct{ until, why string }

func (g readyGate) String() string { return "waits until " + g.until + ": " + g.why }

// platform works out the plan's rules for webhooks, APIServices and conversion
// webhooks, reading the bodies of those objects, of the Services they call and of the
// workloads in those Services' namespaces.
type platform struct {
	p        *Plan
	m        *manifest.Manifest
	gates    map[*manifest.Item]readyGate
	warnings []string
	// byNamespace holds the restored workloads of each namespace with their Pod
	// templates' labels, read once a Service of the namespace is asked about.
	byNamespace map[string][]backendWorkload
}

type backendWorkload struct {
	item   *manifest.Item
	labels labels.Set
}

// serviceRef names a Service a webhook or an APIService calls.
type serviceRef struct{ Namespace, Name string }

func (s serviceRef) String() string { return s.Namespace + "/" + s.Name }

func newPlatform(p *Plan) *platform {
	return &platform{p: p, m: p.backup.Manifest(), gates: map[*manifest.Item]readyGate{}, byNamespace: map[string][]backendWorkload{}}
}

func (pl *platform) restored(it *manifest.Item) bool {
	_, out := pl.p.excluded[it]
	return !out
}

func (pl *platform) index(it *manifest.Item) int {
	i, _ := pl.m.Index(it)
	return i
}

// backend returns the index of svc's Service in the restore, and of the restored
// workloads whose Pods its selector picks; ok is false when the restore does not hold
// the Service.
func (pl *platform) backend(svc serviceRef) (service int, backends []backendWorkload, ok bool, err error) {
	it, held := pl.m.Get(manifest.ID{Resource: services.Resource, Namespace: svc.Namespace, Name: svc.Name})
	if !held || !pl.restored(it) {
		return 0, nil, false, nil
	}
	obj, err := body(pl.p.backup, it)
	if err != nil {
		return 0, nil, false, err
	}
	sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector")
	if len(sel) == 0 {
		return pl.index(it), nil, true, nil // its endpoints are someone else's
	}
	ws, err := pl.workloads(svc.Namespace)
	if err != nil {
		return 0, nil, false, err
	}
	selector := labels.SelectorFromSet(sel)
	for _, w := range ws {
		if selector.Matches(w.labels) {
			backends = append(backends, w)
		}
	}
	return pl.index(it), backends, true, nil
}

// workloads returns the restored workloads of namespace ns, reading them once.
func (pl *platform) workloads(ns string) ([]backendWorkload, error) {
	if ws, ok := pl.byNamespace[ns]; ok {
		return ws, nil
	}
	var ws []backendWorkload
	for _, it := range pl.m.Items() {
		if it.Namespace != ns || !slices.Contains(workloadResources, it.GroupResource()) || !pl.restored(it) {
			continue
		}
		obj, err := body(pl.p.backup, it)
		if err != nil {
			return nil, err
		}
		tl, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
		ws = append(ws, backendWorkload{it, tl})
	}
	pl.byNamespace[ns] = ws
	return ws, nil
}

// gate makes the dependents of each backend wait until it is healthy, saying why.
func (pl *platform) gate(backends []backendWorkload, why string) {
	for _, b := range backends {
		if _, ok := pl.gates[b.item]; !ok {
			pl.gates[b.item] = readyGate{until: "Available", why: why}
		}
	}
}

func (pl *platform) warn(format string, args ...any) {
	pl.warnings = append(pl.warnings, fmt.Sprintf(format, args...))
}

// before returns the indexes of the backends, and the Service's.
func (pl *platform) before(backends []backendWorkload, service int) []int {
	out := make([]int, 0, len(backends)+1)
	for _, b := range backends {
		out = append(out, pl.index(b.item))
	}
	return append(out, service)
}

// webhookConfiguration is what the plan reads of a Validating- or
// MutatingWebhookConfiguration, at admissionregistration.k8s.io v1 or v1beta1.
type webhookConfiguration struct {
	Webhooks []struct {
		Name              string                           `json:"name"`
		ClientConfig      admissionv1.WebhookClientConfig  `json:"clientConfig"`
		Rules             []admissionv1.RuleWithOperations `json:"rules"`
		FailurePolicy     *admissionv1.FailurePolicyType   `json:"failurePolicy"`
		NamespaceSelector *metav1.LabelSelector            `json:"namespaceSelector"`
		ObjectSelector    *metav1.LabelSelector            `json:"objectSelector"`
	} `json:"webhooks"`
}

// webhooks is the AdmissionWebhooks rule.
func (pl *platform) webhooks() (*orderRule, error) {
	r := &orderRule{name: "admission-webhooks"}
	for self, it := range pl.m.Items() {
		if gr := it.GroupResource(); (gr != validatingWebhooks && gr != mutatingWebhooks) || !pl.restored(it) {
			continue
		}
		data, err := pl.p.backup.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		if err != nil {
			return nil, err
		}
		var wc webhookConfiguration
		if err := json.Unmarshal(data, &wc); err != nil {
			pl.warn("%s: its webhooks could not be read, and are not ordered: %v", it, err)
			continue
		}
		var intercepted []int
		matchers := make([]func(*manifest.Item) bool, 0, len(wc.Webhooks))
		for _, w := range wc.Webhooks {
			match, err := pl.interceptor(w.Rules, w.NamespaceSelector, w.ObjectSelector)
			if err != nil {
				pl.warn("%s: webhook %s could not be read, and is taken to intercept everything: %v", it, w.Name, err)
				match = func(*manifest.Item) bool { return true }
			}
			matchers = append(matchers, match)
			failClosed := w.FailurePolicy == nil || *w.FailurePolicy == admissionv1.Fail
			s := w.ClientConfig.Service
			if s == nil {
				continue // a URL: served outside the cluster, or by nothing the restore makes
			}
			svc := serviceRef{s.Namespace, s.Name}
			service, backends, held, err := pl.backend(svc)
			if err != nil {
				return nil, err
			}
			if !held {
				if failClosed {
					pl.warn("%s: webhook %s calls Service %s, which the restore does not hold, and fails closed: what it intercepts is refused until the Service has a backend", it, w.Name, svc)
				}
				continue
			}
			r.steps = append(r.steps, orderStep{before: pl.before(backends, service), after: []int{self}})
			pl.gate(backends, fmt.Sprintf("it serves webhook %s of %s (Service %s)", w.Name, it, svc))
			for _, b := range backends {
				pod := &manifest.Item{Type: &manifest.Type{Version: "v1", Kind: "Pod", Resource: "pods"}, Namespace: b.item.Namespace, Labels: manifest.PairsFromMap(b.labels)}
				if failClosed && (match(pod) || match(b.item)) {
					pl.warn("%s: webhook %s intercepts its own backend %s (failurePolicy Fail): restored once the backend is Available; should the backend's Pods be made again while the webhook cannot answer, it refuses them", it, w.Name, b.item)
				}
			}
		}
		for i, other := range pl.m.Items() {
			if other == it || !pl.restored(other) || slices.Contains(notIntercepted, other.GroupResource()) {
				continue
			}
			if slices.ContainsFunc(matchers, func(m func(*manifest.Item) bool) bool { return m(other) }) {
				intercepted = append(intercepted, i)
			}
		}
		r.steps = append(r.steps, orderStep{barrier: "intercepted by " + it.String(), before: intercepted, after: []int{self}})
	}
	return r, nil
}

// interceptor returns whether a webhook with rules and selectors would be called for
// an item's create or update. The rules match by group and resource alone, as the
// default matchPolicy Equivalent does; a namespace selector is matched against the
// backup's Namespace object, and matches where the backup does not hold it.
func (pl *platform) interceptor(rules []admissionv1.RuleWithOperations, nsSel, objSel *metav1.LabelSelector) (func(*manifest.Item) bool, error) {
	ns, err := selectorOf(nsSel)
	if err != nil {
		return nil, fmt.Errorf("namespaceSelector: %w", err)
	}
	obj, err := selectorOf(objSel)
	if err != nil {
		return nil, fmt.Errorf("objectSelector: %w", err)
	}
	return func(it *manifest.Item) bool {
		if !slices.ContainsFunc(rules, func(r admissionv1.RuleWithOperations) bool { return ruleMatches(r, it) }) {
			return false
		}
		if obj != nil && !obj.Matches(pairsSet(it.Labels)) {
			return false
		}
		if ns == nil {
			return true
		}
		name := it.Namespace
		if it.Namespace == "" {
			if it.Group != "" || it.Resource != "namespaces" {
				return true // the namespace selector does not apply to cluster-scoped objects
			}
			name = it.Name
		}
		n, held := pl.m.Get(manifest.ID{Resource: "namespaces", Name: name})
		return !held || ns.Matches(pairsSet(n.Labels))
	}, nil
}

func selectorOf(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil || sel.Empty() {
		return nil, err
	}
	return sel, nil
}

func pairsSet(ps manifest.Pairs) labels.Set {
	out := make(labels.Set, len(ps))
	for _, p := range ps {
		out[p.Key] = p.Value
	}
	return out
}

// ruleMatches reports whether r covers creating or updating it.
func ruleMatches(r admissionv1.RuleWithOperations, it *manifest.Item) bool {
	ops := slices.ContainsFunc(r.Operations, func(o admissionv1.OperationType) bool {
		return o == admissionv1.OperationAll || o == admissionv1.Create || o == admissionv1.Update
	})
	if !ops || !slices.ContainsFunc(r.APIGroups, func(g string) bool { return g == "*" || g == it.Group }) {
		return false
	}
	if !slices.ContainsFunc(r.Resources, func(res string) bool {
		return res == "*" || res == "*/*" || res == it.Resource || res == it.Resource+"/*"
	}) {
		return false
	}
	switch {
	case r.Scope == nil || *r.Scope == admissionv1.AllScopes:
		return true
	case *r.Scope == admissionv1.NamespacedScope:
		return it.Namespace != ""
	}
	return it.Namespace == ""
}

// apiService is what the plan reads of an APIService.
type apiService struct {
	Spec struct {
		Service *struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"service"`
		Group   string `json:"group"`
		Version string `json:"version"`
	} `json:"spec"`
}

// apiServices is the APIServices rule.
func (pl *platform) apiServices() (*orderRule, error) {
	r := &orderRule{name: "api-services"}
	for self, it := range pl.m.Items() {
		if it.GroupResource() != apiServices || !pl.restored(it) {
			continue
		}
		data, err := pl.p.backup.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		if err != nil {
			return nil, err
		}
		var as apiService
		if err := json.Unmarshal(data, &as); err != nil {
			pl.warn("%s could not be read, and is not ordered: %v", it, err)
			continue
		}
		if as.Spec.Service == nil {
			continue // served by the API server itself
		}
		svc := serviceRef{as.Spec.Service.Namespace, as.Spec.Service.Name}
		service, backends, held, err := pl.backend(svc)
		if err != nil {
			return nil, err
		}
		if held {
			r.steps = append(r.steps, orderStep{before: pl.before(backends, service), after: []int{self}})
			pl.gate(backends, fmt.Sprintf("it serves %s (Service %s)", it, svc))
		}
		var served []int
		for i, other := range pl.m.Items() {
			if other.Group == as.Spec.Group && other.Version == as.Spec.Version && pl.restored(other) {
				served = append(served, i)
			}
		}
		if len(served) == 0 {
			continue
		}
		if !held {
			pl.warn("%s: its Service %s is not in the restore: the %d object(s) of %s/%s wait until something else serves it", it, svc, len(served), as.Spec.Group, as.Spec.Version)
		}
		r.steps = append(r.steps, orderStep{barrier: "served by " + it.String(), before: []int{self}, after: served})
		pl.gates[it] = readyGate{until: "Available", why: fmt.Sprintf("it serves %d object(s) of %s/%s", len(served), as.Spec.Group, as.Spec.Version)}
	}
	return r, nil
}

// conversions is the ConversionWebhooks rule.
func (pl *platform) conversions() (*orderRule, error) {
	r := &orderRule{name: "conversion-webhooks"}
	var crs map[schema.GroupResource][]int
	for _, it := range pl.m.Items() {
		if it.GroupResource() != manifest.CRDGroupResource || !pl.restored(it) {
			continue
		}
		data, err := pl.p.backup.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		if err != nil {
			return nil, err
		}
		crd, err := versionselect.DecodeCRD(data)
		if err != nil {
			continue // version selection says why
		}
		stored := versionselect.WebhookStorage(crd)
		if stored == "" {
			continue
		}
		gr := versionselect.CRDGroupResource(crd)
		c, ok := pl.p.versions.For(gr)
		if !ok || c.Version == stored || c.Rule == versionselect.RuleNotServed {
			continue
		}
		if crs == nil {
			crs = map[schema.GroupResource][]int{}
			for i, o := range pl.m.Items() {
				if pl.restored(o) && o.Group != "" {
					crs[o.GroupResource()] = append(crs[o.GroupResource()], i)
				}
			}
		}
		objects := crs[gr]
		if len(objects) == 0 {
			continue
		}
		conv := crd.Spec.Conversion
		if conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
			continue // a URL: served outside the cluster
		}
		s := conv.Webhook.ClientConfig.Service
		svc := serviceRef{s.Namespace, s.Name}
		service, backends, held, err := pl.backend(svc)
		if err != nil {
			return nil, err
		}
		if !held {
			pl.warn("%s: its %d object(s) are restored at %s, not at %s, which it stores, and its conversion webhook's Service %s is not in the restore: they are refused until something serves it",
				it, len(objects), c.Version, stored, svc)
			continue
		}
		r.steps = append(r.steps, orderStep{barrier: "converted by " + svc.String(), before: pl.before(backends, service), after: objects})
		pl.gate(backends, fmt.Sprintf("it converts the %s restored at %s (Service %s)", gr, c.Version, svc))
	}
	return r, nil
}

// platformRules returns the rules for webhooks, APIServices and conversion webhooks
// that sel does not switch off, with the objects whose dependents wait until they are
// healthy, and the plan's warnings about what the restore cannot order.
func (p *Plan) platformRules() ([]graph.Rule, map[*manifest.Item]readyGate, []string, error) {
	pl := newPlatform(p)
	var rules []graph.Rule
	for _, r := range []struct {
		name Rule
		make func() (*orderRule, error)
	}{{AdmissionWebhooks, pl.webhooks}, {APIServices, pl.apiServices}, {ConversionWebhooks, pl.conversions}} {
		if p.sel.Disabled.Rule(r.name) {
			continue
		}
		rule, err := r.make()
		if err != nil {
			return nil, nil, nil, err
		}
		if len(rule.steps) > 0 {
			rules = append(rules, rule)
		}
	}
	return rules, pl.gates, pl.warnings, nil
}
