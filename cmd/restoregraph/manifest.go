package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/velero/bucket"
)

func newManifestCmd() *cobra.Command {
	var backup, endpoint, output string
	cmd := &cobra.Command{
		Use:   "manifest --backup FILE|URL [-o FILE]",
		Short: "Write the backup's manifest.json.gz",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			b, closeBackup, err := readBackup(ctx, backup, endpoint, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeBackup()
			if output == "" && bucket.IsURL(backup) {
				return badInput("-o is required for a backup named by a URL")
			}
			if output == "" {
				output = strings.TrimSuffix(strings.TrimSuffix(backup, ".gz"), ".tar") + "-manifest.json.gz"
			}
			if output == "-" {
				return manifest.Encode(cmd.OutOrStdout(), b.Manifest())
			}
			if err := manifest.WriteFile(output, b.Manifest()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d items\n", output, b.Manifest().Len())
			return nil
		},
	}
	cmd.Flags().StringVar(&backup, "backup", "", backupUsage)
	cmd.Flags().StringVar(&endpoint, "s3-endpoint", "", s3EndpointUsage)
	cmd.Flags().StringVarP(&output, "output", "o", "", "where to write (.gz compresses; - for plain JSON on standard output)")
	return cmd
}
