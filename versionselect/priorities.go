package versionselect

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

const (
	// DefaultConfigMapName is the ConfigMap that holds user priorities, as in Velero.
	DefaultConfigMapName = "enableapigroupversions"
	// ConfigMapKey is the data key read from that ConfigMap.
	ConfigMapKey = "restoreResourcesVersionPriority"
)

// Priorities are the user's version priorities per group-resource, highest first.
type Priorities map[schema.GroupResource][]string

// PriorityError names a malformed line of a priorities text.
type PriorityError struct {
	Line   int // 1-based
	Text   string
	Reason string
}

func (e *PriorityError) Error() string {
	return fmt.Sprintf("version priorities line %d %q: %s", e.Line, e.Text, e.Reason)
}

// ParseOptions control ParsePriorities.
type ParseOptions struct {
	// Lenient skips a malformed line with a warning instead of failing, as Velero does.
	Lenient bool
}

// ParsePriorities reads lines of the form
//
//	resource.group=v1,v2
//
// one per line: spaces are ignored, empty lines and lines starting with # are skipped,
// and core resources have no group (pods=v1). A malformed line is a *PriorityError;
// with ParseOptions.Lenient it is skipped and returned among the warnings instead.
func ParsePriorities(r io.Reader, opts ParseOptions) (Priorities, []*PriorityError, error) {
	out := Priorities{}
	firstLine := map[schema.GroupResource]int{}
	var warnings []*PriorityError
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		line := strings.Join(strings.Fields(text), "")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		gr, versions, reason := parseLine(line)
		if reason == "" {
			if prev, dup := firstLine[gr]; dup {
				reason = fmt.Sprintf("%s is already given on line %d", gr, prev)
			}
		}
		if reason != "" {
			perr := &PriorityError{Line: n, Text: text, Reason: reason}
			if !opts.Lenient {
				return nil, nil, perr
			}
			warnings = append(warnings, perr)
			continue
		}
		firstLine[gr] = n
		out[gr] = versions
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("version priorities: %w", err)
	}
	return out, warnings, nil
}

func parseLine(line string) (schema.GroupResource, []string, string) {
	key, list, ok := strings.Cut(line, "=")
	if !ok {
		return schema.GroupResource{}, nil, "missing '=' between resource.group and versions"
	}
	resource, group, _ := strings.Cut(key, ".")
	gr := schema.GroupResource{Group: group, Resource: resource}
	if resource == "" {
		return gr, nil, "no resource before '='"
	}
	if msgs := validation.IsDNS1123Label(resource); len(msgs) > 0 {
		return gr, nil, fmt.Sprintf("resource %q: %s", resource, strings.Join(msgs, "; "))
	}
	if group != "" {
		if msgs := validation.IsDNS1123Subdomain(group); len(msgs) > 0 {
			return gr, nil, fmt.Sprintf("group %q: %s", group, strings.Join(msgs, "; "))
		}
	}
	if list == "" {
		return gr, nil, "no versions after '='"
	}
	versions := strings.Split(list, ",")
	for i, v := range versions {
		if v == "" {
			return gr, nil, fmt.Sprintf("version %d is empty", i+1)
		}
		if msgs := validation.IsDNS1035Label(v); len(msgs) > 0 {
			return gr, nil, fmt.Sprintf("version %q: %s", v, strings.Join(msgs, "; "))
		}
		if slices.Contains(versions[:i], v) {
			return gr, nil, fmt.Sprintf("version %q is listed twice", v)
		}
	}
	return gr, versions, ""
}

// ReadPrioritiesFile parses the priorities in a file.
func ReadPrioritiesFile(path string, opts ParseOptions) (Priorities, []*PriorityError, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	p, w, err := ParsePriorities(f, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, w, nil
}

// LoadPriorities reads the priorities from a ConfigMap (name defaults to
// DefaultConfigMapName), from its ConfigMapKey entry, or from its only entry when it has
// one under another key. A ConfigMap that does not exist means no user priorities.
func LoadPriorities(ctx context.Context, cms corev1client.ConfigMapsGetter, namespace, name string, opts ParseOptions) (Priorities, []*PriorityError, error) {
	if name == "" {
		name = DefaultConfigMapName
	}
	cm, err := cms.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Priorities{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("version priorities ConfigMap %s/%s: %w", namespace, name, err)
	}
	text, ok := cm.Data[ConfigMapKey]
	if !ok {
		if len(cm.Data) != 1 {
			keys := make([]string, 0, len(cm.Data))
			for k := range cm.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, nil, fmt.Errorf("version priorities ConfigMap %s/%s: no key %q (keys: %v)", namespace, name, ConfigMapKey, keys)
		}
		for _, v := range cm.Data {
			text = v
		}
	}
	p, w, err := ParsePriorities(strings.NewReader(text), opts)
	if err != nil {
		return nil, nil, fmt.Errorf("ConfigMap %s/%s: %w", namespace, name, err)
	}
	return p, w, nil
}
