package platforms

// The platforms' modules, which hold their charts and kustomizations; a package of
// each keeps go.mod pinning the module.
import (
	_ "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	_ "github.com/kyverno/kyverno/api/kyverno/v1"
	_ "sigs.k8s.io/cluster-api/api/core/v1beta2"
)
