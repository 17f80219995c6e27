// Package harness runs a real control plane on loopback for the integration tests: etcd
// from Debian's etcd-server package, and kube-apiserver and kube-controller-manager
// (garbage collector and namespace controllers) built from the k8s.io/kubernetes module.
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
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// Binaries says where the programs are. Empty fields are looked up: etcd on PATH, the
// Kubernetes binaries in $RESTOREGRAPH_KUBE_BIN.
type Binaries struct {
	Etcd, APIServer, ControllerManager string
}

// Cluster is a running control plane.
type Cluster struct {
	Config     *rest.Config
	Kubeconfig string
	dir        string
	procs      []*exec.Cmd              // in start order
	exited     map[string]chan struct{} // closed when the named process exits
}

const token = "restoregraph-integration-token"

// Options shape a control plane; the zero value is the default one.
type Options struct {
	// ServiceCIDR is the Service cluster IP range; default 10.0.0.0/24.
	ServiceCIDR string
	// Controllers are kube-controller-manager's; default the garbage collector and the
	// namespace controller. AppControllers runs what an application namespace needs.
	Controllers []string
	// ServiceAccountAdmission turns on the ServiceAccount admission plugin, as in real
	// clusters: a Pod's ServiceAccount must exist, and a token volume is mounted.
	ServiceAccountAdmission bool
}

// AppControllers are the controllers that act on a typical application namespace.
var AppControllers = []string{"garbagecollector", "namespace", "deployment", "replicaset", "statefulset", "job", "cronjob",
	"endpoint", "endpointslice", "serviceaccount", "root-ca-cert-publisher", "disruption"}

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
		opts.Controllers = []string{"garbagecollector", "namespace"}
	}
	admission := []string{"--disable-admission-plugins", "ServiceAccount"}
	if opts.ServiceAccountAdmission {
		admission = nil
	}
	if err := bin.resolve(); err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, exited: map[string]chan struct{}{}}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	if err := c.start("etcd", bin.Etcd,
		"--data-dir", filepath.Join(dir, "etcd"), "--name", "default",
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL, "--log-level", "warn",
	); err != nil {
		return nil, err
	}
	if err := c.waitHTTP(ctx, "etcd", &http.Client{}, etcdURL+"/health", "", 30*time.Second); err != nil {
		return nil, err
	}

	saKey, saPub := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeKeyPair(saKey, saPub); err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	apiPort := strconv.Itoa(ports[2])
	if err := c.start("kube-apiserver", bin.APIServer, append([]string{
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
		return nil, err
	}
	host := "https://127.0.0.1:" + apiPort
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := c.waitHTTP(ctx, "kube-apiserver", insecure, host+"/readyz", token, 120*time.Second); err != nil {
		return nil, err
	}
	c.Config = &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 500, Burst: 1000}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, []byte(fmt.Sprintf(kubeconfig, host, token)), 0o600); err != nil {
		return nil, err
	}
	if err := c.start("kube-controller-manager", bin.ControllerManager,
		"--kubeconfig", c.Kubeconfig, "--controllers", strings.Join(opts.Controllers, ","),
		"--root-ca-file", filepath.Join(dir, "certs", "apiserver.crt"),
		"--leader-elect=false", "--secure-port", "0", "--use-service-account-credentials=false", "--v", "1",
	); err != nil {
		return nil, err
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

func (b *Binaries) resolve() error {
	var err error
	if b.Etcd == "" {
		if b.Etcd, err = exec.LookPath("etcd"); err != nil {
			return fmt.Errorf("etcd not found: install Debian's etcd-server (make integration does): %w", err)
		}
	}
	dir := os.Getenv("RESTOREGRAPH_KUBE_BIN")
	for _, p := range []*string{&b.APIServer, &b.ControllerManager} {
		if *p != "" {
			continue
		}
		name := "kube-apiserver"
		if p == &b.ControllerManager {
			name = "kube-controller-manager"
		}
		*p = filepath.Join(dir, name)
		if _, err := os.Stat(*p); err != nil {
			return fmt.Errorf("%s not found in $RESTOREGRAPH_KUBE_BIN (%q): run make integration, which builds it: %w", name, dir, err)
		}
	}
	return nil
}

func (c *Cluster) logPath(name string) string { return filepath.Join(c.dir, name+".log") }

func (c *Cluster) start(name, path string, args ...string) error {
	log, err := os.Create(c.logPath(name))
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// The kernel kills the process when the test binary dies, whatever kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	c.exited[name] = exited
	c.procs = append(c.procs, cmd)
	return nil
}

// Stop ends the processes, last started first: SIGTERM, then SIGKILL after 10 seconds.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		done := c.exited[filepath.Base(p.Path)]
		p.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
	c.procs = nil
}

// Log returns what a process wrote, for a failing test's output.
func (c *Cluster) Log(name string) string {
	data, _ := os.ReadFile(c.logPath(name))
	return string(data)
}

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
func (c *Cluster) waitHTTP(ctx context.Context, name string, client *http.Client, url, bearer string, timeout time.Duration) error {
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
		case <-c.exited[name]:
			return fmt.Errorf("%s exited:\n%s", name, c.logTail(name, 3000))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: %s not ready after %s: %v\n%s", name, url, timeout, last, c.logTail(name, 3000))
}

func (c *Cluster) logTail(name string, n int) string {
	log := c.Log(name)
	return log[max(0, len(log)-n):]
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
