package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// S3 is a running S3 server, versitygw with its posix backend: an object is a file,
// Root/Bucket/key, so a test reads what was written without a client.
type S3 struct {
	Endpoint             string // http://127.0.0.1:port
	Region, Bucket       string
	AccessKey, SecretKey string
	Root                 string
	processes
}

// StartS3 starts versitygw ($RESTOREGRAPH_S3_BIN) in a new directory below dir, with one
// bucket, and returns once it serves.
func StartS3(ctx context.Context, dir string) (*S3, error) {
	bin, err := binary("RESTOREGRAPH_S3_BIN", "versitygw", "make velero-stack")
	if err != nil {
		return nil, err
	}
	s := &S3{
		Region: "us-east-1", Bucket: "velero",
		AccessKey: "restoregraph", SecretKey: "restoregraph-secret", Root: filepath.Join(dir, "objects"),
		processes: processes{dir: dir},
	}
	if err := errors.Join(os.MkdirAll(s.Root, 0o755), os.MkdirAll(filepath.Join(dir, "sidecar"), 0o755)); err != nil {
		return nil, err
	}
	err = s.onFreePorts(1, func(ports []int) error {
		s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(ports[0])
		// Object metadata in sidecar files, not extended attributes, which not every
		// filesystem a test's directory is on keeps.
		if err := s.start("versitygw", bin, "--port", "127.0.0.1:"+strconv.Itoa(ports[0]),
			"--access", s.AccessKey, "--secret", s.SecretKey, "--region", s.Region, "--health", "/health",
			"posix", "--sidecar", filepath.Join(dir, "sidecar"), s.Root,
		); err != nil {
			return err
		}
		return s.waitHTTP(ctx, "versitygw", &http.Client{}, s.Endpoint+"/health", "", 30*time.Second)
	})
	if err != nil {
		s.Stop()
		return nil, err
	}
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.Bucket}); err != nil {
		s.Stop()
		return nil, fmt.Errorf("create bucket %s: %w\n%s", s.Bucket, err, s.logTail("versitygw", 3000))
	}
	return s, nil
}

// Client is an S3 client of the server, with its static credentials and nothing from
// the environment, so that it never reaches for a cloud or a metadata address.
func (s *S3) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// Path is where the posix backend keeps the object of key.
func (s *S3) Path(key string) string { return filepath.Join(s.Root, s.Bucket, filepath.FromSlash(key)) }

// credentialsFile is the AWS shared credentials file Velero's AWS plugin reads.
func (s *S3) credentialsFile() []byte {
	return fmt.Appendf(nil, "[default]\naws_access_key_id=%s\naws_secret_access_key=%s\n", s.AccessKey, s.SecretKey)
}

// Velero is a Velero server running against a Cluster, outside it, as Velero's
// documentation runs it for development: its CRDs, namespace, credentials Secret,
// BackupStorageLocation and a Deployment of its name are in the cluster, the process is
// the test's.
type Velero struct {
	Namespace          string
	bin, home, plugins string
	cluster            *Cluster
}

// VeleroOptions shape a Velero server; the zero value is the default one.
type VeleroOptions struct {
	// Features are Velero's feature flags, such as EnableAPIGroupVersions.
	Features []string
	// ReadOnly makes the backup storage location read-only, as a cluster that restores
	// another's backups has it.
	ReadOnly bool
	// DisableControllers are the server's controllers switched off
	// (--disable-controllers): restore, for another restore controller.
	DisableControllers []string
	// PluginDir is the directory of the plugins the server runs; default VeleroPlugins,
	// the AWS object store's.
	PluginDir string
	// NodeAgent makes the node-agent DaemonSet `velero install --use-node-agent` makes,
	// whose Pods (kwok's) Velero looks for on a Pod's node before it backs up or restores
	// the Pod's volumes; StartDataMover does their work.
	NodeAgent bool
}

// RestoreControllers are the Velero server's controllers of restores, for
// VeleroOptions.DisableControllers where restoregraph stands in for them.
var RestoreControllers = []string{"restore", "restore-operations", "restore-finalizer"}

// veleroServer is the name of Velero's process in the cluster's logs.
const veleroServer = "velero-server"

