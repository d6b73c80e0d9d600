package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/report"
)

func newVersionCmd(e *env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print heapscope's version and build information",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := report.ParseFormat(format)
			if err != nil {
				return err
			}
			if f == report.FormatMarkdown {
				return fmt.Errorf("--format %s: version prints text or json", format)
			}
			bi, _ := debug.ReadBuildInfo()
			return report.Write(e.stdout, f, report.NewVersion(version, bi))
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	return cmd
}
