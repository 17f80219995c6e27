package restore

import (
	"context"
	"errors"
	"fmt"
	"maps"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/internal/direct"
	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/restoregraph/restoregraph/manifest"
)

// createBody creates o.Body in the target: through the REST client under a Dynamic
// that NewTarget made, otherwise (or when a step replaced o.Client) through o.Client.
//
// Through the REST client the body is encoded once, whatever the retries, and the
// server's answer is decoded whole only when the restore reads more of it than its
// metadata (readsAnswer). Otherwise Object.Target holds the answer's apiVersion, kind and
// metadata without managedFields: most objects of a backup (ConfigMaps, Secrets,
// Deployments, ...) are ready once they exist, and decoding whole answers was a third
// of the client's allocations.
func (r *run) createBody(ctx context.Context, o *Object) (*unstructured.Unstructured, error) {
	if c := r.target.creator; c != nil && o.Client == o.made {
		return r.createInProcess(ctx, o, c)
	}
	rd, ok := r.target.Dynamic.(*restDynamic)
	if !ok || o.Client != o.made {
		o.own() // a caller's client may change what it is given
		var created *unstructured.Unstructured
		err := r.retry(ctx, o, func() (err error) {
			created, err = o.Client.Create(ctx, o.Body, metav1.CreateOptions{})
			return err
		})
		return created, err
	}
	// encoding/json's encoding, by the faster implementation of json/v2.
	body, err := jsonv2.Marshal(o.Body.Object, jsonv1.DefaultOptionsV1())
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", o.Item, err)
	}
	whole := r.readsAnswer(o)
	var created *unstructured.Unstructured
	err = r.retry(ctx, o, func() error {
		res := rd.rest.Post().AbsPath(resourcePath(o)...).
			SetHeader("Content-Type", runtime.ContentTypeJSON).Body(body).Do(ctx)
		if err := res.Error(); err != nil { // the server's Status as an error, as the dynamic client's
			return err
		}
		answer, err := res.Raw()
		if err != nil {
			return err
		}
		if whole {
			created, err = decodeObject(answer)
		} else {
			created, err = decodeMetadata(answer)
		}
		if err != nil {
			return fmt.Errorf("decoding the server's answer: %w", err)
		}
		return nil
	})
	return created, err
}

// createInProcess creates o.Body through c, a server in this process. The server changes
// the object's top level and metadata as it stores it, and returns nothing else: each
// attempt hands it a copy of those two, so that o.Body stays what was sent, for another
// attempt or the Existing policy's update. What lies deeper is shared with o.Body (and
// perhaps o.Backup), which the server replaces where it changes it (Creator).
func (r *run) createInProcess(ctx context.Context, o *Object, c direct.Creator) (*unstructured.Unstructured, error) {
	var obj map[string]any
	err := r.retry(ctx, o, func() error {
		obj = o.decoded.Map(len(o.Body.Object))
		maps.Copy(obj, o.Body.Object)
		if md, ok := obj["metadata"].(map[string]any); ok {
			// With room for what the server adds (uid, creationTimestamp,
			// resourceVersion, generation): a map that grows past eight entries makes
			// a larger one and drops what it filled.
			m := o.decoded.Map(len(md) + 4)
			maps.Copy(m, md)
			obj["metadata"] = m
		}
		return c.Create(ctx, o.resource, o.namespace, obj)
	})
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// readsAnswer reports whether the restore reads more of o's answer than its metadata.
func (r *run) readsAnswer(o *Object) bool {
	switch {
	case !r.plan.ext.Readiness.JudgesByExistence(o.Body.GroupVersionKind().GroupKind()):
		return true // its readiness is judged from it
	case r.plan.status.keeps(o):
		return true // its status is written with an update of it
	case o.Item.GroupResource() == podsResource:
		// Its exec hooks are read from it.
		return r.sel.Hooks != nil || annotation(o.Body, hook.ExecCommandAnnotation) != ""
	}
	return false
}

// resourcePath is the path of the resource o.Client was made for, in its namespace, as
// client-go's dynamic client makes it.
func resourcePath(o *Object) []string {
	gvr := o.resource
	p := make([]string, 0, 6)
	if gvr.Group == "" {
		p = append(p, "api")
	} else {
		p = append(p, "apis", gvr.Group)
	}
	p = append(p, gvr.Version)
	if ns := o.namespace; ns != "" {
		p = append(p, "namespaces", ns)
	}
	return append(p, gvr.Resource)
}

// answerMetadata is what decodeMetadata reads of an object.
type answerMetadata struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name              string            `json:"name"`
		GenerateName      string            `json:"generateName"`
		Namespace         string            `json:"namespace"`
		UID               string            `json:"uid"`
		ResourceVersion   string            `json:"resourceVersion"`
		Generation        int64             `json:"generation"`
		CreationTimestamp string            `json:"creationTimestamp"`
		Labels            map[string]string `json:"labels"`
		Annotations       map[string]string `json:"annotations"`
		OwnerReferences   []any             `json:"ownerReferences"`
		Finalizers        []string          `json:"finalizers"`
	} `json:"metadata"`
}

