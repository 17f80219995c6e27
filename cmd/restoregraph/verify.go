package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/restoregraph/restoregraph/restore"
)

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newVerifyCmd() *cobra.Command {
	var output string
	var rf restoreFlags
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "verify --backup FILE|URL | --from-backup NAME",
		Short: "Check that the cluster holds what restoring the backup makes",
		Long: `Checks, with the same flags as restore, that every object the restore makes exists,
that its ownerReferences name live objects, and that what the restore made holds what
it makes of the backup: the body at the chosen version, sanitized, mapped and passed
through the restore item actions (fields the server adds are not compared). Exit code
0 only when everything holds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, p, err := rf.openPlan(cmd, t, output, "text", "json")
			if err != nil {
				return err
			}
			defer s.close()
			rep, err := restore.Verify(s.ctx, p, s.target, s.run)
			if err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			if output == "json" {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else if err := rep.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			if !rep.OK() {
				return &exitError{code: exitIncomplete, err: fmt.Errorf("%d missing, %d differ", rep.Summary[restore.Missing], rep.Summary[restore.Differs])}
			}
			return nil
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	t.addFlags(cmd)
	return cmd
}
