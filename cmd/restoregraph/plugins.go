package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// pluginHost returns the host of the plugin executables the flags name, with the
// commands that start them (it starts nothing yet); a nil host when none is named. stop
// ends every process the host started. The plugins' standard error goes to warn.
func (f *restoreFlags) pluginHost(cfg *rest.Config, warn io.Writer) (host *pluginhost.Host, commands [][]string, stop func(), err error) {
	stop = func() {}
	paths := slices.Clone(f.pluginPaths)
	if f.pluginDir != "" {
		if _, err := os.Stat(f.pluginDir); err != nil {
			return nil, nil, stop, badInput("--plugins: %w", err)
		}
		found, err := pluginhost.Executables(f.pluginDir)
		if err != nil {
			return nil, nil, stop, badInput("--plugins: %w", err)
		}
		paths = append(paths, found...)
	}
	if len(paths) == 0 {
		return nil, nil, stop, nil
	}
	// Velero's own actions build a Kubernetes client when they start, from $KUBECONFIG:
	// they are given the target's.
	kubeconfig, err := writeKubeconfig(cfg)
	if err != nil {
		return nil, nil, stop, err
	}
	host = &pluginhost.Host{Env: []string{"KUBECONFIG=" + kubeconfig}, Log: warn}
	// Velero's own command first, as Velero's server lists itself before /plugins.
	slices.SortStableFunc(paths, func(a, b string) int {
		return cmpBool(filepath.Base(b) == pluginhost.VeleroBinary, filepath.Base(a) == pluginhost.VeleroBinary)
	})
	for _, p := range paths {
		commands = append(commands, pluginhost.Command(p))
	}
	return host, commands, func() { host.Close(); os.Remove(kubeconfig) }, nil
}

// register registers the RestoreItemActions the plugins serve, but those disabled.
func (f *restoreFlags) register(ctx context.Context, host *pluginhost.Host, commands [][]string, warn io.Writer) (*plugin.Registry, error) {
	found, err := host.Discover(ctx, commands...)
	if err != nil {
		fmt.Fprintf(warn, "restoregraph: warning: %v\n", err)
	}
	reg := &plugin.Registry{}
	return reg, host.Register(reg, found, restore.DisabledByName(f.disable...).Actions...)
}

// writeKubeconfig writes cfg as a kubeconfig file only this user reads, for plugin
// processes: every way cfg authenticates goes with it, an exec credential plugin or an
// auth provider (EKS, GKE, AKS) and impersonation included.
func writeKubeconfig(cfg *rest.Config) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["target"] = &clientcmdapi.Cluster{Server: cfg.Host, InsecureSkipTLSVerify: cfg.Insecure,
		CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	user := &clientcmdapi.AuthInfo{Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile,
		ClientCertificate: cfg.CertFile, ClientCertificateData: cfg.CertData, ClientKey: cfg.KeyFile, ClientKeyData: cfg.KeyData,
		Username: cfg.Username, Password: cfg.Password, AuthProvider: cfg.AuthProvider,
		Impersonate: cfg.Impersonate.UserName, ImpersonateUID: cfg.Impersonate.UID, ImpersonateGroups: cfg.Impersonate.Groups,
		ImpersonateUserExtra: cfg.Impersonate.Extra}
	if cfg.ExecProvider != nil {
		user.Exec = cfg.ExecProvider.DeepCopy()
		if user.Exec.InteractiveMode == "" {
			user.Exec.InteractiveMode = clientcmdapi.IfAvailableExecInteractiveMode
		}
	}
	kc.AuthInfos["restoregraph"] = user
	kc.Contexts["target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "restoregraph"}
	kc.CurrentContext = "target"
	f, err := os.CreateTemp("", "restoregraph-kubeconfig-*") // 0600
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), clientcmd.WriteToFile(*kc, f.Name())
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
