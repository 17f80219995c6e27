// Package hook is Velero's restore hooks: init containers added to a Pod as it is
// restored, and commands run in a Pod's container once it is running (exec hooks),
// each from the Pod's annotations (init.hook.restore.velero.io/*,
// post.hook.restore.velero.io/*) or else from a Restore's spec.hooks, as Velero reads
// them. A Pod with hook annotations of a kind takes that kind from its annotations
// alone, as in Velero.
//
// An Executor runs an exec hook's command: Remote through the API server's pods/exec
// subresource (a kubelet answers it), or the caller's own.
package hook

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// The Pod annotations Velero reads its restore hooks from.
const (
	ExecContainerAnnotation    = "post.hook.restore.velero.io/container"
	ExecCommandAnnotation      = "post.hook.restore.velero.io/command"
	ExecOnErrorAnnotation      = "post.hook.restore.velero.io/on-error"
	ExecTimeoutAnnotation      = "post.hook.restore.velero.io/exec-timeout"
	ExecWaitTimeoutAnnotation  = "post.hook.restore.velero.io/wait-timeout"
	ExecWaitForReadyAnnotation = "post.hook.restore.velero.io/wait-for-ready"
	InitImageAnnotation        = "init.hook.restore.velero.io/container-image"
	InitNameAnnotation         = "init.hook.restore.velero.io/container-name"
	InitCommandAnnotation      = "init.hook.restore.velero.io/command"
)

// OnError says what a failed exec hook does: Continue (Velero's default) records it and
// runs the Pod's next hooks; Fail fails the Pod, so its dependents are skipped.
type OnError string

const (
	Continue OnError = "Continue"
	Fail     OnError = "Fail"
)

// DefaultExecTimeout bounds a command whose hook gives no timeout, as Velero's.
const DefaultExecTimeout = 30 * time.Second

// Exec is an exec hook: Command run in Container (default the Pod's first) once it is
// running, or ready with WaitForReady. WaitTimeout bounds the wait (zero: the restore's
// item timeout), ExecTimeout the command (zero: DefaultExecTimeout).
type Exec struct {
	Container    string        `json:"container,omitempty"`
	Command      []string      `json:"command"`
	OnError      OnError       `json:"onError,omitempty"`
	ExecTimeout  time.Duration `json:"execTimeout,omitempty"`
	WaitTimeout  time.Duration `json:"waitTimeout,omitempty"`
	WaitForReady bool          `json:"waitForReady,omitempty"`
}

// Init is an init hook: containers put before the Pod's own init containers.
type Init struct {
	InitContainers []map[string]any `json:"initContainers"`
}

// Hook is one of a Resource's hooks, an exec or an init hook.
type Hook struct {
	Exec *Exec `json:"exec,omitempty"`
	Init *Init `json:"init,omitempty"`
}

// Resource is one entry of a Restore's spec.hooks.resources: hooks for the Pods of the
// namespaces (after mapping, as Velero judges them) and labels it selects.
type Resource struct {
	Name               string   `json:"name"`
	IncludedNamespaces []string `json:"includedNamespaces,omitempty"`
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// LabelSelector is a label selector in its string form; "" selects every Pod.
	LabelSelector string `json:"labelSelector,omitempty"`
	PostHooks     []Hook `json:"postHooks"`
}

// Spec is a Restore's hooks; the zero value has none, and a Pod's annotations still
// apply.
type Spec struct {
	Resources []Resource `json:"resources,omitempty"`
}

// Check reports the first entry that cannot apply, naming it.
func (s *Spec) Check() error {
	if s == nil {
		return nil
	}
	for i, r := range s.Resources {
		if _, err := labels.Parse(r.LabelSelector); err != nil {
			return fmt.Errorf("hooks.resources[%d] (%s): labelSelector: %w", i, r.Name, err)
		}
		for j, h := range r.PostHooks {
			switch {
			case (h.Exec == nil) == (h.Init == nil):
				return fmt.Errorf("hooks.resources[%d] (%s).postHooks[%d]: one of exec and init", i, r.Name, j)
			case h.Exec != nil && len(h.Exec.Command) == 0:
				return fmt.Errorf("hooks.resources[%d] (%s).postHooks[%d].exec.command: empty", i, r.Name, j)
			case h.Exec != nil && h.Exec.OnError != "" && h.Exec.OnError != Continue && h.Exec.OnError != Fail:
				return fmt.Errorf("hooks.resources[%d] (%s).postHooks[%d].exec.onError: %q, want Continue or Fail", i, r.Name, j, h.Exec.OnError)
			}
			if h.Init != nil {
				for k, c := range h.Init.InitContainers {
					if name, _ := c["name"].(string); name == "" {
						return fmt.Errorf("hooks.resources[%d] (%s).postHooks[%d].init.initContainers[%d]: no name", i, r.Name, j, k)
					}
				}
			}
		}
	}
	return nil
}

// applies reports whether r selects a Pod of namespace ns (where it is restored) with
// these labels.
func (r Resource) applies(ns string, podLabels map[string]string) bool {
	if slices.Contains(r.ExcludedNamespaces, ns) {
		return false
	}
	if len(r.IncludedNamespaces) > 0 && !slices.Contains(r.IncludedNamespaces, "*") && !slices.Contains(r.IncludedNamespaces, ns) {
		return false
	}
	sel, err := labels.Parse(r.LabelSelector)
	return err == nil && sel.Matches(labels.Set(podLabels))
}

