package restore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// JournalLabel marks the ConfigMaps of a ClusterJournal with the journal's name.
const JournalLabel = "restoregraph.dev/journal"

// ClusterJournal keeps a restore's journal in the cluster, in ConfigMaps, so that a
// restore carried on by another process (a controller's replica taking over one that
// died) follows what the first one started.
//
// It keeps what the target cannot tell a second run: the asynchronous operations
// plugins started, and the exec hooks that ran. An object that was only created is found
// again by its SourceUIDAnnotation and is not recorded, so the journal of a
// million-object restore holds only those few objects. Each record is written before
// Record returns, as a merge patch of one key: records of different objects never
// conflict. The ConfigMaps are NAME-0, NAME-1, ..., each kept under MaxBytes, labelled
// JournalLabel=NAME, and owned by Owner when it is set (a Restore object, so that
// deleting it deletes its journal).
type ClusterJournal struct {
	// MaxBytes bounds the records of one ConfigMap; a record that would pass it starts
	// the next. Default 900,000, under the API server's 1 MiB.
	MaxBytes int
	// Timeout bounds each write. Default 30s. A write is not cut short by the restore's
	// cancellation: an operation started is recorded, as a stopped restore's journal
	// file keeps it.
	Timeout time.Duration

	client dynamic.ResourceInterface
	name   string
	owner  *metav1.OwnerReference
	done   map[types.UID]Journaled

	mu    sync.Mutex
	where map[types.UID]int // the ConfigMap holding a source's record
	sizes []int             // bytes of records in each ConfigMap
}

var _ Journal = (*ClusterJournal)(nil)

// OpenClusterJournal reads the journal NAME of namespace (made as records come when
// there is none). owner, when set, owns the ConfigMaps it makes. A record that cannot be
// read is an error wrapping ErrJournalCorrupt that names its ConfigMap and key.
func OpenClusterJournal(ctx context.Context, dyn dynamic.Interface, namespace, name string, owner *metav1.OwnerReference) (*ClusterJournal, error) {
	if errs := validation.IsDNS1123Subdomain(name + "-99"); len(errs) > 0 {
		return nil, fmt.Errorf("journal name %q: %s", name, errs[0])
	}
	j := &ClusterJournal{MaxBytes: 900_000, Timeout: 30 * time.Second, client: dyn.Resource(configMapsGVR).Namespace(namespace), name: name, owner: owner,
		done: map[types.UID]Journaled{}, where: map[types.UID]int{}}
	list, err := j.client.List(ctx, metav1.ListOptions{LabelSelector: JournalLabel + "=" + name})
	if err != nil {
		return nil, fmt.Errorf("journal %s/%s: %w", namespace, name, err)
	}
	for _, cm := range list.Items {
		var i int
		if _, err := fmt.Sscanf(cm.GetName(), name+"-%d", &i); err != nil || cm.GetName() != chunkOf(name, i) {
			continue // labelled, not one of ours
		}
		for len(j.sizes) <= i {
			j.sizes = append(j.sizes, 0)
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		for key, value := range data {
			var rec journalRecord
			if err := json.Unmarshal([]byte(value), &rec); err != nil || rec.Source == "" {
				return nil, fmt.Errorf("%w: ConfigMap %s/%s, key %s", ErrJournalCorrupt, namespace, cm.GetName(), key)
			}
			if rec.Status == "" {
				rec.Status = Restored
			}
			j.done[rec.Source] = Journaled{rec.New, rec.Status, rec.Operations, rec.HooksRan}
			j.where[rec.Source] = i
			j.sizes[i] += len(key) + len(value)
		}
	}
	return j, nil
}

// Journaled returns what the journal held when it was opened.
func (j *ClusterJournal) Journaled() map[types.UID]Journaled { return j.done }

// Record writes the record of an object that has operations or whose hooks ran; others
// are found again in the target, and Record returns nil for them without a request.
func (j *ClusterJournal) Record(source types.UID, rec Journaled) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	i, recorded := j.where[source]
	if !recorded && len(rec.Operations) == 0 && !rec.HooksRan {
		return nil
	}
	value, _ := json.Marshal(journalRecord{source, rec.New, rec.Status, rec.Operations, rec.HooksRan})
	key := journalKey(source)
	if !recorded {
		i = max(len(j.sizes)-1, 0)
		if len(j.sizes) > 0 && j.sizes[i]+len(key)+len(value) > j.MaxBytes {
			i++
		}
	}
	for len(j.sizes) <= i {
		j.sizes = append(j.sizes, 0)
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{key: string(value)}})
	ctx, cancel := context.WithTimeout(context.Background(), j.Timeout)
	defer cancel()
	_, err := j.client.Patch(ctx, chunkOf(j.name, i), types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": chunkOf(j.name, i), "labels": map[string]any{JournalLabel: j.name}},
			"data":     map[string]any{key: string(value)}}}
		if j.owner != nil {
			cm.SetOwnerReferences([]metav1.OwnerReference{*j.owner})
		}
		_, err = j.client.Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // made meanwhile, by another process of the same restore
			_, err = j.client.Patch(ctx, chunkOf(j.name, i), types.MergePatchType, patch, metav1.PatchOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("journal %s: record %s: %w", chunkOf(j.name, i), source, err)
	}
	j.where[source] = i
	j.sizes[i] += len(key) + len(value) // an overwritten record is counted twice: the bound stays safe
	return nil
}

func chunkOf(name string, i int) string { return fmt.Sprintf("%s-%d", name, i) }

// journalKey is a ConfigMap key for a source UID: the UID itself when it is a valid key
// (every UID the API server gives), its hex otherwise. Readers take the source from the
// record, not the key.
func journalKey(source types.UID) string {
	if len(validation.IsConfigMapKey(string(source))) == 0 {
		return string(source)
	}
	return "x-" + hex.EncodeToString([]byte(source))
}
