// The library asks for the oldest releases it builds and passes its tests with, so that
// a backup tool embedding it keeps its own (Velero v1.18 is on k8s.io v0.33 and
// controller-runtime v0.21): what raises each floor is said beside it. deps/newest.mod
// asks for the newest releases the project tests; make unit runs the tests at both,
// and make tidy tidies both.
module github.com/restoregraph/restoregraph

// sync.WaitGroup.Go.
go 1.25.0

// Unless said beside it, a requirement is at what k8s.io v0.31.0 requires of it, or the
// oldest release tried that the code builds and passes its tests with.
require (
	github.com/evanphx/json-patch/v5 v5.6.0
	// jsontext's Kind constants (BeginObject, EndArray, ...), which manifest's codec
	// switches on.
	github.com/go-json-experiment/json v0.0.0-20250725192818-e39067aee2d2
	github.com/gobwas/glob v0.2.3
	github.com/google/uuid v1.6.0
	github.com/klauspost/compress v1.16.0
	github.com/stretchr/testify v1.9.0
	golang.org/x/sync v0.7.0
	golang.org/x/sys v0.21.0
	golang.org/x/term v0.21.0
	gonum.org/v1/gonum v0.11.0
	gopkg.in/evanphx/json-patch.v4 v4.12.0
	// The library builds with v0.30; its tests make fake clients with
	// kubernetes/fake.NewClientset (v0.31). Discovery takes a context from v0.37
	// and is asked without one before (internal/discoverctx).
	k8s.io/api v0.31.0
	k8s.io/apiextensions-apiserver v0.31.0
	k8s.io/apimachinery v0.31.0
	k8s.io/client-go v0.31.0
	k8s.io/utils v0.0.0-20240711033017-18e509b52bc8
	// kstatus. From v0.36 its requirements raise one of Velero v1.18's (imdario/mergo).
	sigs.k8s.io/cli-utils v0.33.0
	sigs.k8s.io/json v0.0.0-20221116044647-bc3834ca7abd
	sigs.k8s.io/yaml v1.4.0
)

require (
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.11.0 // indirect
	github.com/fxamacker/cbor/v2 v2.7.0 // indirect
	github.com/go-logr/logr v1.4.2 // indirect
	github.com/go-openapi/jsonpointer v0.19.6 // indirect
	github.com/go-openapi/jsonreference v0.20.2 // indirect
	github.com/go-openapi/swag v0.22.4 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/gnostic-models v0.6.8 // indirect
	github.com/google/go-cmp v0.6.0 // indirect
	github.com/google/gofuzz v1.2.0 // indirect
	github.com/gorilla/websocket v1.5.0 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/moby/spdystream v0.4.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/mxk/go-flowrate v0.0.0-20140419014527-cca7078d478f // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/net v0.26.0 // indirect
	golang.org/x/oauth2 v0.21.0 // indirect
	golang.org/x/text v0.16.0 // indirect
	golang.org/x/time v0.3.0 // indirect
	google.golang.org/protobuf v1.34.2 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/kube-openapi v0.0.0-20240228011516-70dd3763d340 // indirect
	sigs.k8s.io/structured-merge-diff/v4 v4.4.1 // indirect
)
