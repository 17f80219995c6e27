package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	capi       = "cluster.x-k8s.io"
	controlPl  = "controlplane.cluster.x-k8s.io"
	bootstrap  = "bootstrap.cluster.x-k8s.io"
	infra      = "infrastructure.cluster.x-k8s.io"
	addons     = "addons.cluster.x-k8s.io"
	clusterKey = "cluster.x-k8s.io/cluster-name"
)

// CAPIVersions are the versions the Cluster API CRDs serve in a generated backup: the
// objects are backed up at both, the first preferred.
var CAPIVersions = []string{"v1beta1", "v1alpha4"}

// CAPIOptions shape a Cluster API fleet.
type CAPIOptions struct {
	Clusters      int
	ControlPlanes int // machines of each control plane; default 3
	Workers       int // worker machines of each cluster; default 2
	Seed          uint64
	// Prefix names the clusters' namespaces, <prefix>-00 and on; default "fleet".
	Prefix string
}

// CAPI returns a backup of a management cluster holding a fleet of workload clusters,
// each in its namespace: Cluster, ClusterClass, KubeadmControlPlane, MachineDeployment,
// MachineSet, Machines, the Docker infrastructure and kubeadm bootstrap objects, the
// cluster's Secrets, a ClusterResourceSet with its ConfigMap and Binding — with the
// ownerReferences and labels Cluster API sets — and the CRDs of those kinds.
func CAPI(opts CAPIOptions) *Backup {
	if opts.ControlPlanes <= 0 {
		opts.ControlPlanes = 3
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Prefix == "" {
		opts.Prefix = "fleet"
	}
	b := newBackup(opts.Seed)
	for _, c := range []struct{ group, kind, plural string }{
		{capi, "Cluster", "clusters"}, {capi, "ClusterClass", "clusterclasses"}, {capi, "MachineDeployment", "machinedeployments"},
		{capi, "MachineSet", "machinesets"}, {capi, "Machine", "machines"},
		{controlPl, "KubeadmControlPlane", "kubeadmcontrolplanes"}, {controlPl, "KubeadmControlPlaneTemplate", "kubeadmcontrolplanetemplates"},
		{bootstrap, "KubeadmConfig", "kubeadmconfigs"}, {bootstrap, "KubeadmConfigTemplate", "kubeadmconfigtemplates"},
		{infra, "DockerCluster", "dockerclusters"}, {infra, "DockerClusterTemplate", "dockerclustertemplates"},
		{infra, "DockerMachine", "dockermachines"}, {infra, "DockerMachineTemplate", "dockermachinetemplates"},
		{addons, "ClusterResourceSet", "clusterresourcesets"}, {addons, "ClusterResourceSetBinding", "clusterresourcesetbindings"},
	} {
		b.crd(c.group, c.kind, c.plural, true, CAPIVersions...)
	}
	for i := range opts.Clusters {
		b.capiCluster(fmt.Sprintf("%s-%02d", opts.Prefix, i), fmt.Sprintf("workload-%02d", i), opts)
	}
	b.alsoAtOtherVersions()
	return b
}

func (b *Backup) capiCluster(ns, name string, opts CAPIOptions) {
	gv := func(group string) string { return group + "/" + CAPIVersions[0] }
	lbl := func(extra ...string) map[string]string {
		m := map[string]string{clusterKey: name}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	spec := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"spec": m}
	}
	b.add("v1", "Namespace", "namespaces", "", ns, nil, nil)

	// The class and its templates: shared, owned by nothing.
	b.add(gv(controlPl), "KubeadmControlPlaneTemplate", "kubeadmcontrolplanetemplates", ns, "quick-start-control-plane", nil, spec("template", map[string]any{}))
	b.add(gv(infra), "DockerClusterTemplate", "dockerclustertemplates", ns, "quick-start-cluster", nil, spec("template", map[string]any{}))
	cpTemplate := b.add(gv(infra), "DockerMachineTemplate", "dockermachinetemplates", ns, "quick-start-control-plane", nil, spec("template", map[string]any{}))
	mdTemplate := b.add(gv(infra), "DockerMachineTemplate", "dockermachinetemplates", ns, "quick-start-default-worker", nil, spec("template", map[string]any{}))
	cfgTemplate := b.add(gv(bootstrap), "KubeadmConfigTemplate", "kubeadmconfigtemplates", ns, "quick-start-default-worker", nil, spec("template", map[string]any{}))
	class := b.add(gv(capi), "ClusterClass", "clusterclasses", ns, "quick-start", nil, spec(
		"controlPlane", map[string]any{"ref": map[string]any{"kind": "KubeadmControlPlaneTemplate", "name": "quick-start-control-plane"}},
		"infrastructure", map[string]any{"ref": map[string]any{"kind": "DockerClusterTemplate", "name": "quick-start-cluster"}}))
	_ = class

	cluster := b.add(gv(capi), "Cluster", "clusters", ns, name, lbl("topology.cluster.x-k8s.io/owned", ""), spec(
		"topology", map[string]any{"class": "quick-start", "version": "v1.31.0"},
		"clusterNetwork", map[string]any{"pods": map[string]any{"cidrBlocks": []any{"192.168.0.0/16"}}}))
	b.add(gv(infra), "DockerCluster", "dockerclusters", ns, name+"-infra", lbl(), spec("loadBalancer", map[string]any{}), cluster)
	kcp := b.add(gv(controlPl), "KubeadmControlPlane", "kubeadmcontrolplanes", ns, name+"-control-plane", lbl(),
		spec("replicas", int64(opts.ControlPlanes), "version", "v1.31.0",
			"machineTemplate", map[string]any{"infrastructureRef": map[string]any{"kind": "DockerMachineTemplate", "name": cpTemplate.GetName()}}), cluster)

	b.add("v1", "Secret", "secrets", ns, name+"-kubeconfig", lbl(), map[string]any{"type": "cluster.x-k8s.io/secret", "data": map[string]any{"value": "a3ViZWNvbmZpZw=="}}, cluster)
	for _, s := range []string{"ca", "etcd", "sa", "proxy"} {
		b.add("v1", "Secret", "secrets", ns, name+"-"+s, lbl(), map[string]any{"type": "cluster.x-k8s.io/secret", "data": map[string]any{"tls.crt": "Y2VydA=="}}, kcp)
	}

	md := b.add(gv(capi), "MachineDeployment", "machinedeployments", ns, name+"-md-0", lbl("cluster.x-k8s.io/deployment-name", name+"-md-0"),
		spec("clusterName", name, "replicas", int64(opts.Workers),
			"template", map[string]any{"spec": map[string]any{
				"bootstrap":         map[string]any{"configRef": map[string]any{"kind": "KubeadmConfigTemplate", "name": cfgTemplate.GetName()}},
				"infrastructureRef": map[string]any{"kind": "DockerMachineTemplate", "name": mdTemplate.GetName()}}}), cluster)
	ms := b.add(gv(capi), "MachineSet", "machinesets", ns, name+"-md-0-7d4f8", lbl("cluster.x-k8s.io/deployment-name", md.GetName()),
		spec("clusterName", name, "replicas", int64(opts.Workers)), md)

	machine := func(owner *unstructured.Unstructured, mname string, extra ...string) {
		m := b.add(gv(capi), "Machine", "machines", ns, mname, lbl(extra...), spec("clusterName", name, "version", "v1.31.0"), owner)
		cfg := b.add(gv(bootstrap), "KubeadmConfig", "kubeadmconfigs", ns, mname, lbl(extra...), spec(), m)
		b.add(gv(infra), "DockerMachine", "dockermachines", ns, mname, lbl(extra...), spec(), m)
		b.add("v1", "Secret", "secrets", ns, mname+"-bootstrap", lbl(), map[string]any{"type": "cluster.x-k8s.io/secret", "data": map[string]any{"value": "Y2xvdWQtaW5pdA=="}}, cfg)
	}
	for j := range opts.ControlPlanes {
		machine(kcp, fmt.Sprintf("%s-control-plane-%d", name, j), "cluster.x-k8s.io/control-plane", "")
	}
	for j := range opts.Workers {
		machine(ms, fmt.Sprintf("%s-md-0-7d4f8-%d", name, j), "cluster.x-k8s.io/set-name", ms.GetName())
	}

	b.add("v1", "ConfigMap", "configmaps", ns, "calico-addon", nil, map[string]any{"data": map[string]any{"calico.yaml": "# manifests"}})
	crs := b.add(gv(addons), "ClusterResourceSet", "clusterresourcesets", ns, "calico", nil, spec(
		"clusterSelector", map[string]any{"matchLabels": map[string]any{"cni": "calico"}},
		"resources", []any{map[string]any{"kind": "ConfigMap", "name": "calico-addon"}}))
	b.add(gv(addons), "ClusterResourceSetBinding", "clusterresourcesetbindings", ns, name, lbl(), spec("clusterName", name), crs)
}

// alsoAtOtherVersions adds every Cluster API object once more at the CRDs' other
// versions, as a backup with EnableAPIGroupVersions holds them.
func (b *Backup) alsoAtOtherVersions() {
	n := len(b.Objects)
	for i := range n {
		o := b.Objects[i]
		gv := o.GetAPIVersion()
		if len(gv) <= len(CAPIVersions[0]) || gv[len(gv)-len(CAPIVersions[0]):] != CAPIVersions[0] || o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		for _, v := range CAPIVersions[1:] {
			other := o.DeepCopy()
			other.SetAPIVersion(gv[:len(gv)-len(CAPIVersions[0])] + v)
			b.Objects = append(b.Objects, Object{Unstructured: other, Resource: o.Resource, Preferred: false})
		}
	}
}
