package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/restoregraph/restoregraph/memcluster/discovery"
	"github.com/stretchr/testify/require"
	k8sdiscovery "k8s.io/client-go/discovery"
)

// TestRecordDiscovery writes the real server's discovery to the file memcluster embeds,
// when RESTOREGRAPH_WRITE_DISCOVERY names it. The contract suite then checks every
// server against it.
func TestRecordDiscovery(t *testing.T) {
	out := os.Getenv("RESTOREGRAPH_WRITE_DISCOVERY")
	if out == "" {
		t.Skip("RESTOREGRAPH_WRITE_DISCOVERY is not set")
	}
	disc, err := k8sdiscovery.NewDiscoveryClientForConfig(cfg())
	require.NoError(t, err)
	groups, err := disc.ServerGroups()
	require.NoError(t, err)
	_, lists, err := disc.ServerGroupsAndResources()
	require.NoError(t, err)
	// A server built from the module reports no version of its own: the directory of
	// the binaries is named after the module's.
	version := strings.TrimPrefix(filepath.Base(os.Getenv("RESTOREGRAPH_KUBE_BIN")), "kube-")
	rec := discovery.Record("kube-apiserver "+version, groups, lists)
	data, err := json.MarshalIndent(rec, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, append(data, '\n'), 0o644))
}
