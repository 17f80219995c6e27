package pluginhost_test

import (
	"context"
	"log"

	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// Velero's plugins, unmodified, in a restore: the RestoreItemActions of every
// executable in Velero's plugin directory, registered for the restore's plan.
func Example() {
	ctx := context.Background()
	executables, err := pluginhost.Executables("/plugins")
	if err != nil {
		log.Fatal(err)
	}
	var commands [][]string
	for _, e := range executables {
		commands = append(commands, []string{e})
	}
	host := &pluginhost.Host{Env: []string{"KUBECONFIG=/etc/restoregraph/kubeconfig"}}
	defer host.Close() // ends every plugin process
	found, err := host.Discover(ctx, commands...)
	if err != nil {
		log.Print(err) // the plugins that could not start; the others are in found
	}
	var reg plugin.Registry
	if err := host.Register(&reg, found); err != nil {
		log.Fatal(err)
	}
	_ = restore.PlanOptions{Extensions: restore.Extensions{Plugins: &reg}}
}
