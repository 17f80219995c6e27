package admission

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/restoregraph/restoregraph/manifest"
)

// Cluster admits operations across processes and machines, through the cluster's own
// API server: no other store. Each operation is a coordination.k8s.io Lease that its
// holder renews, with what it touches beside it: a coarse summary (namespaces and
// group-resources) in an annotation, and its identities as sorted 64-bit hashes in
// ConfigMaps the Lease owns, split to stay under the API server's object size limit.
//
// First come, first served: an operation makes its Lease, then takes a ticket from a
// counter ConfigMap, updated with optimistic concurrency (resourceVersion), and writes
// it on its Lease. It waits for every live operation with an earlier ticket that
// conflicts with it, and for every live one that has no ticket yet (it may be earlier).
// So of two overlapping operations, whichever lists the other's Lease ticketed and
// earlier waits; neither can miss the other, for each made its Lease before its ticket.
// A holder that stops renewing (a crashed replica) lets its Lease expire after
// LeaseDuration; expired Leases are ignored, and removed by whoever sees them. Holders
// are assumed to keep time within a fraction of LeaseDuration of each other.
type Cluster struct {
	Client kubernetes.Interface
	// Namespace holds the Leases and ConfigMaps; made when missing. Default
	// "restoregraph-admission".
	Namespace string
	// Holder names this process in the Leases; default host name and process ID.
	Holder string
	// LeaseDuration is how long a Lease lives without renewal; default 30s. It is
	// renewed every third of it.
	LeaseDuration time.Duration
	// Poll is how often a waiting operation looks again; default 500ms.
	Poll  time.Duration
	Clock clock.WithTicker

	keys      sync.Map // Lease UID -> footprint: an operation's keys never change
	setup     sync.Once
	namespace sync.Once
	nsErr     error
}

var (
	_ Admitter = (*Cluster)(nil)
	_ Idler    = (*Cluster)(nil)
)

const (
	leaseLabel      = "restoregraph.dev/admission"
	annKind         = "restoregraph.dev/kind"
	annTicket       = "restoregraph.dev/ticket"
	annAdmitted     = "restoregraph.dev/admitted"
	annCoarse       = "restoregraph.dev/coarse"
	annChunks       = "restoregraph.dev/chunks"
	ticketsName     = "restoregraph-admission-tickets"
	keysPerChunk    = 80_000 // 9 bytes each: 720 KB, about 960 KB in JSON, under etcd's 1.5 MB
	maxCoarseLength = 200_000
)

// defaults fills the fields left zero, once: a Cluster admits from many goroutines.
func (c *Cluster) defaults() { c.setup.Do(c.fillDefaults) }

