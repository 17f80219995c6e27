package restore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The labels Velero puts on what it restores; restoregraph puts them too, so that tools
// that look for them find what a restore made.
const (
	BackupNameLabel  = "velero.io/backup-name"
	RestoreNameLabel = "velero.io/restore-name"
)

func (r *run) stepMapNamespaces(_ context.Context, o *Object) error {
	m := r.sel.NamespaceMappings
	if len(m) == 0 {
		return nil
	}
	body := o.Body
	if ns := body.GetNamespace(); ns != "" {
		if dst, ok := m[ns]; ok {
			body.SetNamespace(dst)
		}
	}
	switch o.Item.GroupResource().String() {
	case "namespaces":
		if dst, ok := m[body.GetName()]; ok {
			body.SetName(dst)
		}
	case "rolebindings.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io":
		subjects, _, _ := unstructured.NestedSlice(body.Object, "subjects")
		for _, s := range subjects {
			if sm, ok := s.(map[string]any); ok {
				if ns, _ := sm["namespace"].(string); ns != "" {
					if dst, ok := m[ns]; ok {
						sm["namespace"] = dst
					}
				}
			}
		}
		if subjects != nil {
			unstructured.SetNestedSlice(body.Object, subjects, "subjects")
		}
	case "persistentvolumes":
		if ns, _, _ := unstructured.NestedString(body.Object, "spec", "claimRef", "namespace"); ns != "" {
			if dst, ok := m[ns]; ok {
				o.own()
				unstructured.SetNestedField(body.Object, dst, "spec", "claimRef", "namespace")
			}
		}
	}
	return nil
}

func (r *run) stepLabel(_ context.Context, o *Object) error {
	// Set in the body's own labels (stepRead copied its metadata), where GetLabels and
	// SetLabels would copy them twice for every object.
	labels, ok := ownMetadataMap(o.Body, o.decoded, "labels")
	if !ok {
		return nil // not an object's metadata: the server refuses it
	}
	if r.plan.source.Name != "" {
		labels[BackupNameLabel] = r.labels.backup
	}
	labels[RestoreNameLabel] = r.labels.restore
	return nil
}

// runLabels are the values of the labels stepLabel sets, made once a run: checking a
// name as a label value (a regular expression) for each object was 1% of a
// million-object restore's CPU. They are boxed once too.
type runLabels struct{ backup, restore any }

func newRunLabels(backup, restore string) runLabels {
	return runLabels{labelValue(backup), labelValue(restore)}
}

// labelValue returns s when it is a valid label value, else a valid one that keeps
// its readable start and is told apart by a hash of the whole, as Velero shortens
// names that do not fit.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	keep := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, s)
	keep = strings.TrimLeft(keep, "-_.")
	if len(keep) > 52 {
		keep = keep[:52]
	}
	return keep + "-" + hex.EncodeToString(sum[:])[:10]
}