// decodeMetadata decodes of an object's JSON its apiVersion, kind and metadata, but for
// managedFields.
func decodeMetadata(data []byte) (*unstructured.Unstructured, error) {
	var a answerMetadata
	// json/v2 skips what the struct does not name in one pass, without first checking
	// the whole document as encoding/json does.
	if err := jsonv2.Unmarshal(data, &a, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)); err != nil {
		return nil, err
	}
	m := a.Metadata
	md := map[string]any{}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": a.APIVersion, "kind": a.Kind, "metadata": md}}
	u.SetName(m.Name)
	u.SetGenerateName(m.GenerateName)
	u.SetNamespace(m.Namespace)
	u.SetUID(types.UID(m.UID))
	u.SetResourceVersion(m.ResourceVersion)
	if m.CreationTimestamp != "" {
		md["creationTimestamp"] = m.CreationTimestamp // as the server wrote it
	}
	if m.Generation != 0 {
		u.SetGeneration(m.Generation)
	}
	u.SetLabels(m.Labels)
	u.SetAnnotations(m.Annotations)
	u.SetFinalizers(m.Finalizers)
	if m.OwnerReferences != nil {
		md["ownerReferences"] = m.OwnerReferences // as decoded
	}
	return u, nil
}

// decodeObject decodes an object's JSON as Unstructured.UnmarshalJSON decodes one that
// is not a list, in one pass (jsontree), and without quoting the object in its error.
func decodeObject(data []byte) (*unstructured.Unstructured, error) {
	u, made, err := decodeBackup(data, false)
	if made != nil {
		made.Drop() // the caller may keep the tree
	}
	return u, err
}

// decodeBackup is decodeObject, for the backup's object of an Object: with the maps it
// made, which the run gives back once the object is restored (run.release); the
// objects of its top level but metadata kept as their JSON, and its status left out,
// when unread is set.
func decodeBackup(data []byte, unread bool) (*unstructured.Unstructured, *jsontree.Maps, error) {
	var m map[string]any
	var made *jsontree.Maps
	var err error
	if unread {
		// What leaves an object unread drops its status too (stepSanitize): its
		// resource's status is not restored, nor does its item ask for it, and an
		// object whose own annotation asks for it is decoded again whole. The values
		// left as JSON are data's bytes: data is kept as it is while the tree is used.
		m, made, err = jsontree.ObjectMapsUnread(data, "status")
	} else {
		m, made, err = jsontree.ObjectMaps(data)
	}
	if err != nil {
		return nil, nil, err
	}
	if k, _ := m["kind"].(string); k == "" {
		made.Drop()
		return nil, nil, errors.New("the object has no kind")
	}
	return &unstructured.Unstructured{Object: m}, made, nil
}

// bindingRefused explains err, the API server's answer to the create of a RoleBinding
// or ClusterRoleBinding it (body), when the role the binding names is not there: the
// server looks a binding's role up only to check that the user who creates the binding
// holds every right the role grants, which it does when the user may not bind the role
// (no bind or escalate on it), and answers NotFound under the binding's resource and the
// role's name, which says neither which kind of object is missing nor why it was looked
// up. The error then says both.
func bindingRefused(it *manifest.Item, body *unstructured.Unstructured, err error) error {
	if it.Group != rbacGroup || (it.Resource != "rolebindings" && it.Resource != "clusterrolebindings") {
		return err
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	var ref struct{ Kind, Name string }
	switch r := body.Object["roleRef"].(type) {
	case map[string]any:
		ref.Kind, _ = r["kind"].(string)
		ref.Name, _ = r["name"].(string)
	case jsontree.Raw: // a body the restore left unread
		if jsonv1.Unmarshal(r, &ref) != nil {
			return err
		}
	}
	kind, name := ref.Kind, ref.Name
	st := status.Status()
	if st.Reason != metav1.StatusReasonNotFound || st.Details == nil || st.Details.Group != rbacGroup || st.Details.Name != name || name == "" {
		return err
	}
	switch st.Details.Kind {
	case "roles", "clusterroles", "rolebindings", "clusterrolebindings":
	default:
		return err
	}
	resource := map[string]string{"Role": "roles", "ClusterRole": "clusterroles"}[kind]
	if resource == "" {
		return err
	}
	return fmt.Errorf("%w: the %s %q it binds is not there, and the API server looks it up to check that the user restoring "+
		"holds its rights, since that user may not bind it (no bind or escalate on %s.%s)", err, kind, name, resource, rbacGroup)
}

// rbacGroup is the API group of roles and their bindings.
const rbacGroup = "rbac.authorization.k8s.io"
