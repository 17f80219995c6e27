package gomod

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

// Module is one of the repository's modules whose compile the others share.
type Module struct {
	Dir string
	// ModFile is the module file the builds use, relative to Dir; "" is go.mod.
	ModFile string
	// Tools are the programs its builds compile beside its own packages and their tests
	// (a server the tests run); with ToolsOnly, instead of them.
	Tools     []string
	ToolsOnly bool
}

// Aligned are the modules make test compiles at the newest releases: the library by its
// second module file, the command, the velero module, the demo, the integration tests
// with the Kubernetes servers they build, the CSI sidecars' build modules and the CSI
// driver. Where two take different versions of a module, every package above it is
// compiled once for each; on one version, once for all. The library's floor (its
// go.mod) and test/velero (Velero's own versions) stay apart on purpose.
var Aligned = []Module{
	{Dir: ".", ModFile: "deps/newest.mod"},
	{Dir: "cmd/restoregraph"},
	{Dir: "velero"},
	{Dir: "demo"},
	{Dir: "bench/peers"},
	{Dir: "test", Tools: []string{"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler"}},
	{Dir: "test/csi/snapshotter", Tools: []string{"tool"}, ToolsOnly: true},
	{Dir: "test/csi/provisioner", Tools: []string{"tool"}, ToolsOnly: true},
	{Dir: "test/csi/driver"},
}

// Versions are the versions of the modules whose packages a module's builds compile,
// by module path; a module replaced by a directory, or this repository's own, is left
// out.
type Versions map[string]string

// Mismatch is a module the aligned modules take at more than one version.
type Mismatch struct {
	Path string
	// By is the version each module directory takes.
	By map[string]string
	// Highest is the version they are raised to.
	Highest string
}

func (m Mismatch) String() string {
	dirs := make([]string, 0, len(m.By))
	for d := range m.By {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", m.Path)
	for _, d := range dirs {
		fmt.Fprintf(&b, " %s %s", d, m.By[d])
	}
	return b.String()
}

// goCmd runs the go command in dir of repo.
func goCmd(ctx context.Context, repo, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Join(repo, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// ListVersions lists the versions of the modules whose packages m's builds compile.
func ListVersions(ctx context.Context, repo string, m Module) (Versions, error) {
	list := []string{"list", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}} {{with .Replace}}{{.Version}}{{else}}-{{end}}{{end}}"}
	if m.ModFile != "" {
		list = append(list, "-modfile="+m.ModFile)
	}
	var runs [][]string
	if !m.ToolsOnly {
		runs = append(runs, append(slices.Clone(list), "-test", "./..."))
	}
	if len(m.Tools) > 0 {
		runs = append(runs, append(slices.Clone(list), m.Tools...))
	}
	v := Versions{}
	for _, args := range runs {
		out, err := goCmd(ctx, repo, m.Dir, args...)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			// A module replaced by a directory has two fields, and is left out.
			f := strings.Fields(sc.Text())
			if len(f) != 3 || strings.HasPrefix(f[0], Library) {
				continue
			}
			path, version := f[0], f[1]
			if f[2] != "-" {
				version = f[2] // replaced by another version: the one compiled
			}
			v[path] = version
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Mismatches returns the modules that the modules of lists (by directory) take at
// more than one version, by path.
func Mismatches(lists map[string]Versions) []Mismatch {
	by := map[string]map[string]string{}
	for dir, vs := range lists {
		for path, v := range vs {
			if by[path] == nil {
				by[path] = map[string]string{}
			}
			by[path][dir] = v
		}
	}
	var out []Mismatch
	for path, dirs := range by {
		var vs []string
		for _, v := range dirs {
			vs = append(vs, v)
		}
		slices.SortFunc(vs, semver.Compare)
		if vs[0] != vs[len(vs)-1] {
			out = append(out, Mismatch{Path: path, By: dirs, Highest: vs[len(vs)-1]})
		}
	}
	slices.SortFunc(out, func(a, b Mismatch) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// ListAll lists the versions of each module of mods under repo, by directory.
func ListAll(ctx context.Context, repo string, mods []Module) (map[string]Versions, error) {
	lists := map[string]Versions{}
	for _, m := range mods {
		v, err := ListVersions(ctx, repo, m)
		if err != nil {
			return nil, err
		}
		lists[m.Dir] = v
	}
	return lists, nil
}

// Align raises, in each module of mods under repo, every module the others take at a
// higher version to the highest (go get, then go mod tidy), until they agree; what it
// runs is written to log. It returns the mismatches left, if rounds run out.
func Align(ctx context.Context, repo string, mods []Module, log io.Writer) ([]Mismatch, error) {
	for range 4 {
		lists, err := ListAll(ctx, repo, mods)
		if err != nil {
			return nil, err
		}
		left := Mismatches(lists)
		if len(left) == 0 {
			return nil, nil
		}
		for _, m := range mods {
			var gets []string
			for _, mm := range left {
				if v, ok := mm.By[m.Dir]; ok && v != mm.Highest {
					gets = append(gets, mm.Path+"@"+mm.Highest)
				}
			}
			if len(gets) == 0 {
				continue
			}
			fmt.Fprintf(log, "%s: go get %s\n", m.Dir, strings.Join(gets, " "))
			get, tidy := []string{"get"}, []string{"mod", "tidy"}
			if m.ModFile != "" {
				get, tidy = append(get, "-modfile="+m.ModFile), append(tidy, "-modfile="+m.ModFile)
			}
			if _, err := goCmd(ctx, repo, m.Dir, append(get, gets...)...); err != nil {
				return nil, err
			}
			if _, err := goCmd(ctx, repo, m.Dir, tidy...); err != nil {
				return nil, err
			}
		}
	}
	lists, err := ListAll(ctx, repo, mods)
	if err != nil {
		return nil, err
	}
	return Mismatches(lists), nil
}
