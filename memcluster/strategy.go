package memcluster

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What the real API server does on create for the kinds a restore meets, beyond
// storing them: Services get a cluster IP from the Service range and node ports from
// the node port range, and a Job's selector is generated from its UID.

var (
	servicesGR = schema.GroupResource{Resource: "services"}
	jobsGR     = schema.GroupResource{Group: "batch", Resource: "jobs"}
	podsGR     = schema.GroupResource{Resource: "pods"}
)

// podUpdatable are the fields of a Pod's spec an update may change, as kube-apiserver's
// Pod validation has them (tolerations by additions, the grace period from a negative
// value, and scheduling gates by removal; this server takes any change of them).
var podUpdatable = []string{"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates"}

// podUpdateForbidden refuses, as kube-apiserver does, an update of a Pod whose spec
// changes anything but what podUpdatable and the containers' images name: the node it
// is bound to among them.
func podUpdateForbidden(name string, old, obj object) error {
	masked := func(o object) map[string]any {
		spec, _ := o["spec"].(map[string]any)
		m := maps.Clone(spec)
		for _, f := range podUpdatable {
			delete(m, f)
		}
		for _, list := range []string{"containers", "initContainers"} {
			cs, _ := m[list].([]any)
			out := make([]any, len(cs))
			for i, c := range cs {
				cm, _ := c.(map[string]any)
				cm = maps.Clone(cm)
				delete(cm, "image")
				out[i] = cm
			}
			if cs != nil {
				m[list] = out
			}
		}
		return m
	}
	if reflect.DeepEqual(masked(old), masked(obj)) {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, field.ErrorList{field.Forbidden(field.NewPath("spec"),
		"pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"+
			"`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")})
}

// Node ports, as kube-apiserver's default --service-node-port-range.
const (
	nodePortFirst = 30000
	nodePortLast  = 32767
)

// allocations are the cluster IPs and node ports in use, as bitmaps of the two ranges
// (kube-apiserver's allocators are bitmaps too), and what each Service holds, to free
// when it is deleted: for a hundred thousand Services a few bytes an address, not a map
// entry keyed by the Service.
type allocations struct {
	cidr      netip.Prefix
	base      uint32                // the range's first address, its last four bytes
	size      uint32                // the number of addresses in the range
	ips       bitmap                // by offset in the range
	nodePorts bitmap                // by port - nodePortFirst
	held      map[[2]string]holding // by Service namespace and name
	last      int64                 // the offset allocated last: the next search starts after it; -1 before the first
}

// holding is what one Service holds.
type holding struct {
	ip    int32 // its address's offset in the range; -1 for none
	ports []int64
}

// maxServiceHostBits is kube-apiserver's bound on the Service range: 20 bits of host
// (a /12 of IPv4, a /108 of IPv6).
const maxServiceHostBits = 20

func newAllocations(cidr string) (*allocations, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("memcluster: ServiceCIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits > maxServiceHostBits {
		family := 6
		if p.Addr().Is4() {
			family = 4
		}
		return nil, fmt.Errorf("memcluster: ServiceCIDR %q is too large: a Service range has at most %d bits of host, as kube-apiserver's (a /%d of IPv%d)",
			cidr, maxServiceHostBits, p.Addr().BitLen()-maxServiceHostBits, family)
	}
	size := uint32(1) << hostBits
	return &allocations{cidr: p, base: low32(p.Addr()), size: size, ips: newBitmap(int(size)),
		nodePorts: newBitmap(nodePortLast - nodePortFirst + 1), held: map[[2]string]holding{}, last: -1}, nil
}

// low32 returns the last four bytes of ip.
func low32(ip netip.Addr) uint32 {
	b := ip.As16()
	return binary.BigEndian.Uint32(b[12:])
}

// offset returns ip's offset in the range, which contains it.
func (a *allocations) offset(ip netip.Addr) uint32 { return low32(ip) - a.base }

// addr returns the address at offset off of the range: the host bits are within the
// last four bytes, which the range's first address has at zero.
func (a *allocations) addr(off uint32) netip.Addr {
	b := a.cidr.Addr().As16()
	binary.BigEndian.PutUint32(b[12:], a.base+off)
	ip := netip.AddrFrom16(b)
	if a.cidr.Addr().Is4() {
		ip = ip.Unmap()
	}
	return ip
}

