// Package platforms renders the install manifests of real platforms from their
// projects' own Go modules, pinned in go.mod, with the projects' own tools: a Helm
// chart with Helm's Go packages (through package deploy), as helm template renders it;
// kustomizations with kustomize's Go API (krusty), as kustomize build does, their
// variables then given their defaults, as clusterctl does when none is set.
// The integration tests install what it writes into testdata/platforms, back it up
// with the real Velero server, and restore it; its test keeps the files current (go
// test -update writes them again). A module of its own, so that Helm and the
// platforms' modules stay out of the integration tests' build.
package platforms

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/drone/envsubst/v2"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/restoregraph/restoregraph/deploy"
)

// Platform is a project whose install manifests are rendered from its module.
type Platform struct {
	// Name names the file the manifests are written to: testdata/platforms/NAME.yaml.
	Name string
	// Module is the Go module that holds the chart, at the version go.mod pins.
	Module string
	// Chart is the chart's directory in the module; Kustomizations, where there is
	// no chart, the directories of the kustomizations built, in order.
	Chart          string
	Kustomizations []string
	// Versioned says that the chart's version is v0.0.0 in the module, and that the
	// project's release tooling sets it (and appVersion): to the module's version here.
	Versioned bool
	// Release and Values are what it is rendered for and with.
	Release deploy.Release
	Values  map[string]any
}

// CertManager is cert-manager from its chart: its CRDs, its controller, cainjector and
// webhook, and the webhook's Validating- and MutatingWebhookConfigurations, which fail
// closed on cert-manager's own resources.
var CertManager = Platform{
	Name:      "cert-manager",
	Module:    "github.com/cert-manager/cert-manager",
	Chart:     "deploy/charts/cert-manager",
	Versioned: true,
	Release:   deploy.Release{Name: "cert-manager", Namespace: "cert-manager"},
	Values: map[string]any{
		"crds": map[string]any{"enabled": true},
		// A post-install hook that waits for the webhook: not part of what is installed.
		"startupapicheck": map[string]any{"enabled": false},
	},
}

// ClusterAPI is Cluster API's core provider and its kubeadm bootstrap and control
// plane providers, as clusterctl init installs them: their kustomizations (config/default)
// with every variable at its default. Their CRDs convert between versions through a
// conversion webhook, their Validating- and MutatingWebhookConfigurations fail closed,
// and cert-manager (installed first, as clusterctl requires) issues their serving
// certificates.
var ClusterAPI = Platform{
	Name:           "cluster-api",
	Module:         "sigs.k8s.io/cluster-api",
	Kustomizations: []string{"config/default", "bootstrap/kubeadm/config/default", "controlplane/kubeadm/config/default"},
}

// Kyverno is Kyverno from its chart: many CRDs (policies, reports, cleanup and
// update requests) and its admission, background, cleanup and reports controllers.
// Kyverno writes its webhook configurations itself once running, so the chart holds
// none.
var Kyverno = Platform{
	Name:    "kyverno",
	Module:  "github.com/kyverno/kyverno",
	Chart:   "charts/kyverno",
	Release: deploy.Release{Name: "kyverno", Namespace: "kyverno"},
	Values: map[string]any{
		// Post-install and pre-delete hooks (Jobs): not part of what is installed.
		"webhooksCleanup":      map[string]any{"enabled": false},
		"policyReportsCleanup": map[string]any{"enabled": false},
		"test":                 map[string]any{"enabled": false},
	},
}

// All are the platforms rendered.
var All = []Platform{CertManager, ClusterAPI, Kyverno}

// Version returns the version of p's module that go.mod pins.
func (p Platform) Version() (string, error) {
	m, err := module(p.Module)
	return m.Version, err
}

// Render renders p's manifests, headed by the module and version they came from.
func (p Platform) Render() ([]byte, error) {
	m, err := module(p.Module)
	if err != nil {
		return nil, err
	}
	if len(p.Kustomizations) > 0 {
		return p.build(m)
	}
	dir := filepath.Join(m.Dir, p.Chart)
	if p.Versioned {
		if dir, err = chartWithVersion(dir, m.Version); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	out, err := deploy.Render(dir, p.Release, p.Values)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p.Module, m.Version, err)
	}
	head := fmt.Sprintf("# %s %s: %s rendered with Helm's Go packages by test/platforms (go test -update writes it again)\n", p.Module, m.Version, p.Chart)
	return append([]byte(head), out...), nil
}

// build builds p's kustomizations in m, in order, and gives their variables
// (${NAME:=default}) their defaults, as clusterctl does with none set.
func (p Platform) build(m goModule) ([]byte, error) {
	var out bytes.Buffer
	fmt.Fprintf(&out, "# %s %s: %s built with kustomize's Go API by test/platforms (go test -update writes it again)\n",
		p.Module, m.Version, strings.Join(p.Kustomizations, ", "))
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for i, dir := range p.Kustomizations {
		resources, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(m.Dir, dir))
		if err != nil {
			return nil, fmt.Errorf("%s %s: kustomize build %s: %w", p.Module, m.Version, dir, err)
		}
		y, err := resources.AsYaml()
		if err != nil {
			return nil, err
		}
		if v := noDefault.FindSubmatch(y); v != nil {
			return nil, fmt.Errorf("%s %s: %s: variable %s has no default, and clusterctl would ask for it", p.Module, m.Version, dir, v[1])
		}
		text, err := envsubst.Eval(string(y), func(string) string { return "" })
		if err != nil {
			return nil, fmt.Errorf("%s %s: %s: %w", p.Module, m.Version, dir, err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.WriteString(text)
	}
	return out.Bytes(), nil
}

// noDefault matches a variable written without a default (${NAME}).
var noDefault = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

type goModule struct{ Path, Version, Dir string }

// module asks the go command where the module go.mod pins is, downloading it when it
// is not in the module cache yet.
func module(path string) (goModule, error) {
	out, err := exec.Command("go", "list", "-m", "-json", path).Output()
	if err != nil {
		return goModule{}, fmt.Errorf("go list -m %s: %w", path, err)
	}
	var m goModule
	if err := json.Unmarshal(out, &m); err != nil {
		return goModule{}, err
	}
	if m.Dir == "" {
		if out, err := exec.Command("go", "mod", "download", "-json", path+"@"+m.Version).Output(); err != nil {
			return goModule{}, fmt.Errorf("go mod download %s: %w", path, err)
		} else if err := json.Unmarshal(out, &m); err != nil {
			return goModule{}, err
		}
	}
	return m, nil
}

// chartWithVersion copies the chart in dir to a new directory, with its Chart.yaml as
// the project's release tooling makes it: version and appVersion set to version (made
// of Chart.template.yaml where the chart has that instead).
func chartWithVersion(dir, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "chart-")
	if err != nil {
		return "", err
	}
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
		return "", err
	}
	// The module cache is read-only, and so is what CopyFS copies of it.
	if err := filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	}); err != nil {
		return "", err
	}
	chart := filepath.Join(tmp, "Chart.yaml")
	if template := filepath.Join(tmp, "Chart.template.yaml"); fileExists(template) {
		if err := os.Rename(template, chart); err != nil {
			return "", err
		}
	}
	data, err := os.ReadFile(chart)
	if err != nil {
		return "", err
	}
	text := strings.NewReplacer("version: v0.0.0", "version: "+version, "appVersion: v0.0.0", "appVersion: "+version,
		`"{{IS_PRERELEASE}}"`, `"false"`).Replace(string(data))
	return tmp, os.WriteFile(chart, []byte(text), 0o644)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
