package graph

const (
	capiGroup          = "cluster.x-k8s.io"
	capiClusterNameKey = "cluster.x-k8s.io/cluster-name"
)

// ClusterAPI orders Cluster API objects after their Cluster: an object labelled
// cluster.x-k8s.io/cluster-name=<c> starts after the Cluster <c> of its namespace, and
// a ClusterResourceSetBinding (named after its Cluster) after that Cluster.
var ClusterAPI Rule = clusterAPI{}

type clusterAPI struct{}

func (clusterAPI) Name() string { return "cluster-api" }

func (clusterAPI) AddEdges(b *RuleBuilder) {
	items := b.Items()
	clusters := map[[2]string]int{} // namespace, name
	for i, it := range items {
		if it.Group == capiGroup && it.Resource == "clusters" {
			clusters[[2]string{it.Namespace, it.Name}] = i
		}
	}
	if len(clusters) == 0 {
		return
	}
	for i, it := range items {
		name, ok := it.Labels.Lookup(capiClusterNameKey)
		if !ok && it.Group == "addons."+capiGroup && it.Resource == "clusterresourcesetbindings" {
			name, ok = it.Name, true
		}
		if !ok {
			continue
		}
		if c, found := clusters[[2]string{it.Namespace, name}]; found {
			b.Edge(c, i)
		}
	}
}
