// Package deploy renders restoregraph's Helm chart (chart/) with Helm's own Go packages,
// as helm template renders it. restoregraph.yaml beside it is the chart rendered with its
// default values, for kubectl apply; its test keeps it current (go test -update writes
// it again), and the integration tests apply it to the real API server.
package deploy

import (
	"bytes"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// Release names the release a chart is rendered for.
type Release struct{ Name, Namespace string }

// Default is the release restoregraph.yaml is rendered for: the controller in Velero's
// namespace.
var Default = Release{Name: "restoregraph", Namespace: "velero"}

// Render renders the chart in dir for release with values over its own, and returns
// the manifests, one YAML document per object, in the order helm install applies them
// (namespaces, accounts and RBAC before what runs as them), each headed by the template
// it came from as helm template heads it.
func Render(dir string, release Release, values map[string]any) ([]byte, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	vals, err := util.ToRenderValues(chrt, values, common.ReleaseOptions{Name: release.Name, Namespace: release.Namespace, IsInstall: true, Revision: 1},
		common.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("deploy: values: %w", err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	for name := range files {
		// A chart's notes are printed after an install, not applied: helm drops them
		// from the manifests as well.
		if strings.HasSuffix(name, "/NOTES.txt") {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	var out bytes.Buffer
	for _, m := range manifests {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.Name, strings.TrimSpace(m.Content))
	}
	return out.Bytes(), nil
}