func (c *Cluster) fillDefaults() {
	if c.Namespace == "" {
		c.Namespace = "restoregraph-admission"
	}
	if c.Holder == "" {
		host, _ := os.Hostname()
		c.Holder = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = 30 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 500 * time.Millisecond
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
}

// held is what an operation's Lease says of it.
type held struct {
	ticket  uint64             // 0: none yet
	coarse  map[coarseKey]bool // nil: unknown, may touch anything; true: writes there
	running bool
}

// Admit implements Admitter.
func (c *Cluster) Admit(ctx context.Context, op Operation) (func(), error) {
	mine, err := c.enter(ctx, op)
	if err != nil {
		return nil, err
	}
	for told := false; ; {
		cs, err := c.conflictsOf(ctx, mine, true)
		if err != nil {
			mine.abandon()
			return nil, err
		}
		if len(cs) == 0 {
			if err := mine.markAdmitted(ctx); err != nil {
				mine.abandon()
				return nil, err
			}
			return mine.release, nil
		}
		if !told && op.OnWait != nil {
			op.OnWait(cs)
			told = true
		}
		t := c.Clock.NewTimer(c.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			mine.abandon()
			return nil, ctx.Err()
		case <-t.C():
		}
	}
}

// TryAdmit implements Admitter.
func (c *Cluster) TryAdmit(ctx context.Context, op Operation) (func(), []Conflict, error) {
	mine, err := c.enter(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	cs, err := c.conflictsOf(ctx, mine, true)
	if err != nil || len(cs) > 0 {
		mine.abandon()
		return nil, cs, err
	}
	if err := mine.markAdmitted(ctx); err != nil {
		mine.abandon()
		return nil, nil, err
	}
	return mine.release, nil, nil
}

// Conflicts implements Admitter: every live operation is earlier than one not yet made.
// It only reads: expired Leases are passed over, not removed, so that a dry run writes
// nothing to the cluster.
func (c *Cluster) Conflicts(ctx context.Context, op Operation) ([]Conflict, error) {
	c.defaults()
	return c.conflictsOf(ctx, &ticketed{c: c, op: op, fp: footprintOfOp(op)}, false)
}

// Idle implements Idler: the cluster holds no operation's Lease but expired ones, which
// Conflicts passes over too.
func (c *Cluster) Idle(ctx context.Context) (bool, error) {
	c.defaults()
	list, err := c.operations(ctx)
	if err != nil {
		return false, err
	}
	for i := range list.Items {
		if !c.expired(&list.Items[i]) {
			return false, nil
		}
	}
	return true, nil
}

// operations lists the operations' Leases: none when the records' namespace is not
// there yet.
func (c *Cluster) operations(ctx context.Context) (*coordinationv1.LeaseList, error) {
	list, err := c.Client.CoordinationV1().Leases(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: leaseLabel + "=operation"})
	if apierrors.IsNotFound(err) {
		return &coordinationv1.LeaseList{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("admission: list operations: %w", err)
	}
	return list, nil
}

// ticketed is this process's operation in the cluster.
type ticketed struct {
	c      *Cluster
	op     Operation
	fp     footprint
	chunks int // the ConfigMaps holding fp's keys
	lease  *coordinationv1.Lease
	ticket uint64
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// enter makes the operation's Lease and ConfigMaps, takes its ticket, and starts
// renewing.
func (c *Cluster) enter(ctx context.Context, op Operation) (*ticketed, error) {
	c.defaults()
	if err := c.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	fp := footprintOfOp(op)
	now := metav1.NewMicroTime(c.Clock.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "op-", Namespace: c.Namespace,
			Labels:      map[string]string{leaseLabel: "operation"},
			Annotations: map[string]string{annKind: op.Kind, annChunks: strconv.Itoa(chunks(len(fp.keys)))}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(c.Holder + " " + op.ID),
			LeaseDurationSeconds: ptr.To(int32(c.LeaseDuration.Seconds())), AcquireTime: &now, RenewTime: &now},
	}
	if coarse := encodeCoarse(fp); len(coarse) <= maxCoarseLength {
		lease.Annotations[annCoarse] = coarse
	}
	created, err := c.Client.CoordinationV1().Leases(c.Namespace).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("admission: make the operation's lease: %w", err)
	}
	mine := &ticketed{c: c, op: op, fp: fp, chunks: chunks(len(fp.keys)), lease: created, stop: make(chan struct{}), done: make(chan struct{})}
	go mine.renew()
	if err := mine.writeKeys(ctx); err != nil {
		mine.abandon()
		return nil, err
	}
	if err := mine.takeTicket(ctx); err != nil {
		mine.abandon()
		return nil, err
	}
	return mine, nil
}

// ensureNamespace makes the namespace of the records, once per admitter.
func (c *Cluster) ensureNamespace(ctx context.Context) error {
	c.namespace.Do(func() {
		_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			c.nsErr = fmt.Errorf("admission: namespace %s: %w", c.Namespace, err)
		}
	})
	return c.nsErr
}

func chunks(keys int) int { return (keys + keysPerChunk - 1) / keysPerChunk }

