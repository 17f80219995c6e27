package readiness

import (
	"fmt"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Result is what a probe says of an object.
type Result struct {
	Ready bool
	// Failed means the object will not become ready without a change (kstatus Failed).
	Failed bool
	Reason string
	// Probe names the probe that decided; Policy is set when the kind had no probe of
	// its own and the registry's policy for unknown kinds decided.
	Probe  string
	Policy Policy
}

// Probe says whether an object, as it now is, is ready. It keeps nothing of obj once it
// has answered: a restore gives the maps of a restored object to the objects decoded
// after it.
type Probe interface {
	Probe(obj *unstructured.Unstructured) Result
}

// ProbeFunc adapts a function to Probe.
type ProbeFunc func(obj *unstructured.Unstructured) Result

// Probe calls f.
func (f ProbeFunc) Probe(obj *unstructured.Unstructured) Result { return f(obj) }

// Exists is ready as soon as the object exists.
var Exists Probe = exists{}

type exists struct{}

func (exists) Probe(*unstructured.Unstructured) Result {
	return Result{Ready: true, Reason: "exists", Probe: "Exists"}
}

// condition returns the status and message of the condition of type t.
func condition(obj *unstructured.Unstructured, t string) (status, message string, found bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != t {
			continue
		}
		s, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		return s, msg, true
	}
	return "", "", false
}

// CRD is ready when Established and NamesAccepted are True: until then the API server
// does not serve its custom resources.
var CRD = ProbeFunc(func(obj *unstructured.Unstructured) Result {
	for _, t := range []apiextv1.CustomResourceDefinitionConditionType{apiextv1.NamesAccepted, apiextv1.Established} {
		s, msg, _ := condition(obj, string(t))
		if s != "True" {
			return Result{Reason: fmt.Sprintf("condition %s is %q %s", t, s, msg), Probe: "CustomResourceDefinition"}
		}
	}
	return Result{Ready: true, Reason: "Established and NamesAccepted", Probe: "CustomResourceDefinition"}
})

// Namespace is ready when its phase is Active; a Terminating namespace has failed, for
// nothing can be created in it.
var Namespace = ProbeFunc(func(obj *unstructured.Unstructured) Result {
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	switch phase {
	case "Active":
		return Result{Ready: true, Reason: "Active", Probe: "Namespace"}
	case "Terminating":
		return Result{Failed: true, Reason: "Terminating", Probe: "Namespace"}
	}
	return Result{Reason: fmt.Sprintf("phase is %q", phase), Probe: "Namespace"}
})

// ClaimBound judges a PersistentVolumeClaim by its binding: ready once Bound, failed
// when Lost (the volume it was bound to is gone), not ready while Pending. A restore
// holds a claim's dependents with it only where nothing it holds back binds the claim
// (a claim whose class binds Immediately, or that names its volume).
var ClaimBound = ProbeFunc(func(obj *unstructured.Unstructured) Result {
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	switch phase {
	case "Bound":
		return Result{Ready: true, Reason: "Bound", Probe: "ClaimBound"}
	case "Lost":
		return Result{Failed: true, Reason: "Lost: its volume is gone", Probe: "ClaimBound"}
	case "":
		phase = "Pending"
	}
	return Result{Reason: "phase is " + phase, Probe: "ClaimBound"}
})

// KStatus computes the object's status with cli-utils' kstatus: Current is ready,
// Failed has failed, anything else is not ready yet.
var KStatus = ProbeFunc(func(obj *unstructured.Unstructured) Result {
	res, err := status.Compute(obj)
	if err != nil {
		return Result{Reason: "kstatus: " + err.Error(), Probe: "KStatus"}
	}
	r := Result{Reason: fmt.Sprintf("%s: %s", res.Status, res.Message), Probe: "KStatus"}
	switch res.Status {
	case status.CurrentStatus:
		r.Ready = true
	case status.FailedStatus:
		r.Failed = true
	}
	return r
})

// ReadyCondition is ready when the object has a Ready condition that is True.
var ReadyCondition = ProbeFunc(func(obj *unstructured.Unstructured) Result {
	s, msg, found := condition(obj, "Ready")
	switch {
	case !found:
		return Result{Reason: "no Ready condition", Probe: "ReadyCondition"}
	case s == "True":
		return Result{Ready: true, Reason: "Ready", Probe: "ReadyCondition"}
	}
	return Result{Reason: fmt.Sprintf("Ready is %q %s", s, msg), Probe: "ReadyCondition"}
})

// APIService is ready when its Available condition is True: until then the API server
// does not serve the APIService's group and version.
var APIService = ProbeFunc(func(obj *unstructured.Unstructured) Result {
	s, msg, _ := condition(obj, "Available")
	if s != "True" {
		return Result{Reason: fmt.Sprintf("condition Available is %q %s", s, msg), Probe: "APIService"}
	}
	return Result{Ready: true, Reason: "Available", Probe: "APIService"}
})