// StartVelero installs Velero's CRDs and what its server looks for into c, with a backup
// storage location named "default" in s's bucket, and starts the server
// ($RESTOREGRAPH_VELERO_BIN, with the AWS plugin in its plugins directory). It returns
// once the location is Available. Velero's controller manager binds :8080 with no flag to
// move it, so one Velero server runs on a machine at a time: StartVelero waits while
// another (of a test running beside this one) runs, and Cluster.Stop (or StopVelero)
// ends it and lets the next one start.
func (c *Cluster) StartVelero(ctx context.Context, s *S3, opts VeleroOptions) (*Velero, error) {
	bin, err := binary("RESTOREGRAPH_VELERO_BIN", "velero", "make plugins")
	if err != nil {
		return nil, err
	}
	plugins := opts.PluginDir
	if plugins == "" {
		if plugins, err = VeleroPlugins(); err != nil {
			return nil, err
		}
	}
	home := filepath.Join(c.dir, "velero-home")
	if err := os.MkdirAll(filepath.Join(home, "tmp"), 0o755); err != nil {
		return nil, err
	}
	v := &Velero{Namespace: "velero", bin: bin, home: home, cluster: c, plugins: plugins}
	if out, err := v.Run(ctx, "install", "--crds-only"); err != nil {
		return nil, fmt.Errorf("velero install --crds-only: %w\n%s", err, out)
	}
	if err := v.install(ctx, s, opts); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	args := []string{"server", "--kubeconfig", c.Kubeconfig, "--namespace", v.Namespace,
		"--plugin-dir", plugins, "--log-level", "info",
		"--metrics-address", "127.0.0.1:" + strconv.Itoa(ports[0]),
		"--profiler-address", "127.0.0.1:" + strconv.Itoa(ports[1]),
		// A backup another cluster wrote shows up within seconds, not a minute.
		"--backup-sync-period", "2s", "--store-validation-frequency", "2s",
	}
	if len(opts.Features) > 0 {
		args = append(args, "--features", joinComma(opts.Features))
	}
	if len(opts.DisableControllers) > 0 {
		args = append(args, "--disable-controllers", joinComma(opts.DisableControllers))
	}
	if err := takeVeleroSlot(ctx); err != nil {
		return nil, err
	}
	if err := c.startEnv(veleroServer, v.env(), bin, args...); err != nil {
		<-veleroSlot
		return nil, err
	}
	c.onStop(veleroServer, func() { <-veleroSlot })
	if err := v.waitLocation(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// veleroSlot is held by the Velero server this test process runs (StartVelero); tests
// of one package run in one process, and no other package starts a Velero server.
var veleroSlot = make(chan struct{}, 1)

// veleroSlotWait is how long StartVelero waits for another Velero server to end: longer
// than any test keeps one, shorter than the tests' own timeout, so that a test that
// starts a second server before stopping its first (it would wait for itself) fails
// saying so.
const veleroSlotWait = 10 * time.Minute

func takeVeleroSlot(ctx context.Context) error {
	timer := time.NewTimer(veleroSlotWait)
	defer timer.Stop()
	select {
	case veleroSlot <- struct{}{}:
		return nil
	case <-timer.C:
		return fmt.Errorf("waited %s for another Velero server to stop: one runs at a time (its controller manager binds :8080)", veleroSlotWait)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StopVelero ends the Velero server, leaving the cluster running.
func (c *Cluster) StopVelero() { c.stopOne(veleroServer) }

// env keeps Velero's client configuration, credentials and scratch files in the test's
// directory, and its AWS SDK away from any metadata address. KUBECONFIG as well as
// --kubeconfig: with EnableAPIGroupVersions the server's restore builds a client of its
// own, from the environment only, to read its version-priority ConfigMap.
func (v *Velero) env() []string {
	return []string{"HOME=" + v.home, "KUBECONFIG=" + v.cluster.Kubeconfig, "TMPDIR=" + filepath.Join(v.home, "tmp"), "AWS_EC2_METADATA_DISABLED=true",
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(v.home, "credentials")}
}

// Run runs the velero command against the cluster, in Velero's namespace, and returns
// what it printed.
func (v *Velero) Run(ctx context.Context, args ...string) (string, error) {
	args = append(args, "--kubeconfig", v.cluster.Kubeconfig, "--namespace", v.Namespace)
	cmd := exec.CommandContext(ctx, v.bin, args...)
	cmd.Env = append(os.Environ(), v.env()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Log is what the Velero server wrote.
func (v *Velero) Log() string { return v.cluster.Log(veleroServer) }

// Binary is the velero command the server runs.
func (v *Velero) Binary() string { return v.bin }

// PluginDir is the directory of the plugins the server runs (Velero's /plugins).
func (v *Velero) PluginDir() string { return v.plugins }

// VeleroPlugins is the directory of the plugins a Velero server runs by default
// (Velero's /plugins): the AWS object-store plugin, beside $RESTOREGRAPH_VELERO_BIN's
// velero.
func VeleroPlugins() (string, error) {
	aws, err := binary("RESTOREGRAPH_VELERO_BIN", filepath.Join("plugins", "velero-plugin-for-aws"), "make velero-stack")
	if err != nil {
		return "", err
	}
	return filepath.Dir(aws), nil
}

var bslGVR = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "backupstoragelocations"}

// install makes what `velero install` makes that the server outside the cluster needs:
// its namespace, the credentials Secret, the backup storage location, and a Deployment
// of its name (restores look it up), scaled to zero.
func (v *Velero) install(ctx context.Context, s *S3, opts VeleroOptions) error {
	if err := os.WriteFile(filepath.Join(v.home, "credentials"), s.credentialsFile(), 0o600); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(v.cluster.Config)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(v.cluster.Config)
	if err != nil {
		return err
	}
	ns := v.Namespace
	labels := map[string]string{"component": "velero"}
	zero := int32(0)
	objects := []func() error{
		func() error {
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "cloud-credentials", Labels: labels},
				Data:       map[string][]byte{"cloud": s.credentialsFile()},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "velero", Labels: labels},
				Spec: appsv1.DeploymentSpec{
					Replicas: &zero,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"deploy": "velero"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"deploy": "velero"}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: "velero", Image: "velero/velero:" + veleroVersion(v.bin),
						}}},
					},
				},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			accessMode := "ReadWrite"
			if opts.ReadOnly {
				accessMode = "ReadOnly"
			}
			bsl := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
				"metadata": map[string]any{"name": "default", "namespace": ns, "labels": map[string]any{"component": "velero"}},
				"spec": map[string]any{
					"provider": "aws", "default": true, "accessMode": accessMode,
					"objectStorage": map[string]any{"bucket": s.Bucket},
					"credential":    map[string]any{"name": "cloud-credentials", "key": "cloud"},
					"config": map[string]any{
						"region": s.Region, "s3ForcePathStyle": "true", "s3Url": s.Endpoint,
					},
				},
			}}
			_, err := dyn.Resource(bslGVR).Namespace(ns).Create(ctx, bsl, metav1.CreateOptions{})
			return err
		},
	}
	if opts.NodeAgent {
		objects = append(objects, func() error {
			role := map[string]string{"name": "node-agent", "role": "node-agent"}
			_, err := client.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Name: "node-agent", Labels: labels},
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: role},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: role}, Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "node-agent", Image: "velero/velero:" + veleroVersion(v.bin)}}}},
				},
			}, metav1.CreateOptions{})
			return err
		})
	}
	for _, create := range objects {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install velero: %w", err)
		}
	}
	// Velero's backup sync runs once a minute (a period its code fixes; --backup-sync-period
	// only spaces the syncs of one location). Its first run, at start-up, comes before the
	// server has validated a new location, skips it as unavailable, and a backup already
	// in the bucket shows up a minute later: a minute of every test that restores one.
	// The location is made Available here, as a server restarted in a cluster whose
	// location it had validated finds it; waitLocation still waits for this server's own
	// validation.
	bsl, err := dyn.Resource(bslGVR).Namespace(ns).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("install velero: %w", err)
	}
	if phase, _, _ := unstructured.NestedString(bsl.Object, "status", "phase"); phase == "" {
		if err := unstructured.SetNestedField(bsl.Object, "Available", "status", "phase"); err != nil {
			return err
		}
		// Velero's CRD has no status subresource: the status is written with the object.
		// Should a later one have it, the update of the status goes there.
		_, err := dyn.Resource(bslGVR).Namespace(ns).UpdateStatus(ctx, bsl, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = dyn.Resource(bslGVR).Namespace(ns).Update(ctx, bsl, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("install velero: the location's status: %w", err)
		}
	}
	return nil
}

// waitLocation waits until the server has validated the backup storage location and
// found it Available.
func (v *Velero) waitLocation(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(v.cluster.Config)
	if err != nil {
		return err
	}
	var phase string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-v.cluster.exitedChan(veleroServer):
			return false, errors.New("velero server exited")
		default:
		}
		bsl, err := dyn.Resource(bslGVR).Namespace(v.Namespace).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase, _, _ = unstructured.NestedString(bsl.Object, "status", "phase")
		validated, _, _ := unstructured.NestedString(bsl.Object, "status", "lastValidationTime")
		return phase == "Available" && validated != "", nil
	})
	if err != nil {
		return fmt.Errorf("backup storage location not Available (phase %q): %w\n%s", phase, err, v.cluster.logTail(veleroServer, 4000))
	}
	return nil
}

// veleroVersion is the version the velero binary's directory is named after.
func veleroVersion(bin string) string {
	dir := filepath.Base(filepath.Dir(bin))
	if i := len("velero-"); len(dir) > i && dir[:i] == "velero-" {
		return dir[i:]
	}
	return "latest"
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	return b.String()
}