// Named is a hook with where it came from: "<annotations>" or the spec's resource name.
type Named[T any] struct {
	Source string `json:"source"`
	Hook   T      `json:"hook"`
}

const fromAnnotations = "<annotations>"

// InitContainers returns the init containers hooks add to pod, restored into namespace
// ns: from its annotations when it has init.hook.restore.velero.io/container-image, or
// else from the spec's init hooks that apply to it. name makes a container name when
// the annotations give none.
func (s *Spec) InitContainers(pod *unstructured.Unstructured, ns string) []Named[map[string]any] {
	ann := annotationsOf(pod)
	if image := ann.get(InitImageAnnotation); image != "" {
		name := ann.get(InitNameAnnotation)
		if name == "" {
			name = "restore-init-" + strings.ToLower(pod.GetName())
		}
		c := map[string]any{"name": name, "image": image}
		if cmd := ann.get(InitCommandAnnotation); cmd != "" {
			c["command"] = toAny(parseCommand(cmd))
		}
		return []Named[map[string]any]{{fromAnnotations, c}}
	}
	var out []Named[map[string]any]
	if s == nil {
		return nil
	}
	for _, r := range s.Resources {
		if !r.applies(ns, pod.GetLabels()) {
			continue
		}
		for _, h := range r.PostHooks {
			if h.Init != nil {
				for _, c := range h.Init.InitContainers {
					out = append(out, Named[map[string]any]{r.Name, c})
				}
			}
		}
	}
	return out
}

// Execs returns the exec hooks of pod, restored into namespace ns: from its annotations
// when it has post.hook.restore.velero.io/command, or else from the spec's exec hooks
// that apply to it; each with its container named. A malformed annotation is an error
// naming it, where Velero ignores it.
func (s *Spec) Execs(pod *unstructured.Unstructured, ns string) ([]Named[Exec], error) {
	ann := annotationsOf(pod)
	if cmd := ann.get(ExecCommandAnnotation); cmd != "" {
		e := Exec{Container: ann.get(ExecContainerAnnotation), Command: parseCommand(cmd), OnError: OnError(ann.get(ExecOnErrorAnnotation))}
		if e.OnError != "" && e.OnError != Continue && e.OnError != Fail {
			return nil, fmt.Errorf("%s: %q, want Continue or Fail", ExecOnErrorAnnotation, e.OnError)
		}
		var err error
		for _, d := range []struct {
			key  string
			into *time.Duration
		}{{ExecTimeoutAnnotation, &e.ExecTimeout}, {ExecWaitTimeoutAnnotation, &e.WaitTimeout}} {
			if v := ann.get(d.key); v != "" {
				if *d.into, err = time.ParseDuration(v); err != nil {
					return nil, fmt.Errorf("%s: %w", d.key, err)
				}
			}
		}
		if v := ann.get(ExecWaitForReadyAnnotation); v != "" {
			if e.WaitForReady, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("%s: %w", ExecWaitForReadyAnnotation, err)
			}
		}
		if e.Container == "" {
			e.Container = firstContainer(pod)
		}
		return []Named[Exec]{{fromAnnotations, e}}, nil
	}
	if s == nil {
		return nil, nil
	}
	var out []Named[Exec]
	for _, r := range s.Resources {
		if !r.applies(ns, pod.GetLabels()) {
			continue
		}
		for _, h := range r.PostHooks {
			if h.Exec != nil {
				e := *h.Exec
				if e.Container == "" {
					e.Container = firstContainer(pod)
				}
				out = append(out, Named[Exec]{r.Name, e})
			}
		}
	}
	return out, nil
}

// parseCommand reads a command annotation as Velero does: a JSON array, or else the
// whole value as one word.
func parseCommand(v string) []string {
	var cmd []string
	if strings.HasPrefix(v, "[") && json.Unmarshal([]byte(v), &cmd) == nil {
		return cmd
	}
	return []string{v}
}

// Annotated reports whether pod's annotations ask for a hook, an init container
// (init.hook.restore.velero.io/container-image) or an exec hook
// (post.hook.restore.velero.io/command): InitContainers and Execs then read its spec.
func Annotated(pod *unstructured.Unstructured) bool {
	ann := annotationsOf(pod)
	return ann.get(InitImageAnnotation) != "" || ann.get(ExecCommandAnnotation) != ""
}

// annotations are an object's annotations as it holds them: GetAnnotations copies them
// into a map of its own, for each Pod restored.
type annotations map[string]any

func annotationsOf(obj *unstructured.Unstructured) annotations {
	md, _ := obj.Object["metadata"].(map[string]any)
	a, _ := md["annotations"].(map[string]any)
	return a
}

// get returns the annotation key, "" when it is not a string.
func (a annotations) get(key string) string {
	v, _ := a[key].(string)
	return v
}

// firstContainer is the name of pod's first container, or "". It is read only for a
// hook that names none: a Pod restored with no hook may have a spec not decoded.
func firstContainer(pod *unstructured.Unstructured) string {
	spec, _ := pod.Object["spec"].(map[string]any)
	if cs, _ := spec["containers"].([]any); len(cs) > 0 {
		if c, ok := cs[0].(map[string]any); ok {
			name, _ := c["name"].(string)
			return name
		}
	}
	return ""
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
