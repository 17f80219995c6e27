// Package harness runs a real control plane on loopback for the integration tests: etcd
// from Debian's etcd-server package, and kube-apiserver and kube-controller-manager
// (garbage collector and namespace controllers) built from the k8s.io/kubernetes module;
// where a test needs Pods to run, kube-scheduler and fake nodes from sigs.k8s.io/kwok;
// and where it needs Velero, an S3 server (versitygw) and the Velero server with its AWS
// object-store plugin (velero.go).
//
// Every process is started with a parent-death signal, so that none outlives the test
// binary, even when it is killed for a timeout; Stop ends them in order.
package harness

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Binaries says where the programs are. Empty fields are looked up: etcd on PATH, the
// Kubernetes binaries in $RESTOREGRAPH_KUBE_BIN, kwok in $RESTOREGRAPH_KWOK_BIN.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Scheduler, Kwok string
}

// Cluster is a running control plane.
type Cluster struct {
	Config     *rest.Config
	Kubeconfig string
	dir        string
	processes
	etcdClients []string // the client URLs of a cluster of several members
}

const token = "restoregraph-integration-token"

// Restorer is a user without privileges of its own (tests grant what they need): not
// in system:masters, so that API Priority and Fairness does not exempt it as it does
// the admin.
const Restorer = "restorer"

// users are the static tokens kube-apiserver takes: user → token, groups.
var users = map[string][2]string{
	"admin":  {token, "system:masters"},
	Restorer: {"restoregraph-restorer-token", ""},
}

// Options shape a control plane; the zero value is the default one.
type Options struct {
	// ServiceCIDR is the Service cluster IP range; default 10.0.0.0/24.
	ServiceCIDR string
	// EtcdMembers is how many members the etcd cluster has; default 1, a process named
	// etcd. With more, they are etcd-0, etcd-1, ..., kube-apiserver reaches all of them,
	// and EtcdLeader names the one that leads.
	EtcdMembers int
	// EtcdQuotaBytes is etcd's backend quota; default etcd's own (2 GiB), which a
	// million objects outgrow.
	EtcdQuotaBytes int64
	// APIServerMemoryLimit is the Go runtime's soft memory limit (GOMEMLIMIT) of
	// kube-apiserver, in bytes; default none. With a million objects, the API server's
	// heap grows to twice what it holds before it collects, more than the machine has
	// beside the rest.
	APIServerMemoryLimit int64
	// NoControllerManager leaves kube-controller-manager out. Its garbage collector
	// keeps a node for every object: at 715,000 it held 3.9 GB, more than a machine of
	// 24 GiB had left beside the API server and etcd.
	NoControllerManager bool
	// Controllers are kube-controller-manager's; default the garbage collector, the
	// namespace controller and the persistentvolume-binder. AppControllers runs what an
	// application namespace needs.
	Controllers []string
	// ServiceAccountAdmission turns on the ServiceAccount admission plugin, as in real
	// clusters: a Pod's ServiceAccount must exist, and a token volume is mounted.
	ServiceAccountAdmission bool
	// Nodes is how many fake nodes kwok runs; with any, kube-scheduler runs too, so that
	// Pods are scheduled, become Running and Ready, and Jobs complete, as on a real
	// cluster, without a kubelet.
	Nodes int
}

// noEgress keeps what kube-apiserver calls on this machine: its calls to admission and
// conversion webhooks and aggregated APIs behind Services go through a proxy that
// refuses every connection, on loopback, and fail at once, as to a backend that is not
// running; a webhook's URL on loopback is reached directly. Without it, a call to a
// Service's cluster IP leaves the machine through its default route.
var noEgress = []string{"HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1", "NO_PROXY=127.0.0.1,localhost",
	"https_proxy=http://127.0.0.1:1", "http_proxy=http://127.0.0.1:1", "no_proxy=127.0.0.1,localhost"}

// memLimit is the environment that sets a Go program's soft memory limit to bytes, or
// nil (the inherited environment) for none.
func memLimit(bytes int64) []string {
	if bytes <= 0 {
		return nil
	}
	return []string{"GOMEMLIMIT=" + strconv.FormatInt(bytes, 10)}
}

