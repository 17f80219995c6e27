package platforms

// The platforms' modules, which hold their charts; a package of each keeps go.mod
// pinning the module.
import _ "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