// writeKeys stores the footprint's keys in ConfigMaps the Lease owns: 8 bytes of hash
// and 1 of write flag each, in hash order.
func (t *ticketed) writeKeys(ctx context.Context) error {
	owner := metav1.OwnerReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Name: t.lease.Name, UID: t.lease.UID}
	for i := range t.chunks {
		keys := t.fp.keys[i*keysPerChunk : min((i+1)*keysPerChunk, len(t.fp.keys))]
		data := make([]byte, 0, 9*len(keys))
		for _, k := range keys {
			data = binary.BigEndian.AppendUint64(data, k.hash)
			flag := byte(0)
			if k.write {
				flag = 1
			}
			data = append(data, flag)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: chunkName(t.lease.Name, i), Namespace: t.c.Namespace,
			Labels: map[string]string{leaseLabel: "keys"}, OwnerReferences: []metav1.OwnerReference{owner}},
			BinaryData: map[string][]byte{"keys": data}}
		if _, err := t.c.Client.CoreV1().ConfigMaps(t.c.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("admission: store the operation's identities: %w", err)
		}
	}
	return nil
}

func chunkName(lease string, i int) string { return fmt.Sprintf("%s-keys-%d", lease, i) }

// takeTicket takes the next ticket from the counter and writes it on the Lease.
func (t *ticketed) takeTicket(ctx context.Context) error {
	cms := t.c.Client.CoreV1().ConfigMaps(t.c.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cm, err := cms.Get(ctx, ticketsName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ticketsName, Namespace: t.c.Namespace}, Data: map[string]string{"next": "2"}}
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return apierrors.NewConflict(corev1.Resource("configmaps"), ticketsName, err) // someone else made it: again
				}
				return err
			}
			t.ticket = 1
			return nil
		}
		if err != nil {
			return err
		}
		next, err := strconv.ParseUint(cm.Data["next"], 10, 64)
		if err != nil || next == 0 {
			return fmt.Errorf("admission: ticket counter %s/%s is damaged: %q", t.c.Namespace, ticketsName, cm.Data["next"])
		}
		cm.Data["next"] = strconv.FormatUint(next+1, 10)
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		t.ticket = next
		return nil
	})
	if err != nil {
		return fmt.Errorf("admission: take a ticket: %w", err)
	}
	return t.annotate(ctx, annTicket, strconv.FormatUint(t.ticket, 10))
}

// annotate sets an annotation on the Lease with a merge patch: one request, and no
// conflict with the renewals.
func (t *ticketed) annotate(ctx context.Context, key, value string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	_, err := t.c.Client.CoordinationV1().Leases(t.c.Namespace).Patch(ctx, t.lease.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// markAdmitted records that the operation runs. From then on others read its keys from
// its ConfigMaps, and it needs neither them nor its sets: a restore of a million objects
// lets go of them here.
func (t *ticketed) markAdmitted(ctx context.Context) error {
	if err := t.annotate(ctx, annAdmitted, "true"); err != nil {
		return err
	}
	t.op.Writes, t.op.Reads, t.fp = manifest.Set{}, manifest.Set{}, footprint{}
	return nil
}

// renew keeps the Lease alive until stop. When it finds the Lease removed or held by
// another, the operation has lost its admission: others may be admitted to what it
// touches, so it tells the holder (Operation.Lost) and stops.
//
// A renewal that fails is tried again at the next tick, for as long as it takes: an
// expired Lease is removed only with a precondition on the version that was seen
// expired, so a Lease renewed late, but renewed, was passed over by no one. While the
// server does not answer its renewals, it does not take the holder's writes either.
func (t *ticketed) renew() {
	defer close(t.done)
	tick := t.c.Clock.NewTicker(t.c.LeaseDuration / 3)
	defer tick.Stop()
	leases := t.c.Client.CoordinationV1().Leases(t.c.Namespace)
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C():
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.c.LeaseDuration/3)
		var lost error
		retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			l, err := leases.Get(ctx, t.lease.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				lost = fmt.Errorf("%w: %s %s: its lease %s/%s was removed", ErrLost, t.op.Kind, t.op.ID, t.c.Namespace, t.lease.Name)
				return nil
			}
			if err != nil {
				return err
			}
			if l.UID != t.lease.UID || ptr.Deref(l.Spec.HolderIdentity, "") != ptr.Deref(t.lease.Spec.HolderIdentity, "") {
				lost = fmt.Errorf("%w: %s %s: its lease %s/%s is held by %q", ErrLost, t.op.Kind, t.op.ID, t.c.Namespace, t.lease.Name, ptr.Deref(l.Spec.HolderIdentity, ""))
				return nil
			}
			now := metav1.NewMicroTime(t.c.Clock.Now())
			l.Spec.RenewTime = &now
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			return err
		})
		cancel()
		if lost == nil {
			continue // renewed, or to be tried again at the next tick
		}
		if t.op.Lost != nil {
			t.op.Lost(lost)
		}
		return
	}
}

