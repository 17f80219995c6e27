package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// signalContext is a context that an interrupt or a SIGTERM (a Pod's stop) cancels, so
// that what a command holds (Leases, plugin processes, spill files) is let go.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func newPlanCmd() *cobra.Command {
	var output string
	var rf restoreFlags
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "plan --backup FILE|URL | --from-backup NAME",
		Short: "Show what a restore would do, without writing anything",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, p, err := rf.openPlan(cmd, t, output, "text", "json", "dot")
			if err != nil {
				return err
			}
			defer s.close()
			conflicts, err := p.Conflicts(s.ctx, s.run)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				return p.WriteJSON(out)
			case "dot":
				dot, err := p.DOT()
				if err != nil {
					return err
				}
				_, err = out.Write(dot)
				return err
			}
			return p.WriteText(out, conflicts)
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text, json or dot")
	t.addFlags(cmd)
	return cmd
}
