package plugin

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	v1 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v1"
	v2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Interface versions of RestoreItemAction.
const (
	V1 = "v1"
	V2 = "v2"
)

// ErrAlreadyRegistered is wrapped when a name and version are registered twice.
var ErrAlreadyRegistered = errors.New("plugin already registered")

// NoAdapterError names a plugin none of whose registered versions can be used as the
// newest interface.
type NoAdapterError struct {
	Name     string
	Versions []string
}

func (e *NoAdapterError) Error() string {
	return fmt.Sprintf("plugin %q: no adapter to %s from the versions registered (%s)", e.Name, V2, strings.Join(e.Versions, ", "))
}

// Registry holds plugins by name and version. The zero value is empty and ready to use;
// it is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	plugins map[string]map[string]any // name -> version -> implementation
	order   []string                  // names in registration order: the order actions run
}

// Register adds impl as plugin name at interface version. impl must implement that
// version's interface (v1.RestoreItemAction for V1, v2.RestoreItemAction for V2);
// other versions are accepted and reported at lookup, so that a newer plugin fails
// with a clear error rather than at registration by an older binary.
func (r *Registry) Register(name, version string, impl any) error {
	if name == "" || impl == nil {
		return fmt.Errorf("plugin: register: name and implementation are required")
	}
	switch version {
	case V1:
		if _, ok := impl.(v1.RestoreItemAction); !ok {
			return fmt.Errorf("plugin %q: %T does not implement RestoreItemAction %s", name, impl, version)
		}
	case V2:
		if _, ok := impl.(v2.RestoreItemAction); !ok {
			return fmt.Errorf("plugin %q: %T does not implement RestoreItemAction %s", name, impl, version)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.plugins == nil {
		r.plugins = map[string]map[string]any{}
	}
	if r.plugins[name] == nil {
		r.plugins[name] = map[string]any{}
		r.order = append(r.order, name)
	}
	if _, dup := r.plugins[name][version]; dup {
		return fmt.Errorf("plugin %q %s: %w", name, version, ErrAlreadyRegistered)
	}
	r.plugins[name][version] = impl
	return nil
}

// Lookup returns plugin name as the newest interface.
func (r *Registry) Lookup(name string) (v2.RestoreItemAction, error) {
	r.mu.RLock()
	versions := r.plugins[name]
	r.mu.RUnlock()
	if versions == nil {
		return nil, fmt.Errorf("plugin %q is not registered", name)
	}
	if impl, ok := versions[V2]; ok {
		return impl.(v2.RestoreItemAction), nil
	}
	if impl, ok := versions[V1]; ok {
		return v2.AdaptV1(impl.(v1.RestoreItemAction)), nil
	}
	found := make([]string, 0, len(versions))
	for v := range versions {
		found = append(found, v)
	}
	sort.Strings(found)
	return nil, &NoAdapterError{Name: name, Versions: found}
}

// version is the interface version a lookup of name uses: the newest registered.
func (r *Registry) version(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if _, ok := r.plugins[name][V2]; ok {
		return V2
	}
	return V1
}

// Action is a plugin ready to run: its name, its newest interface and its parsed selector.
type Action struct {
	Name string
	// Version is the interface version it was registered at: V2, or V1 adapted.
	Version string
	// Selector is what AppliesTo said.
	Selector ria.ResourceSelector
	// SharesItem: the implementation says, as an ItemSharer, that it changes what lies
	// below the item's top level and metadata only by replacing it.
	SharesItem bool
	// ForgetsItems: the implementation says, as an ItemForgetter, that it keeps nothing
	// of the items it is given or returns once Execute has returned.
	ForgetsItems bool
	// TakesRaw: the implementation says, as a RawTaker, that it may be given an item
	// whose values below its top level but metadata are their JSON, not decoded.
	TakesRaw bool
	// ExecuteMaking is the implementation's, as a MapMakerUser; nil when it is not one.
	ExecuteMaking func(in *ria.ExecuteInput, maps MapMaker) (*ria.ExecuteOutput, error)
	v2.RestoreItemAction
	matcher *ria.Matcher
}

// ItemSharer is implemented by an action, registered in this process, that may be given
// an item whose values below its top level and metadata are shared with another object
// (the backup's): where it changes one, it puts a new map or slice in its place, and
// changes none it was given. A restore then gives it its item without a deep copy.
// Actions that do not say so, and every action in another process, are given an item
// of their own to change as they like.
type ItemSharer interface {
	SharesItem() bool
}

// ItemForgetter is implemented by an action, registered in this process, that keeps no
// part of the items it is given (the item and the backup's) nor of the item it returns
// once Execute has returned. A restore gives the maps of an object that only such
// actions were given to the objects decoded after it, once the object is restored.
// Actions that do not say so, and every action in another process, are given items
// the restore lets the collector have.
type ItemForgetter interface {
	ForgetsItems() bool
}

// RawTaker is implemented by an action, registered in this process, that may be given
// an item whose values of the top level but metadata are still their JSON, not decoded
// (a byte slice of a type that implements json.Marshaler), and that reads nothing of
// the backup's item but its metadata. It reads what it needs of such a value from its
// bytes, or decodes it, and leaves it, or puts another value in its place, as an
// ItemSharer does; the item it is given may then be the backup's item itself. A
// restore that asks nothing else of an object below its metadata then leaves those
// values undecoded, and the server is given them as they are.
type RawTaker interface {
	TakesRaw() bool
}

// MapMaker makes an empty map with room for n members.
type MapMaker interface {
	Map(n int) map[string]any
}

// BytesMaker is a MapMaker that also makes the byte slices an action writes a value's
// JSON into (a RawTaker's value written anew), an empty one with room for n bytes,
// taken back with the maps.
type BytesMaker interface {
	MapMaker
	Bytes(n int) []byte
}

// MapMakerUser is implemented by an action, registered in this process, that can make
// the maps it puts in an item with a MapMaker it is given (ExecuteMaking, which does
// what Execute does) rather than with make. A restore calls ExecuteMaking in place of
// Execute, with a MapMaker whose maps it takes back with those the object was decoded
// into, once the object is restored and no action that keeps items was given it, for
// the objects decoded after it.
type MapMakerUser interface {
	ExecuteMaking(in *ria.ExecuteInput, maps MapMaker) (*ria.ExecuteOutput, error)
}

// AppliesTo reports whether the action is called for an item.
func (a *Action) AppliesTo(gr schema.GroupResource, namespace string, itemLabels labels.Labels) bool {
	return a.matcher.Matches(gr, namespace, itemLabels)
}

// Actions returns every registered plugin as its newest interface, in registration
// order, with its selector parsed. A plugin that cannot be adapted, or whose AppliesTo
// fails or has a bad label selector, is an error naming it.
func (r *Registry) Actions() ([]*Action, error) {
	r.mu.RLock()
	names := slices.Clone(r.order)
	r.mu.RUnlock()
	var out []*Action
	for _, name := range names {
		impl, err := r.Lookup(name)
		if err != nil {
			return nil, err
		}
		sel, err := impl.AppliesTo()
		if err != nil {
			return nil, fmt.Errorf("plugin %q: AppliesTo: %w", name, err)
		}
		m, err := sel.Compile()
		if err != nil {
			return nil, fmt.Errorf("plugin %q: label selector %q: %w", name, sel.LabelSelector, err)
		}
		version := r.version(name)
		r.mu.RLock()
		registered := r.plugins[name][version]
		r.mu.RUnlock()
		sharer, shares := registered.(ItemSharer)
		forgetter, forgets := registered.(ItemForgetter)
		taker, takes := registered.(RawTaker)
		a := &Action{Name: name, Version: version, Selector: sel, SharesItem: shares && sharer.SharesItem(),
			ForgetsItems: forgets && forgetter.ForgetsItems(), TakesRaw: takes && taker.TakesRaw(),
			RestoreItemAction: impl, matcher: m}
		if maker, ok := registered.(MapMakerUser); ok {
			a.ExecuteMaking = maker.ExecuteMaking
		}
		out = append(out, a)
	}
	return out, nil
}
