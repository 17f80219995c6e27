package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The kubeconfig plugins are given authenticates as the command does: a cluster reached
// through an exec credential plugin (as EKS, GKE and AKS are), an auth provider, or
// impersonation is reached by the plugins the same way.
func TestKubeconfigForPluginsKeepsCredentials(t *testing.T) {
	exec := &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "aws",
		Args: []string{"eks", "get-token", "--cluster-name", "prod"}, Env: []clientcmdapi.ExecEnvVar{{Name: "AWS_PROFILE", Value: "ops"}},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	for name, cfg := range map[string]*rest.Config{
		"exec": {Host: "https://127.0.0.1:6443", ExecProvider: exec,
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), ServerName: "api.prod"}},
		"auth provider": {Host: "https://127.0.0.1:6443", AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc",
			Config: map[string]string{"client-id": "restoregraph"}}},
		"impersonation": {Host: "https://127.0.0.1:6443", BearerToken: "t",
			Impersonate: rest.ImpersonationConfig{UserName: "velero", Groups: []string{"ops"}}},
	} {
		t.Run(name, func(t *testing.T) {
			path, err := writeKubeconfig(cfg)
			require.NoError(t, err)
			defer os.Remove(path)
			st, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "credentials are read by this user only")
			got, err := clientcmd.BuildConfigFromFlags("", path)
			require.NoError(t, err)
			assert.Equal(t, cfg.Host, got.Host)
			assert.Equal(t, cfg.ExecProvider, got.ExecProvider)
			assert.Equal(t, cfg.AuthProvider, got.AuthProvider)
			assert.Equal(t, cfg.Impersonate.UserName, got.Impersonate.UserName)
			assert.Equal(t, cfg.Impersonate.Groups, got.Impersonate.Groups)
			assert.Equal(t, cfg.BearerToken, got.BearerToken)
			assert.Equal(t, cfg.ServerName, got.ServerName)
			assert.Equal(t, cfg.CAData, got.CAData)
		})
	}
}

// A server with API Priority and Fairness (it names the flow schema of each answer) paces
// its clients itself: the client then sends without a limit of its own, unless
// --client-qps or --client-burst says otherwise. A server without it, or one that cannot
// be asked, keeps the client's default limit.
func TestClientLimitLeftToPriorityAndFairness(t *testing.T) {
	apf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/livez/ping" {
			w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "exempt-uid")
		}
	}))
	defer apf.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plain.Close()
	limitOf := func(args ...string) (float32, int) {
		t.Helper()
		tg := &target{flags: genericclioptions.NewConfigFlags(true)}
		cmd := &cobra.Command{}
		tg.addFlags(cmd)
		require.NoError(t, cmd.Flags().Parse(args))
		_, stop, err := tg.config()
		require.NoError(t, err)
		stop()
		return tg.qps, tg.burst
	}
	qps, burst := limitOf("--server", apf.URL)
	assert.Equal(t, float32(unthrottled), qps)
	assert.Equal(t, int(unthrottled), burst)
	qps, burst = limitOf("--server", apf.URL, "--client-qps", "50")
	assert.Equal(t, float32(50), qps, "a limit given is kept")
	assert.Equal(t, 400, burst)
	qps, _ = limitOf("--server", plain.URL)
	assert.Equal(t, float32(200), qps, "no flow schema: the default limit")
	qps, _ = limitOf("--server", "http://127.0.0.1:1")
	assert.Equal(t, float32(200), qps, "not reached: the default limit")
}
