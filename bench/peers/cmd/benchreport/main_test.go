package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lines as go test -bench printed them.
const sample = `goos: linux
pkg: github.com/restoregraph/restoregraph/bench/strategy
BenchmarkStrategies/chain-2 	       1	1922701107 ns/op	       387.0 bound-ms	       388.8 kapp-ms	         1.005 kapp/bound	       382.6 levels-ms	         0.9888 levels/bound	       200.0 nodes	       381.7 restoregraph-fifo-ms	         0.9864 restoregraph-fifo/bound	       387.3 restoregraph-ms	         1.001 restoregraph/bound	         0.9867 speedup-vs-velero	       382.1 velero-ms	         0.9876 velero/bound
pkg: github.com/restoregraph/restoregraph/scheduler
BenchmarkOverhead/nodes=100000/workers=1-2         	       3	  45742024 ns/op	       457.4 ns/node
pkg: github.com/restoregraph/restoregraph/bench/peers
BenchmarkOverhead/restoregraph/nodes=10000-2         	       2	   4010041 ns/op	       201.1 B/node	         0.008350 allocs/node	       401.0 ns/node
BenchmarkOverhead/terraform/nodes=10000-2            	       2	  66188915 ns/op	      3014 B/node	        23.07 allocs/node	      6619 ns/node
PASS
`

func TestTables(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, rs["strategy.Strategies"], 1)
	assert.Equal(t, "chain", rs["strategy.Strategies"][0].name)
	assert.Equal(t, 1.001, rs["strategy.Strategies"][0].metrics["restoregraph/bound"])

	var buf bytes.Buffer
	strategiesTable(&buf, rs["strategy.Strategies"], "today")
	assert.Contains(t, buf.String(), "| chain | 200 | 387.0 | 1.00 | 0.99 | 0.99 | 1.00 | 0.99 | 1.0× |")
	buf.Reset()
	require.Len(t, rs["peers.Overhead"], 2, "the scheduler's own BenchmarkOverhead is not a walker of the table")
	overheadTable(&buf, rs["peers.Overhead"], "today")
	assert.Contains(t, buf.String(), "| terraform | 10000 | 6619 | 23.07 | 3014 | 16.5 |")

	png := filepath.Join(t.TempDir(), "strategies.png")
	require.NoError(t, chart(png, rs["strategy.Strategies"], "today"))
	data, err := os.ReadFile(png)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte("\x89PNG")))
}

func TestParseRefusesABadMetric(t *testing.T) {
	_, err := parse(strings.NewReader("BenchmarkOverhead/x/nodes=1-2 1 5 ns/op NaNx ns/node\n"))
	assert.ErrorContains(t, err, `metric "ns/node"`)
}
