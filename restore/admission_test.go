package restore

import (
	"context"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two restores into one namespace run together when they touch different objects; one
// that touches what another operation writes waits for it, and says for whom.
func TestRestoresAdmittedByWhatTheyTouch(t *testing.T) {
	b := shop(t)
	tgt := shopTarget(t)
	ctx := context.Background()
	var adm admission.Local
	// Another operation is writing the shop's settings.
	holding, err := adm.Admit(ctx, admission.Operation{ID: "someone-else", Kind: "restore",
		Writes: manifest.NewSet(manifest.ID{Resource: "configmaps", Namespace: "shop", Name: "settings"})})
	require.NoError(t, err)

	// The Secrets of shop: nothing in common with it. Both need the Namespace, which
	// neither changes when it exists.
	secrets := Options{Retry: fastRetry, Admitter: &adm, Name: "secrets-only", Filter: filter.Spec{IncludeResources: []string{"secrets"}},
		OnAdmissionWait: func(cs []admission.Conflict) { t.Errorf("secrets-only waited for %v", cs) }}
	rep, err := Run(ctx, tgt, b, secrets)
	require.NoError(t, err)
	assert.True(t, rep.OK())

	// The ConfigMaps: settings is being written by someone else.
	p, err := PlanRestore(ctx, tgt, b, Options{Admitter: &adm, Name: "configmaps", Filter: filter.Spec{IncludeResources: []string{"cm"}}})
	require.NoError(t, err)
	require.Len(t, p.Conflicts, 1, "the plan names whom the restore would wait for")
	assert.Equal(t, "someone-else", p.Conflicts[0].ID)

	waited := make(chan []admission.Conflict, 1)
	done := make(chan *Report, 1)
	go func() {
		rep, err := Run(ctx, tgt, b, Options{Retry: fastRetry, Admitter: &adm, Name: "configmaps",
			Filter: filter.Spec{IncludeResources: []string{"cm"}}, OnAdmissionWait: func(cs []admission.Conflict) { waited <- cs }})
		assert.NoError(t, err)
		done <- rep
	}()
	cs := <-waited
	require.Len(t, cs, 1)
	assert.Equal(t, []manifest.ID{{Resource: "configmaps", Namespace: "shop", Name: "settings"}}, cs[0].Examples)
	select {
	case <-done:
		t.Fatal("restored while another operation writes what it writes")
	case <-time.After(50 * time.Millisecond):
	}
	holding()
	rep = <-done
	assert.True(t, rep.OK())
	cs2, err := adm.Conflicts(ctx, admission.Operation{ID: "q", Writes: manifest.NewSet(manifest.ID{Resource: "configmaps", Namespace: "shop", Name: "settings"})})
	require.NoError(t, err)
	assert.Empty(t, cs2, "the restores released what they held")
}