// admit applies the create-time strategy of req's kind to obj. The caller holds s.mu.
func (s *Server) admit(req *request, k key, obj object) error {
	switch req.rt.gr {
	case servicesGR:
		return s.alloc.service(k, obj)
	case jobsGR:
		return generateJobSelector(obj)
	}
	return nil
}

// admitChanges reports whether admit may change an object of gr: one that it does not
// change can be encoded before it is admitted.
func admitChanges(gr schema.GroupResource) bool { return gr == servicesGR || gr == jobsGR }

// service allocates what obj asks for, or refuses it as the real server does.
func (a *allocations) service(k key, obj object) error {
	// obj is changed only once it is accepted, and below its top level only in copies: a
	// client in this process (Server.Create) may send it again, and may share its spec.
	spec, _ := obj["spec"].(map[string]any)
	typ, _ := spec["type"].(string)
	if typ == "" {
		typ = "ClusterIP"
	}
	var errs field.ErrorList
	var ip netip.Addr
	var ports []int64
	var given []int // the index in spec.ports of the port that ports[i] is given to, -1 when it asked for it
	if typ != "ExternalName" {
		requested, _ := spec["clusterIP"].(string)
		switch {
		case requested == "None": // headless: clusterIPs set below
		case requested == "":
			if ip = a.nextIP(); !ip.IsValid() {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs"), []string{}, "range is full"))
			}
		default:
			var err error
			if ip, err = netip.ParseAddr(requested); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs"), []string{requested}, "must be a valid IP address"))
			} else if reason := a.takenIP(ip); reason != "" {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs"), []string{requested},
					fmt.Sprintf("failed to allocate IP %s: %s", requested, reason)))
			}
		}
	}
	if typ == "NodePort" || typ == "LoadBalancer" {
		list, _ := spec["ports"].([]any)
		taken := map[int64]bool{}
		for i, p := range list {
			pm, _ := p.(map[string]any)
			if pm == nil {
				continue
			}
			n, _ := toInt64(pm["nodePort"])
			path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			fill := -1
			switch {
			case n == 0:
				if n = a.nextNodePort(taken); n == 0 {
					errs = append(errs, field.Invalid(path, n, "range is full"))
					continue
				}
				fill = i
			case n < nodePortFirst || n > nodePortLast:
				errs = append(errs, field.Invalid(path, n, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", nodePortFirst, nodePortLast)))
				continue
			case a.nodePorts.has(int(n-nodePortFirst)) || taken[n]:
				errs = append(errs, field.Invalid(path, n, "provided port is already allocated"))
				continue
			}
			taken[n] = true
			ports, given = append(ports, n), append(given, fill)
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, k.name, errs)
	}
	spec = maps.Clone(spec)
	if spec == nil {
		spec = map[string]any{}
	}
	obj["spec"] = spec
	spec["type"] = typ
	if requested, _ := spec["clusterIP"].(string); typ != "ExternalName" && requested == "None" {
		spec["clusterIPs"] = []any{"None"}
	}
	held := holding{ip: -1, ports: ports}
	if ip.IsValid() {
		held.ip = int32(a.offset(ip))
		a.ips.set(int(held.ip), true)
		spec["clusterIP"], spec["clusterIPs"] = ip.String(), []any{ip.String()}
	}
	var list []any
	for i, n := range ports {
		a.nodePorts.set(int(n-nodePortFirst), true)
		if at := given[i]; at >= 0 {
			if list == nil {
				list = slices.Clone(spec["ports"].([]any))
				spec["ports"] = list
			}
			pm := maps.Clone(list[at].(map[string]any))
			pm["nodePort"] = n
			list[at] = pm
		}
	}
	if ip.IsValid() || len(ports) > 0 {
		a.held[[2]string{k.namespace, k.name}] = held
	}
	return nil
}

// takenIP says why ip cannot be allocated; "" when it can.
func (a *allocations) takenIP(ip netip.Addr) string {
	switch {
	case !a.cidr.Contains(ip):
		return "the provided network does not match the current range"
	case a.ips.has(int(a.offset(ip))):
		return "provided IP is already allocated"
	}
	return ""
}

// nextIP returns the first free address of the range after the one allocated last,
// wrapping around, the network and broadcast addresses excluded, as kube-apiserver's
// allocator walks its bitmap; the zero Addr when none is left. A restore of a hundred
// thousand Services thus takes each in constant time, not after all those before it.
func (a *allocations) nextIP() netip.Addr {
	if a.size < 3 {
		return netip.Addr{}
	}
	first, last := 1, int(a.size)-2 // the usable offsets
	start := first
	if a.last >= int64(first) && a.last < int64(last) {
		start = int(a.last) + 1
	}
	off, ok := a.ips.nextClear(start, last)
	if !ok {
		off, ok = a.ips.nextClear(first, start-1)
	}
	if !ok {
		return netip.Addr{}
	}
	a.last = int64(off)
	return a.addr(uint32(off))
}

func (a *allocations) nextNodePort(taken map[int64]bool) int64 {
	for n := int64(nodePortFirst); n <= nodePortLast; n++ {
		if !a.nodePorts.has(int(n-nodePortFirst)) && !taken[n] {
			return n
		}
	}
	return 0
}

// release frees what the deleted Service k held.
func (a *allocations) release(k key) {
	hk := [2]string{k.namespace, k.name}
	h, ok := a.held[hk]
	if !ok {
		return
	}
	if h.ip >= 0 {
		a.ips.set(int(h.ip), false)
	}
	for _, n := range h.ports {
		a.nodePorts.set(int(n-nodePortFirst), false)
	}
	delete(a.held, hk)
}

// bitmap is a set of the integers below its length.
type bitmap []uint64

func newBitmap(n int) bitmap { return make(bitmap, (n+63)/64) }

func (b bitmap) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (b bitmap) set(i int, on bool) {
	if on {
		b[i/64] |= 1 << (i % 64)
	} else {
		b[i/64] &^= 1 << (i % 64)
	}
}

// nextClear returns the first integer from lo to hi, both included, not in b.
func (b bitmap) nextClear(lo, hi int) (int, bool) {
	for i := lo; i <= hi; {
		if i%64 == 0 && b[i/64] == ^uint64(0) {
			i += 64 // a full word
			continue
		}
		if !b.has(i) {
			return i, true
		}
		i++
	}
	return 0, false
}

func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case int:
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

// Labels the Job controller's selector is made of.
const (
	jobUIDLabel       = "batch.kubernetes.io/controller-uid"
	legacyJobUIDLabel = "controller-uid"
	jobNameLabel      = "batch.kubernetes.io/job-name"
	legacyJobName     = "job-name"
)

// generateJobSelector does what the Job strategy does on create: a Job without
// spec.manualSelector gets a selector on its own UID, and labels to match on its
// template (and on itself, when it has none). A selector or controller-uid label from
// elsewhere is refused.
func generateJobSelector(obj object) error {
	md := meta(obj)
	uid, _ := md["uid"].(string)
	name, _ := md["name"].(string)
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	if manual, _ := spec["manualSelector"].(bool); manual {
		return nil
	}
	// Nothing is changed until the Job is accepted, and below its top level only in
	// copies: a client in this process (Server.Create) may send it again, and may share
	// its spec.
	tmpl, _ := spec["template"].(map[string]any)
	tmd, _ := tmpl["metadata"].(map[string]any)
	labels, _ := tmd["labels"].(map[string]any)
	var errs field.ErrorList
	for _, l := range []string{legacyJobUIDLabel, jobUIDLabel} {
		if v, ok := labels[l].(string); ok && v != uid {
			errs = append(errs, field.Invalid(field.NewPath("spec", "template", "metadata", "labels").Key(l), labels, fmt.Sprintf("must be '%s'", uid)))
		}
	}
	if sel, ok := spec["selector"]; ok && sel != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), sel, "`selector` not auto-generated"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, name, errs)
	}
	// Copies of what is changed, each put into a copy of the map that holds it.
	spec, tmpl, tmd, labels = maps.Clone(spec), maps.Clone(tmpl), maps.Clone(tmd), maps.Clone(labels)
	if tmpl == nil {
		tmpl = map[string]any{}
	}
	if tmd == nil {
		tmd = map[string]any{}
	}
	if labels == nil {
		labels = map[string]any{}
	}
	obj["spec"], spec["template"], tmpl["metadata"], tmd["labels"] = spec, tmpl, tmd, labels
	spec["selector"] = map[string]any{"matchLabels": map[string]any{jobUIDLabel: uid}}
	for l, v := range map[string]string{legacyJobUIDLabel: uid, jobUIDLabel: uid, legacyJobName: name, jobNameLabel: name} {
		labels[l] = v
	}
	if own, _ := md["labels"].(map[string]any); len(own) == 0 {
		copied := map[string]any{}
		for k, v := range labels {
			copied[k] = v
		}
		md["labels"] = copied
	}
	return nil
}
