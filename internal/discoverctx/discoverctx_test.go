package discoverctx

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// old is discovery as client-go's releases before v0.37 have it: no context; it answers
// when release is closed.
type old struct{ release chan struct{} }

func (o old) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	<-o.release
	return []*metav1.APIGroup{{Name: "apps"}}, nil, nil
}

func (o old) ServerGroups() (*metav1.APIGroupList, error) {
	<-o.release
	return &metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "apps"}}}, nil
}

func (o old) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	<-o.release
	return &metav1.APIResourceList{GroupVersion: gv}, nil
}

// withContext has the context-taking methods too, and answers with what its context holds.
type withContext struct{ old }

type key struct{}

func (withContext) ServerGroupsAndResourcesWithContext(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return []*metav1.APIGroup{{Name: ctx.Value(key{}).(string)}}, nil, nil
}

func (withContext) ServerGroupsWithContext(ctx context.Context) (*metav1.APIGroupList, error) {
	return &metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: ctx.Value(key{}).(string)}}}, nil
}

func (withContext) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	return &metav1.APIResourceList{GroupVersion: ctx.Value(key{}).(string) + "/" + gv}, nil
}

// A discovery with the context-taking methods is asked through them, with the caller's
// context.
func TestAskedThroughTheContextWhenItCan(t *testing.T) {
	ctx := context.WithValue(context.Background(), key{}, "from-context")
	d := withContext{old{make(chan struct{})}} // the old methods would block
	groups, _, err := ServerGroupsAndResources(ctx, d)
	require.NoError(t, err)
	assert.Equal(t, "from-context", groups[0].Name)
	list, err := ServerGroups(ctx, d)
	require.NoError(t, err)
	assert.Equal(t, "from-context", list.Groups[0].Name)
	res, err := ServerResourcesForGroupVersion(ctx, d, "apps/v1")
	require.NoError(t, err)
	assert.Equal(t, "from-context/apps/v1", res.GroupVersion)
}

// A discovery without them answers as it is, and a caller whose context ends while it
// has not answered returns at once with the context's error.
func TestOldDiscoveryEndsWithTheContext(t *testing.T) {
	answering := old{make(chan struct{})}
	close(answering.release)
	groups, _, err := ServerGroupsAndResources(context.Background(), answering)
	require.NoError(t, err)
	assert.Equal(t, "apps", groups[0].Name)
	res, err := ServerResourcesForGroupVersion(context.Background(), answering, "apps/v1")
	require.NoError(t, err)
	assert.Equal(t, "apps/v1", res.GroupVersion)

	hung := old{make(chan struct{})}
	t.Cleanup(func() { close(hung.release) })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err = ServerGroupsAndResources(ctx, hung)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = ServerGroups(ctx, hung)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = ServerResourcesForGroupVersion(ctx, hung, "apps/v1")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