// release ends the operation: no more renewals, its Lease and ConfigMaps deleted. A
// second call does nothing.
func (t *ticketed) release() { t.abandon() }

func (t *ticketed) abandon() {
	if !t.stopRenewing() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.c.remove(ctx, t.lease.Name, t.chunks, nil)
}

// stopRenewing ends the renewals, once: it reports whether this call did.
func (t *ticketed) stopRenewing() bool {
	stopped := false
	t.once.Do(func() {
		close(t.stop)
		<-t.done
		stopped = true
	})
	return stopped
}

// remove deletes a Lease and its ConfigMaps; what is gone already is no error. With
// preconditions, the Lease is deleted only as it was seen (an expired one renewed since
// stays, and so does its holder's admission), and remove reports whether it is gone.
func (c *Cluster) remove(ctx context.Context, lease string, n int, pre *metav1.Preconditions) bool {
	err := c.Client.CoordinationV1().Leases(c.Namespace).Delete(ctx, lease, metav1.DeleteOptions{Preconditions: pre})
	if pre != nil && err != nil && !apierrors.IsNotFound(err) {
		return false
	}
	for i := range n {
		c.Client.CoreV1().ConfigMaps(c.Namespace).Delete(ctx, chunkName(lease, i), metav1.DeleteOptions{})
	}
	return true
}

// conflictsOf lists the live operations mine must wait for: those with an earlier
// ticket that conflict with it, and those with no ticket yet. Expired Leases are
// removed when prune is set. The keys of operations no longer listed are forgotten.
func (c *Cluster) conflictsOf(ctx context.Context, mine *ticketed, prune bool) ([]Conflict, error) {
	list, err := c.operations(ctx)
	if err != nil {
		return nil, err
	}
	live := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		live[list.Items[i].UID] = true
	}
	c.keys.Range(func(uid, _ any) bool {
		if !live[uid.(types.UID)] {
			c.keys.Delete(uid)
		}
		return true
	})
	mineCoarse := coarseModes(mine.fp)
	var out []Conflict
	for i := range list.Items {
		l := &list.Items[i]
		if mine.lease != nil && l.UID == mine.lease.UID {
			continue
		}
		h := readHeld(l)
		if c.expired(l) {
			n, _ := strconv.Atoi(l.Annotations[annChunks])
			if !prune || c.remove(ctx, l.Name, n, &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}) {
				continue
			}
		}
		id, kind := holderOp(l)
		if prune && mine.op.Resumes && id == mine.op.ID && kind == mine.op.Kind {
			// The predecessor this operation carries on from.
			n, _ := strconv.Atoi(l.Annotations[annChunks])
			if c.remove(ctx, l.Name, n, &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}) {
				continue
			}
		}
		if h.ticket == 0 {
			if mine.ticket != 0 { // it may be earlier than mine: wait until it says
				out = append(out, Conflict{ID: id, Kind: kind, Running: h.running})
			}
			continue
		}
		if mine.ticket != 0 && h.ticket > mine.ticket {
			continue // later: it waits for mine
		}
		if !coarseMayConflict(mineCoarse, h.coarse) {
			continue
		}
		theirs, err := c.readKeys(ctx, l)
		if err != nil {
			return nil, err
		}
		if shared, examples := overlap(mine.fp, theirs); shared > 0 {
			out = append(out, Conflict{ID: id, Kind: kind, Running: h.running, Shared: shared, Examples: examples})
		}
	}
	sortConflicts(out)
	return out, nil
}

