package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// kwokNode is the annotation kwok is told to manage nodes by.
const kwokNode = "kwok.x-k8s.io/node"

// startNodes runs kube-scheduler and kwok, and makes n fake nodes that kwok keeps Ready
// and whose Pods it moves through their phases as a kubelet would (Running and Ready,
// Succeeded when their containers would end, gone when deleted). kwok's stages are the
// release's own "fast" ones, copied beside the binary when it is built.
func (c *Cluster) startNodes(ctx context.Context, bin Binaries, n int) error {
	if err := c.start("kube-scheduler", bin.Scheduler,
		"--kubeconfig", c.Kubeconfig, "--leader-elect=false", "--secure-port", "0", "--v", "1",
	); err != nil {
		return err
	}
	stages, err := filepath.Glob(filepath.Join(filepath.Dir(bin.Kwok), "stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("kwok's stages not found beside %s: run make velero-stack, which copies them", bin.Kwok)
	}
	// kwok's default configuration file is in the home directory; a test sees only its own.
	args := []string{"--kubeconfig", c.Kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", kwokNode + "=fake",
		"--cidr", "10.244.0.0/16", "--node-ip", "10.1.0.1", "--v", "INFO"}
	for _, s := range stages {
		args = append(args, "--config", s)
	}
	if err := c.startEnv("kwok", []string{"HOME=" + c.dir}, bin.Kwok, args...); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for i := range n {
		if _, err := client.CoreV1().Nodes().Create(ctx, fakeNode(fmt.Sprintf("kwok-node-%d", i)), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("fake node: %w", err)
		}
	}
	// Ready once kwok has taken every node over.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.exitedChan("kwok"):
			return false, fmt.Errorf("kwok exited:\n%s", c.logTail("kwok", 3000))
		default:
		}
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, node := range nodes.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
	return err
}

// Schedule takes off the fake nodes the not-ready taint the API server gives a new node,
// which the node lifecycle controller (not run here) would take off once the node is
// Ready: kube-scheduler then places Pods, and kwok runs them. Without it Pods stay
// Pending, unscheduled, which most tests rely on.
func (c *Cluster) Schedule(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, node := range nodes.Items {
		patch := []byte(`{"spec":{"taints":null}}`)
		if _, err := client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("fake node %s: %w", node.Name, err)
		}
	}
	return nil
}

func fakeNode(name string) *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNode: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources},
	}
}
