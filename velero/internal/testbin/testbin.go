// Package testbin builds, once a process, the executables the velero module's tests
// run: the plugins of test/velero (written with Velero's own plugin framework) and the
// velero command.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// veleroModule is test/velero, the module pinned to Velero's own dependencies.
func veleroModule() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "test", "velero")
}

// build builds pkg of test/velero into a temporary directory as name.
func build(name, pkg string) (string, error) {
	dir, err := os.MkdirTemp("", "restoregraph-"+name)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = veleroModule()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &BuildError{string(out), err}
	}
	return bin, nil
}

// BuildError is a build that failed, with what the go command printed.
type BuildError struct {
	Output string
	Err    error
}

func (e *BuildError) Error() string { return e.Err.Error() + "\n" + e.Output }

var plugins = sync.OnceValues(func() (string, error) { return build("testplugins", "./cmd/testplugins") })

// Plugins is the executable of test/velero's plugins: RestoreItemActions (v1 and v2)
// and an object store over a directory.
func Plugins(t testing.TB) string {
	t.Helper()
	bin, err := plugins()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var dirDisks = sync.OnceValues(func() (string, error) { return build("dirdisks", "./cmd/dirdisks") })

// DirDisks is the executable of test/velero's VolumeSnapshotter over a directory
// (example.io/dir-disks).
func DirDisks(t testing.TB) string {
	t.Helper()
	bin, err := dirDisks()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var velero = sync.OnceValues(func() (string, error) {
	if dir := os.Getenv("RESTOREGRAPH_VELERO_BIN"); dir != "" {
		return filepath.Join(dir, "velero"), nil
	}
	return build("velero", "github.com/vmware-tanzu/velero/cmd/velero")
})

// Velero is the velero command: $RESTOREGRAPH_VELERO_BIN/velero (make builds it), or
// built here from test/velero.
func Velero(t testing.TB) string {
	t.Helper()
	bin, err := velero()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
