//go:build tools

// The velero command and the AWS object-store plugin, built from this module: the
// velero command for the comparison of its built-in restore actions with restoregraph's
// and, with the plugin, as the Velero server of the integration tests. This file keeps
// their dependencies in go.sum.
package tools

import (
	_ "github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws"
	_ "github.com/vmware-tanzu/velero/pkg/cmd/velero"
)