// AppControllers are the controllers that act on a typical application namespace.
var AppControllers = []string{"garbagecollector", "namespace", "deployment", "replicaset", "statefulset", "daemonset", "job", "cronjob",
	"endpoint", "endpointslice", "serviceaccount", "root-ca-cert-publisher", "disruption", "persistentvolume-binder"}

// Start starts etcd, kube-apiserver and kube-controller-manager in a new directory
// below dir, and returns once the API server is ready.
func Start(ctx context.Context, dir string, bin Binaries) (*Cluster, error) {
	return StartWith(ctx, dir, bin, Options{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, dir string, bin Binaries, opts Options) (*Cluster, error) {
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = "10.0.0.0/24"
	}
	if len(opts.Controllers) == 0 {
		opts.Controllers = []string{"garbagecollector", "namespace", "persistentvolume-binder"}
	}
	admission := []string{"--disable-admission-plugins", "ServiceAccount"}
	if opts.ServiceAccountAdmission {
		admission = nil
	}
	if err := bin.resolve(opts.Nodes > 0); err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, processes: processes{dir: dir}}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	var etcdURL string
	var err error
	if opts.EtcdMembers > 1 {
		etcdURL, err = c.startEtcdCluster(ctx, bin.Etcd, opts.EtcdMembers, opts.EtcdQuotaBytes)
	} else {
		etcdURL, err = c.startEtcd(ctx, bin.Etcd, opts.EtcdQuotaBytes)
	}
	if err != nil {
		return nil, err
	}

	saKey, saPub := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeKeyPair(saKey, saPub); err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	var lines strings.Builder
	for user, tg := range users {
		fmt.Fprintf(&lines, "%s,%s,%s", tg[0], user, user)
		if tg[1] != "" {
			fmt.Fprintf(&lines, ",%s", tg[1])
		}
		lines.WriteString("\n")
	}
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		return nil, err
	}
	var host string
	err = c.onFreePorts(1, func(ports []int) error {
		apiPort := strconv.Itoa(ports[0])
		if err := c.startEnv("kube-apiserver", append(memLimit(opts.APIServerMemoryLimit), noEgress...), bin.APIServer, append([]string{
			"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
			"--secure-port", apiPort, "--cert-dir", filepath.Join(dir, "certs"),
			"--token-auth-file", tokens, "--authorization-mode", "RBAC",
			"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", saPub,
			"--service-account-signing-key-file", saKey, "--service-cluster-ip-range", opts.ServiceCIDR,
			"--allow-privileged=true", "--v", "1",
			// Compacted often, so that an old continue token or watch version expires (410)
			// within a test's time, as it does on a long-lived server.
			"--etcd-compaction-interval", "5s",
			// A loopback advertise address is refused by the endpoint reconciler, which a
			// control plane without nodes or Services does not need.
			"--endpoint-reconciler-type", "none",
		}, admission...)...); err != nil {
			return err
		}
		host = "https://127.0.0.1:" + apiPort
		insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		return c.waitHTTP(ctx, "kube-apiserver", insecure, host+"/readyz", token, 120*time.Second)
	})
	if err != nil {
		return nil, err
	}
	c.Config = &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 500, Burst: 1000}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, []byte(fmt.Sprintf(kubeconfig, host, token)), 0o600); err != nil {
		return nil, err
	}
	if !opts.NoControllerManager {
		if err := c.start("kube-controller-manager", bin.ControllerManager,
			"--kubeconfig", c.Kubeconfig, "--controllers", strings.Join(opts.Controllers, ","),
			"--root-ca-file", filepath.Join(dir, "certs", "apiserver.crt"),
			"--leader-elect=false", "--secure-port", "0", "--use-service-account-credentials=false", "--v", "1",
		); err != nil {
			return nil, err
		}
	}
	if opts.Nodes > 0 {
		if err := c.startNodes(ctx, bin, opts.Nodes); err != nil {
			return nil, err
		}
	}
	ok = true
	return c, nil
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: integration
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: integration
  context: {cluster: integration, user: admin}
