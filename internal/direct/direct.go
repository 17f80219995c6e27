// Package direct is the seam between a restore and a server in the same process
// (memcluster's, for --embedded): objects handed over as the restore holds them,
// decoded, with nothing encoded for the server to decode again, nor an answer decoded.
// It is internal: the restore finds it behind the configuration the server gives
// (restore.NewTarget of memcluster.Server.InProcessConfig), and no user sets it.
package direct

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Creator creates an object in a server in this process from its decoded form, as a
// POST of its JSON would: the same checks and defaults, the server's Status as an
// apierrors error. It may change obj's top level and metadata, and on success obj is
// the object as created; what lies deeper it must replace where it changes it, not
// change, for the restore shares those values with the object as the backup holds it.
// It keeps nothing of obj once Create returns: the restore gives obj's maps to the
// objects decoded after it, once the object is restored.
//
// It is also given, as values of the top level of objects no step reads below their
// metadata, the JSON the restore did not decode (jsontree.Raw, whose MarshalJSON
// returns it). Those bytes are the body the restore read, in a buffer it uses again for
// another object's once this one is restored: they are not to be changed, nor kept.
type Creator interface {
	Create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj map[string]any) error
}

// Transport is the transport of a configuration of a server in this process that also
// creates objects directly.
type Transport interface {
	http.RoundTripper
	DirectCreator() Creator
}