func (c *Cluster) expired(l *coordinationv1.Lease) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return c.Clock.Since(l.Spec.RenewTime.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
}

func readHeld(l *coordinationv1.Lease) held {
	h := held{running: l.Annotations[annAdmitted] == "true"}
	h.ticket, _ = strconv.ParseUint(l.Annotations[annTicket], 10, 64)
	if s, ok := l.Annotations[annCoarse]; ok {
		h.coarse = decodeCoarse(s)
	}
	return h
}

// holderOp reads the operation's ID and kind off its Lease.
func holderOp(l *coordinationv1.Lease) (id, kind string) {
	if l.Spec.HolderIdentity != nil {
		if _, after, ok := strings.Cut(*l.Spec.HolderIdentity, " "); ok {
			id = after
		}
	}
	return id, l.Annotations[annKind]
}

// readKeys loads an operation's footprint from its ConfigMaps, once.
func (c *Cluster) readKeys(ctx context.Context, l *coordinationv1.Lease) (footprint, error) {
	if f, ok := c.keys.Load(l.UID); ok {
		return f.(footprint), nil
	}
	n, err := strconv.Atoi(l.Annotations[annChunks])
	if err != nil {
		return footprint{}, fmt.Errorf("admission: lease %s: chunk count %q", l.Name, l.Annotations[annChunks])
	}
	var f footprint
	for i := range n {
		cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, chunkName(l.Name, i), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Still being written (or the operation just ended): its keys are unknown,
			// so it conflicts with everything until they are there.
			return footprint{keys: []key{{write: true}}}, nil
		}
		if err != nil {
			return footprint{}, err
		}
		data := cm.BinaryData["keys"]
		for j := 0; j+9 <= len(data); j += 9 {
			f.keys = append(f.keys, key{binary.BigEndian.Uint64(data[j:]), data[j+8] == 1})
		}
	}
	c.keys.Store(l.UID, f)
	return f, nil
}

// The coarse summary: "namespace/group/resource" and whether the operation writes there.
func coarseModes(f footprint) map[coarseKey]bool {
	out := map[coarseKey]bool{}
	for c, write := range f.places() {
		out[c] = out[c] || write
	}
	return out
}

func encodeCoarse(f footprint) string {
	modes := coarseModes(f)
	entries := make([]string, 0, len(modes))
	for c, w := range modes {
		mode := "r"
		if w {
			mode = "w"
		}
		entries = append(entries, mode+" "+c.namespace+" "+c.group+" "+c.resource)
	}
	slices.Sort(entries)
	data, _ := json.Marshal(entries)
	return string(data)
}

func decodeCoarse(s string) map[coarseKey]bool {
	var entries []string
	if json.Unmarshal([]byte(s), &entries) != nil {
		return nil
	}
	out := map[coarseKey]bool{}
	for _, e := range entries {
		parts := strings.SplitN(e, " ", 4)
		if len(parts) != 4 {
			return nil
		}
		out[coarseKey{parts[1], parts[2], parts[3]}] = parts[0] == "w"
	}
	return out
}

// coarseMayConflict reports whether two summaries share a place where one writes; an
// unknown summary (nil) may conflict with anything.
func coarseMayConflict(mine, theirs map[coarseKey]bool) bool {
	if theirs == nil {
		return true
	}
	for c, w := range mine {
		if tw, ok := theirs[c]; ok && (w || tw) {
			return true
		}
	}
	return false
}
