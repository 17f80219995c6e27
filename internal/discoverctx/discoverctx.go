// Package discoverctx asks client-go's discovery under a context, whichever client-go
// release the library is built with. Releases from v0.37 take the context in their
// ...WithContext methods, and are asked through them. Older releases take none: their
// request runs apart, the caller returns as soon as its context ends, and the request
// is left to end on its own (when the server answers or the client's timeout passes).
package discoverctx

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupsAndResources is the discovery method every client-go release has.
type GroupsAndResources interface {
	ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
}

// Groups is what the discovery of one group version at a time needs.
type Groups interface {
	ServerGroups() (*metav1.APIGroupList, error)
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// ServerGroupsAndResources is d's ServerGroupsAndResources under ctx.
func ServerGroupsAndResources(ctx context.Context, d GroupsAndResources) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	if dc, ok := d.(interface {
		ServerGroupsAndResourcesWithContext(context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
	}); ok {
		return dc.ServerGroupsAndResourcesWithContext(ctx)
	}
	type both struct {
		groups []*metav1.APIGroup
		lists  []*metav1.APIResourceList
	}
	r, err := apart(ctx, func() (both, error) {
		g, l, err := d.ServerGroupsAndResources()
		return both{g, l}, err
	})
	return r.groups, r.lists, err
}

// ServerGroups is d's ServerGroups under ctx.
func ServerGroups(ctx context.Context, d Groups) (*metav1.APIGroupList, error) {
	if dc, ok := d.(interface {
		ServerGroupsWithContext(context.Context) (*metav1.APIGroupList, error)
	}); ok {
		return dc.ServerGroupsWithContext(ctx)
	}
	return apart(ctx, d.ServerGroups)
}

// ServerResourcesForGroupVersion is d's ServerResourcesForGroupVersion under ctx.
func ServerResourcesForGroupVersion(ctx context.Context, d Groups, groupVersion string) (*metav1.APIResourceList, error) {
	if dc, ok := d.(interface {
		ServerResourcesForGroupVersionWithContext(context.Context, string) (*metav1.APIResourceList, error)
	}); ok {
		return dc.ServerResourcesForGroupVersionWithContext(ctx, groupVersion)
	}
	return apart(ctx, func() (*metav1.APIResourceList, error) { return d.ServerResourcesForGroupVersion(groupVersion) })
}

// apart runs req, a request that takes no context, and returns its answer, or ctx's
// error as soon as ctx ends. A request that would end with ctx is not started.
func apart[T any](ctx context.Context, req func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	go func() {
		v, err := req()
		done <- answer{v, err}
	}()
	select {
	case a := <-done:
		return a.v, a.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
