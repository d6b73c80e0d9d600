package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/examples"
)

// serveExampleName is the hidden command demo re-executes heapscope with, so
// the example service runs in a process of its own.
const serveExampleName = "serve-example"

func newServeExampleCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:    serveExampleName + " NAME [--addr HOST:PORT] [service flags]",
		Short:  "Serve a bundled example service (used by demo)",
		Hidden: true,
		// The example parses its own flags.
		DisableFlagParsing: true,
		Args:               cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code := examples.Main(cmd.Context(), args[0], args[1:], os.Getenv, e.stderr)
			if code != 0 {
				return &codeError{code: code}
			}
			return nil
		},
	}
}
