package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	riav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v2"
)

// relabel (v1) labels every ConfigMap it restores restored-by=velero-plugin.
type relabel struct{}

func newRelabel(logrus.FieldLogger) (any, error) { return relabel{}, nil }

func (relabel) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (relabel) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["restored-by"] = "velero-plugin"
	u.SetLabels(labels)
	return velero.NewRestoreItemActionExecuteOutput(u), nil
}

// needsSettings (v2): a Secret named creds needs the ConfigMap settings first, and
// waits until the plugin has been asked three times whether it is ready.
type needsSettings struct{ polls atomic.Int32 }

func newNeedsSettings(logrus.FieldLogger) (any, error) { return &needsSettings{}, nil }

func (*needsSettings) Name() string { return "example.io/needs-settings" }

func (*needsSettings) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"secrets"}}, nil
}

func (*needsSettings) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	out := velero.NewRestoreItemActionExecuteOutput(u)
	if u.GetName() == "creds" {
		out.AdditionalItems = []velero.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "configmaps"}, Namespace: u.GetNamespace(), Name: "settings"}}
		out.WaitForAdditionalItems = true
		out.AdditionalItemsReadyTimeout = time.Minute
	}
	return out, nil
}

func (*needsSettings) Progress(string, *api.Restore) (velero.OperationProgress, error) {
	return velero.OperationProgress{}, riav2.AsyncOperationsNotSupportedError()
}

func (*needsSettings) Cancel(string, *api.Restore) error { return nil }

func (p *needsSettings) AreAdditionalItemsReady([]velero.ResourceIdentifier, *api.Restore) (bool, error) {
	return p.polls.Add(1) >= 3, nil
}

// skipSecrets (v1) asks to leave out the Secret named skip-me.
type skipSecrets struct{}

func newSkipSecrets(logrus.FieldLogger) (any, error) { return skipSecrets{}, nil }

func (skipSecrets) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"secrets"}}, nil
}

func (skipSecrets) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	out := velero.NewRestoreItemActionExecuteOutput(u)
	if u.GetName() == "skip-me" {
		out = out.WithoutRestore()
	}
	return out, nil
}

// failOnFlags (v1) fails for the ConfigMap named flags.
type failOnFlags struct{}

func newFailOnFlags(logrus.FieldLogger) (any, error) { return failOnFlags{}, nil }

func (failOnFlags) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (failOnFlags) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	if u.GetName() == "flags" {
		return nil, errors.New("flags are not to be restored by this plugin")
	}
	return velero.NewRestoreItemActionExecuteOutput(u), nil
}

// crashOnce (v1) kills its own process on its first call for the ConfigMap named
// crash, once per marker directory ($CRASH_MARKER_DIR), as a plugin with a fatal bug
// would.
type crashOnce struct{}

func newCrashOnce(logrus.FieldLogger) (any, error) { return crashOnce{}, nil }

func (crashOnce) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (crashOnce) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	if dir := os.Getenv("CRASH_MARKER_DIR"); dir != "" && u.GetName() == "crash" {
		marker := filepath.Join(dir, "crashed")
		if _, err := os.Stat(marker); err != nil {
			os.WriteFile(marker, nil, 0o644)
			os.Exit(3)
		}
	}
	return velero.NewRestoreItemActionExecuteOutput(u), nil
}

// annotateAll (v1) annotates every object it restores: the cost of a plugin on every
// object, for the benchmarks.
type annotateAll struct{}

func newAnnotateAll(logrus.FieldLogger) (any, error) { return annotateAll{}, nil }

func (annotateAll) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"*"}}, nil
}

func (annotateAll) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["example.io/seen"] = "yes"
	u.SetAnnotations(ann)
	return velero.NewRestoreItemActionExecuteOutput(u), nil
}

// hangOnHang (v1) never answers for the ConfigMap named hang, as a plugin stuck on a
// lock or a call of its own would.
type hangOnHang struct{}

