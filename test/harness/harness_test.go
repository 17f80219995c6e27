package harness

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An etcd whose port another process took between freePorts and its bind (an outgoing
// connection's own port, say, on a machine busy with other servers) is started again
// on other ports: it starts, and only the etcd that answers is left to stop.
func TestEtcdStartsAgainOnAPortTaken(t *testing.T) {
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("no etcd: install Debian's etcd-server (make integration does)")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	go func() { // what reaches it is not etcd
		for {
			conn, err := taken.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	picks := 0
	pickPorts = func(n int) ([]int, error) {
		ports, err := freePorts(n)
		if picks++; picks == 1 && err == nil {
			ports[0] = taken.Addr().(*net.TCPAddr).Port
		}
		return ports, err
	}
	defer func() { pickPorts = freePorts }()

	ps := &processes{dir: t.TempDir()}
	defer ps.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, err := ps.startEtcd(ctx, etcd, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, picks, "started again once")
	assert.NotContains(t, url, ":"+strconv.Itoa(taken.Addr().(*net.TCPAddr).Port))
	require.Len(t, ps.procs, 1, "the etcd that exited is not kept")
	select {
	case <-ps.procs[0].exited:
		t.Fatal("the etcd kept has exited")
	default:
	}

	// Another failure is not tried again.
	tries := 0
	err = ps.onFreePorts(1, func([]int) error { tries++; return assert.AnError })
	assert.ErrorIs(t, err, assert.AnError)
	assert.Equal(t, 1, tries)
}

// A cluster of three etcd members has a leader, and another member leads once it is
// killed; started again, it rejoins.
func TestEtcdClusterElectsAnotherLeader(t *testing.T) {
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("no etcd: install Debian's etcd-server (make integration does)")
	}
	c := &Cluster{dir: t.TempDir()}
	c.processes.dir = c.dir
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	urls, err := c.startEtcdCluster(ctx, etcd, 3, 0)
	require.NoError(t, err)
	assert.Len(t, strings.Split(urls, ","), 3)
	leader, err := c.EtcdLeader(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Kill(leader))
	var next string
	require.Eventually(t, func() bool {
		next, err = c.EtcdLeader(ctx)
		return err == nil && next != leader
	}, 30*time.Second, 100*time.Millisecond, "another member leads")
	require.NoError(t, c.Restart(leader))
	require.NoError(t, c.waitHTTP(ctx, leader, &http.Client{}, c.etcdClients[leader[len(leader)-1]-'0']+"/health", "", 30*time.Second))
}
