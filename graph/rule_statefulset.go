package graph

import "strings"

// StatefulSetClaims orders a StatefulSet after the claims of its volume claim templates
// that the backup holds: a PersistentVolumeClaim named <template>-<statefulset>-<ordinal>
// in the StatefulSet's namespace. Started first, the StatefulSet's controller would make
// those claims itself, from the templates, before the backup's were restored, and the
// backup's (their storage class, size, annotations, a resource modifier's changes) would
// find them there and be lost. Velero restores claims before workloads for the same
// reason.
var StatefulSetClaims Rule = statefulSetClaims{}

type statefulSetClaims struct{}

func (statefulSetClaims) Name() string { return "statefulset-claims" }

func (statefulSetClaims) AddEdges(b *RuleBuilder) {
	items := b.Items()
	sets := map[[2]string]int{} // namespace, name
	for i, it := range items {
		if it.Group == "apps" && it.Resource == "statefulsets" {
			sets[[2]string{it.Namespace, it.Name}] = i
		}
	}
	if len(sets) == 0 {
		return
	}
	for i, it := range items {
		if it.Group != "" || it.Resource != "persistentvolumeclaims" {
			continue
		}
		// <template>-<statefulset>-<ordinal>: the template's name may hold dashes too,
		// so every split that leaves a template, a StatefulSet and an ordinal is tried.
		cut := strings.LastIndexByte(it.Name, '-')
		if cut <= 0 || !ordinal(it.Name[cut+1:]) {
			continue
		}
		rest := it.Name[:cut]
		for j := 1; j < len(rest); j++ {
			if rest[j] != '-' {
				continue
			}
			if s, ok := sets[[2]string{it.Namespace, rest[j+1:]}]; ok {
				b.Edge(i, s)
				break
			}
		}
	}
}

func ordinal(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