func newHangOnHang(logrus.FieldLogger) (any, error) { return hangOnHang{}, nil }

func (hangOnHang) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (hangOnHang) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	if u.GetName() == "hang" {
		time.Sleep(24 * time.Hour)
	}
	return velero.NewRestoreItemActionExecuteOutput(u), nil
}

// garbage (v1) answers for the ConfigMap named garbage with what is no Kubernetes
// object (no apiVersion, kind or metadata), as a plugin with a bug might.
type garbage struct{}

func newGarbage(logrus.FieldLogger) (any, error) { return garbage{}, nil }

func (garbage) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (garbage) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	if u.GetName() == "garbage" {
		u = &unstructured.Unstructured{Object: map[string]any{"garbage": []any{"not", "an", "object"}}}
	}
	return velero.NewRestoreItemActionExecuteOutput(u), nil
}

// copyVolume (v2) starts an asynchronous operation for each PersistentVolumeClaim
// annotated example.io/copy, as a plugin that copies a volume's data would: "DURATION"
// completes that long after Execute, "fail" fails, "never" never completes. The
// operation's ID carries its deadline, so its Progress survives a restart of the plugin
// or of the restore. Execute and Cancel append a line to $ASYNC_LOG (execute ID,
// cancel ID), so that a test counts them across processes; a cancelled operation
// reports it.
type copyVolume struct{}

func newCopyVolume(logrus.FieldLogger) (any, error) { return copyVolume{}, nil }

func (copyVolume) Name() string { return "example.io/copy-volume" }

func (copyVolume) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"persistentvolumeclaims"}}, nil
}

func (copyVolume) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	out := velero.NewRestoreItemActionExecuteOutput(u)
	how, ok := u.GetAnnotations()["example.io/copy"]
	if !ok {
		return out, nil
	}
	deadline := "never"
	switch how {
	case "never", "fail":
		deadline = how
	default:
		d, err := time.ParseDuration(how)
		if err != nil {
			return nil, fmt.Errorf("example.io/copy: %w", err)
		}
		deadline = strconv.FormatInt(time.Now().Add(d).UnixNano(), 10)
	}
	out.OperationID = strings.Join([]string{"copy", u.GetNamespace(), u.GetName(), deadline}, "/")
	asyncLog("execute " + out.OperationID)
	return out, nil
}

func (copyVolume) Progress(id string, _ *api.Restore) (velero.OperationProgress, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 4 || parts[0] != "copy" {
		return velero.OperationProgress{}, fmt.Errorf("no such operation %q", id)
	}
	if cancelled(id) {
		return velero.OperationProgress{Completed: true, Err: "cancelled"}, nil
	}
	p := velero.OperationProgress{OperationUnits: "GB", NTotal: 10, Description: "copying " + parts[2]}
	switch parts[3] {
	case "never":
		return p, nil
	case "fail":
		return velero.OperationProgress{Completed: true, Err: "the source snapshot is gone"}, nil
	}
	ns, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return velero.OperationProgress{}, fmt.Errorf("no such operation %q", id)
	}
	if !time.Now().Before(time.Unix(0, ns)) {
		p.Completed, p.NCompleted = true, p.NTotal
	}
	return p, nil
}

func (copyVolume) Cancel(id string, _ *api.Restore) error {
	asyncLog("cancel " + id)
	return nil
}

func (copyVolume) AreAdditionalItemsReady([]velero.ResourceIdentifier, *api.Restore) (bool, error) {
	return true, nil
}

// asyncLog appends line to $ASYNC_LOG, when set.
func asyncLog(line string) {
	path := os.Getenv("ASYNC_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(line + "\n")
}

// cancelled reports whether $ASYNC_LOG says id was cancelled.
func cancelled(id string) bool {
	data, err := os.ReadFile(os.Getenv("ASYNC_LOG"))
	return err == nil && slices.Contains(strings.Split(string(data), "\n"), "cancel "+id)
}