current-context: integration
`

// ConfigAs is the client configuration of user (admin or Restorer).
func (c *Cluster) ConfigAs(user string) *rest.Config {
	cfg := rest.CopyConfig(c.Config)
	cfg.BearerToken = users[user][0]
	return cfg
}

// WriteKubeconfig writes a kubeconfig for user (admin or Restorer) that reaches the API
// server at server: its own address when empty, or a proxy's before it.
func (c *Cluster) WriteKubeconfig(path, server, user string) error {
	if server == "" {
		server = c.Config.Host
	}
	tg, ok := users[user]
	if !ok {
		return fmt.Errorf("no user %q", user)
	}
	return os.WriteFile(path, []byte(fmt.Sprintf(kubeconfig, server, tg[0])), 0o600)
}

func (b *Binaries) resolve(nodes bool) error {
	var err error
	if b.Etcd == "" {
		if b.Etcd, err = exec.LookPath("etcd"); err != nil {
			return fmt.Errorf("etcd not found: install Debian's etcd-server (make integration does): %w", err)
		}
	}
	paths := []struct {
		path       *string
		name, env  string
		needed     bool
		makeTarget string
	}{
		{&b.APIServer, "kube-apiserver", "RESTOREGRAPH_KUBE_BIN", true, "make integration"},
		{&b.ControllerManager, "kube-controller-manager", "RESTOREGRAPH_KUBE_BIN", true, "make integration"},
		{&b.Scheduler, "kube-scheduler", "RESTOREGRAPH_KUBE_BIN", nodes, "make velero-stack"},
		{&b.Kwok, "kwok", "RESTOREGRAPH_KWOK_BIN", nodes, "make velero-stack"},
	}
	for _, p := range paths {
		if *p.path != "" || !p.needed {
			continue
		}
		if *p.path, err = binary(p.env, p.name, p.makeTarget); err != nil {
			return err
		}
	}
	return nil
}

// binary is the program name in the directory $env names.
func binary(env, name, makeTarget string) (string, error) {
	dir := os.Getenv(env)
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s not found in $%s (%q): run %s, which builds it: %w", name, env, dir, makeTarget, err)
	}
	return path, nil
}

// startEtcd starts etcd, its data in c's directory, with a backend quota when quota is
// not 0, and returns its client URL once it answers.
func (c *processes) startEtcd(ctx context.Context, path string, quota int64) (string, error) {
	var etcdURL string
	err := c.onFreePorts(2, func(ports []int) error {
		etcdURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		dataDir := filepath.Join(c.dir, "etcd")
		args := []string{
			"--data-dir", dataDir, "--name", "default",
			"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "default=" + peerURL, "--log-level", "warn",
		}
		if quota > 0 {
			args = append(args, "--quota-backend-bytes", strconv.FormatInt(quota, 10))
		}
		// What an etcd that could not bind may have left, which names its ports.
		if err := os.RemoveAll(dataDir); err != nil {
			return err
		}
		if err := c.start("etcd", path, args...); err != nil {
			return err
		}
		return c.waitHTTP(ctx, "etcd", &http.Client{}, etcdURL+"/health", "", 30*time.Second)
	})
	return etcdURL, err
}

// onFreePorts calls start, which starts a process that listens on the ports it is given
// and waits until it answers, with n ports that were free a moment before. A port is
// free between freePorts and the process's bind, where another (an outgoing
// connection's own port, say) may take it: a process that exits for that is started
// again on other ports, up to three times in all; what a failed attempt started is
// stopped and forgotten.
func (ps *processes) onFreePorts(n int, start func(ports []int) error) error {
	for attempt := 1; ; attempt++ {
		ports, err := pickPorts(n)
		if err != nil {
			return err
		}
		before := len(ps.procs)
		err = start(ports)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		for _, p := range ps.procs[before:] {
			p.stop()
		}
		ps.procs = ps.procs[:before]
	}
}

// pickPorts is freePorts, but where a test makes a port taken.
var pickPorts = freePorts

func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitHTTP polls url until it answers 200. It fails at once when the process exits,
// with the end of its log.
func (c *processes) waitHTTP(ctx context.Context, name string, client *http.Client, url, bearer string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.exitedChan(name):
			return fmt.Errorf("%s exited:\n%s", name, c.logTail(name, 3000))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: %s not ready after %s: %v\n%s", name, url, timeout, last, c.logTail(name, 3000))
}

func writeKeyPair(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// WaitReady returns once kube-apiserver answers ready again, after a restart of it or of
// etcd.
func (c *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return c.waitHTTP(ctx, "kube-apiserver", insecure, c.Config.Host+"/readyz", token, timeout)
}
