//go:build tools

// The velero command, built from this module for the comparison of its built-in
// restore actions with restoregraph's; this file keeps its dependencies in go.sum.
package tools

import _ "github.com/vmware-tanzu/velero/pkg/cmd/velero"
