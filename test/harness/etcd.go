package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// startEtcdCluster starts an etcd cluster of n members, etcd-0 to etcd-(n-1), each with
// its data in c's directory, and returns their client URLs, comma-separated, once each
// answers.
func (c *Cluster) startEtcdCluster(ctx context.Context, path string, n int, quota int64) (string, error) {
	var clients []string
	err := c.onFreePorts(2*n, func(ports []int) error {
		clients = clients[:0]
		var initial []string
		for i := range n {
			initial = append(initial, fmt.Sprintf("etcd-%d=http://127.0.0.1:%d", i, ports[2*i+1]))
		}
		for i := range n {
			client, peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]), fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
			clients = append(clients, client)
			name := fmt.Sprintf("etcd-%d", i)
			dataDir := filepath.Join(c.dir, name)
			if err := os.RemoveAll(dataDir); err != nil {
				return err
			}
			args := []string{"--data-dir", dataDir, "--name", name,
				"--listen-client-urls", client, "--advertise-client-urls", client,
				"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
				"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new", "--log-level", "warn"}
			if quota > 0 {
				args = append(args, "--quota-backend-bytes", strconv.FormatInt(quota, 10))
			}
			if err := c.start(name, path, args...); err != nil {
				return err
			}
		}
		for i, client := range clients {
			if err := c.waitHTTP(ctx, fmt.Sprintf("etcd-%d", i), &http.Client{}, client+"/health", "", 30*time.Second); err != nil {
				return err
			}
		}
		return nil
	})
	c.etcdClients = clients
	return strings.Join(clients, ","), err
}

// EtcdLeader names the member of a cluster of several (Options.EtcdMembers) that leads
// it now, as the members that answer say.
func (c *Cluster) EtcdLeader(ctx context.Context) (string, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	for i, url := range c.etcdClients {
		// etcd's gRPC gateway: Maintenance.Status, whose IDs are JSON strings.
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v3/maintenance/status", bytes.NewReader([]byte("{}")))
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			continue // a member that is down
		}
		var status struct {
			Header struct {
				MemberID string `json:"member_id"`
			} `json:"header"`
			Leader string `json:"leader"`
		}
		err = json.NewDecoder(resp.Body).Decode(&status)
		resp.Body.Close()
		if err != nil || status.Leader == "" || status.Leader == "0" {
			continue
		}
		if status.Header.MemberID == status.Leader {
			return fmt.Sprintf("etcd-%d", i), nil
		}
	}
	return "", fmt.Errorf("no etcd member says it leads (of %d)", len(c.etcdClients))
}