// Policy says how kinds with no registered probe are judged.
type Policy string

const (
	// ReadyOnCreate: an object of an unknown kind is ready once created.
	ReadyOnCreate Policy = "ReadyOnCreate"
	// RequireSignal: an object of an unknown kind is ready only with a Ready condition
	// that is True.
	RequireSignal Policy = "RequireSignal"
	// Healthy: every object is judged by kstatus (Current is ready), as Health does.
	Healthy Policy = "KStatus"
)

// Registry maps group-kinds to probes. Build it with NewRegistry.
type Registry struct {
	probes  map[schema.GroupKind]Probe
	Unknown Policy
}

// NewRegistry returns the gates a restore waits for before it starts an object's
// dependents, with policy for unknown kinds (ReadyOnCreate when empty). A gate is what a
// dependent needs: a CRD established (its resources are served), a Namespace active
// (objects can be made in it). Every built-in kind is gated on existing alone: its
// dependents need its UID, not its health. A Deployment is available, a Pod running, a
// claim bound only once the very objects behind them exist, so gating on health
// would wait on itself; Health judges that, at the end, when asked.
func NewRegistry(policy Policy) *Registry {
	if policy == "" {
		policy = ReadyOnCreate
	}
	r := &Registry{probes: map[schema.GroupKind]Probe{}, Unknown: policy}
	r.Register(schema.GroupKind{Group: apiextv1.GroupName, Kind: "CustomResourceDefinition"}, CRD)
	r.Register(schema.GroupKind{Kind: "Namespace"}, Namespace)
	for _, gk := range builtinKinds {
		r.Register(gk, Exists)
	}
	return r
}

// NewHealth returns the registry that judges health: kstatus for every kind (Current
// is healthy, Failed has failed), what helm --wait and kapp wait for; an APIService
// Available, which kstatus does not read.
func NewHealth() *Registry {
	r := &Registry{probes: map[schema.GroupKind]Probe{}, Unknown: Healthy}
	r.Register(schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}, APIService)
	return r
}

// builtinKinds are the kinds Kubernetes serves itself, but for CRDs and Namespaces.
var builtinKinds = []schema.GroupKind{
	{Kind: "ConfigMap"}, {Kind: "Secret"}, {Kind: "ServiceAccount"}, {Kind: "Service"}, {Kind: "Endpoints"},
	{Kind: "Pod"}, {Kind: "PodTemplate"}, {Kind: "ReplicationController"}, {Kind: "PersistentVolumeClaim"},
	{Kind: "PersistentVolume"}, {Kind: "LimitRange"}, {Kind: "ResourceQuota"},
	{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"},
	{Group: "apps", Kind: "ReplicaSet"}, {Group: "apps", Kind: "ControllerRevision"},
	{Group: "batch", Kind: "Job"}, {Group: "batch", Kind: "CronJob"},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}, {Group: "policy", Kind: "PodDisruptionBudget"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}, {Group: "networking.k8s.io", Kind: "Ingress"},
	{Group: "networking.k8s.io", Kind: "IngressClass"}, {Group: "discovery.k8s.io", Kind: "EndpointSlice"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}, {Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	{Group: "storage.k8s.io", Kind: "StorageClass"}, {Group: "scheduling.k8s.io", Kind: "PriorityClass"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
}

// Register sets the probe for gk, replacing any other.
func (r *Registry) Register(gk schema.GroupKind, p Probe) { r.probes[gk] = p }

// Known reports whether gk has a probe of its own.
func (r *Registry) Known(gk schema.GroupKind) bool {
	_, ok := r.probes[gk]
	return ok
}

// JudgesByExistence reports whether objects of gk are ready as soon as they exist: their
// probe, or the policy for unknown kinds when gk has none, reads nothing of them.
func (r *Registry) JudgesByExistence(gk schema.GroupKind) bool {
	if p, ok := r.probes[gk]; ok {
		return p == Exists
	}
	return r.Unknown != Healthy && r.Unknown != RequireSignal
}

// Check probes obj with its kind's probe, or by the policy for unknown kinds.
func (r *Registry) Check(obj *unstructured.Unstructured) Result {
	gk := obj.GroupVersionKind().GroupKind()
	if p, ok := r.probes[gk]; ok {
		return p.Probe(obj)
	}
	var res Result
	switch r.Unknown {
	case Healthy:
		return KStatus.Probe(obj)
	case RequireSignal:
		res = ReadyCondition.Probe(obj)
	default:
		res = Exists.Probe(obj)
	}
	res.Policy = r.Unknown
	res.Reason = fmt.Sprintf("no probe for %s, policy %s: %s", gk, r.Unknown, res.Reason)
	return res
}
