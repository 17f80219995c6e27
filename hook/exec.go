package hook

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Executor runs command in a container of a Pod and returns what it wrote; err is
// non-nil when it could not run or exited non-zero.
type Executor interface {
	Exec(ctx context.Context, namespace, pod, container string, command []string) (stdout, stderr string, err error)
}

// Remote runs commands through the API server's pods/exec subresource, as kubectl exec
// does (WebSocket, falling back to SPDY); the Pod's kubelet answers.
type Remote struct {
	Config *rest.Config
}

// Exec runs command in the container.
func (r Remote) Exec(ctx context.Context, namespace, pod, container string, command []string) (string, string, error) {
	cs, err := kubernetes.NewForConfig(r.Config)
	if err != nil {
		return "", "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(r.Config, "GET", req.URL().String())
	if err != nil {
		return "", "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.Config, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool { return true })
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		err = fmt.Errorf("exec in %s/%s container %s: %w", namespace, pod, container, err)
	}
	return stdout.String(), stderr.String(), err
}
