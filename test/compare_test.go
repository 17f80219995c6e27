package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// standing is what a target holds of a backup: which of its objects are there, and how
// each ownership link of the backup stands, both owner and dependent being there.
type standing struct {
	present map[manifest.ID]types.UID // the objects of the backup in the target, by identity, and their UIDs there
	kept    int                       // the dependent names its owner's UID in the target
	wrong   int                       // it names the owner's kind and name, at a UID that is not the owner's
	lost    []string                  // it does not name the owner at all
}

// links is how many ownership links could be judged.
func (s standing) links() int { return s.kept + s.wrong + len(s.lost) }

// standingOf reads what tgt holds of b, each object at the version the backup prefers,
// in its own namespace (neither tool maps namespaces here). Events are left out: neither
// tool restores them.
func standingOf(t testing.TB, tgt restore.Target, b *archive.Backup) standing {
	t.Helper()
	ctx := context.Background()
	m := b.Manifest()
	s := standing{present: map[manifest.ID]types.UID{}}
	live := map[manifest.ID]*unstructured.Unstructured{}
	for _, it := range m.Items() {
		if it.Resource == "events" {
			continue
		}
		r, ok := b.Resource(it.GroupResource())
		require.True(t, ok)
		gvr := schema.GroupVersionResource{Group: it.Group, Version: r.Preferred, Resource: it.Resource}
		o, err := tgt.Dynamic.Resource(gvr).Namespace(it.Namespace).Get(ctx, it.Name, metav1.GetOptions{})
		if err != nil || o.GetDeletionTimestamp() != nil {
			continue
		}
		s.present[it.ID()] = o.GetUID()
		live[it.ID()] = o
	}
	for _, it := range m.Items() {
		o := live[it.ID()]
		if o == nil {
			continue
		}
		for _, ownerUID := range it.OwnerUIDs {
			owner, ok := m.ByUID(ownerUID)
			if !ok {
				continue
			}
			ownerNow, ok := s.present[owner.ID()]
			if !ok {
				continue
			}
			switch named := namesOwner(o, owner, ownerNow); named {
			case "kept":
				s.kept++
			case "wrong":
				s.wrong++
			default:
				s.lost = append(s.lost, fmt.Sprintf("%s %s/%s → %s %s", it.Kind, it.Namespace, it.Name, owner.Kind, owner.Name))
			}
		}
	}
	slices.Sort(s.lost)
	return s
}

func namesOwner(o *unstructured.Unstructured, owner *manifest.Item, uid types.UID) string {
	verdict := "lost"
	for _, ref := range o.GetOwnerReferences() {
		switch {
		case ref.UID == uid:
			return "kept"
		case ref.Kind == owner.Kind && ref.Name == owner.Name:
			verdict = "wrong"
		}
	}
	return verdict
}

// gone lists what before had and after has not: what the garbage collector (or a
// controller) removed in between.
func gone(before, after standing) []string {
	var out []string
	for id := range before.present {
		if _, ok := after.present[id]; !ok {
			out = append(out, id.String())
		}
	}
	slices.Sort(out)
	return out
}

// verifyTarget runs `restoregraph verify` on a target and returns its summary, the
// problems of the objects not verified, and the objects their controllers replaced.
func verifyTarget(t testing.TB, backup, kubeconfig string) (map[restore.Verdict]int, []string, map[manifest.ID]bool) {
	t.Helper()
	bin, err := cliBinary()
	require.NoError(t, err)
	out, err := exec.Command(bin, "verify", "--backup", backup, "--kubeconfig", kubeconfig, "-o", "json").Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() != 1 {
		require.NoError(t, err, string(ee.Stderr))
	}
	var rep restore.VerifyReport
	require.NoError(t, json.Unmarshal(out, &rep), string(out))
	var problems []string
	replaced := map[manifest.ID]bool{}
	for _, o := range rep.Objects {
		switch o.Verdict {
		case restore.Missing, restore.Differs:
			problems = append(problems, fmt.Sprintf("%s %s %s/%s: %v", o.Verdict, o.Resource, o.Namespace, o.Name, o.Problems))
		case restore.Replaced:
			replaced[refID(o.ObjectRef)] = true
		}
	}
	return rep.Summary, problems, replaced
}

func refID(o restore.ObjectRef) manifest.ID {
	return manifest.ID{Group: o.Group, Resource: o.Resource, Namespace: o.Namespace, Name: o.Name}
}

// restoreReport is the part of `restoregraph restore -o json` a comparison reads.
type restoreReport struct {
	Summary map[restore.Status]int `json:"summary"`
	Objects []restore.ObjectResult `json:"objects"`
}

// leftToTarget is what a report says restoregraph left to the target's controllers.
func (r restoreReport) leftToTarget() map[manifest.ID]bool {
	out := map[manifest.ID]bool{}
	for _, o := range r.Objects {
		if o.Status == restore.Skipped && o.SkippedBy == restore.ControllerManaged {
			out[refID(o.ObjectRef)] = true
		}
	}
	return out
}

// managersOf returns, for each object of b that tgt holds, the managers its backed-up
// managed fields name ("manager operation subresource") that tgt's object does not
// name: those whose fields are now another's. recorded counts the managers the backup
// names for the objects tgt holds.
func managersOf(t testing.TB, tgt restore.Target, b *archive.Backup) (recorded int, missing []string) {
	t.Helper()
	ctx := context.Background()
	key := func(e metav1.ManagedFieldsEntry) string {
		return strings.TrimSpace(e.Manager + " " + string(e.Operation) + " " + e.Subresource)
	}
	for _, it := range b.Manifest().Items() {
		r, ok := b.Resource(it.GroupResource())
		require.True(t, ok)
		body, err := b.Body(it.GroupResource(), r.Preferred, it.Namespace, it.Name)
		require.NoError(t, err)
		backedUp := &unstructured.Unstructured{}
		require.NoError(t, backedUp.UnmarshalJSON(body))
		gvr := schema.GroupVersionResource{Group: it.Group, Version: r.Preferred, Resource: it.Resource}
		o, err := tgt.Dynamic.Resource(gvr).Namespace(it.Namespace).Get(ctx, it.Name, metav1.GetOptions{})
		if err != nil || (o.GetAnnotations()[restore.SourceUIDAnnotation] == "" && o.GetLabels()["velero.io/restore-name"] == "") {
			continue // not there, or not restored (made by the target's controllers)
		}
		now := map[string]bool{}
		for _, e := range o.GetManagedFields() {
			now[key(e)] = true
		}
		for _, e := range backedUp.GetManagedFields() {
			recorded++
			if !now[key(e)] {
				missing = append(missing, it.Kind+" "+it.Namespace+"/"+it.Name+": "+key(e))
			}
		}
	}
	slices.Sort(missing)
	return recorded, missing
}
