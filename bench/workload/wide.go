package workload

import (
	"fmt"
	"strings"
)

// Wide returns a backup of namespaces namespaces named <prefix>-00 and on, each holding
// perNamespace ConfigMaps of 1 KiB: the widest restore there is, every object
// depending on its namespace only.
func Wide(prefix string, namespaces, perNamespace int, seed uint64) *Backup {
	b := newBackup(seed)
	data := map[string]any{"data": map[string]any{"payload": strings.Repeat("x", 1024)}}
	for i := range namespaces {
		ns := fmt.Sprintf("%s-%02d", prefix, i)
		b.add("v1", "Namespace", "namespaces", "", ns, nil, nil)
		for j := range perNamespace {
			b.add("v1", "ConfigMap", "configmaps", ns, fmt.Sprintf("cm-%05d", j), nil, data)
		}
	}
	return b
}
