package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/view"
)

type viewOptions struct {
	addr string
	open bool
	// browse opens a URL in the user's browser; tests replace it.
	browse func(url string) error
	// ready, when set, is told the URL once the server listens (tests).
	ready func(url string)
}

// defaultViewAddr lets the system pick a free port on the loopback.
const defaultViewAddr = "127.0.0.1:0"

func newViewCmd(e *env) *cobra.Command {
	o := &viewOptions{}
	cmd := &cobra.Command{
		Use:   "view RUN_DIR|PROFILE",
		Short: "Browse a run or a profile: its report, flame graphs and pprof's web UI",
		Long: `view serves a local web UI, on 127.0.0.1 only, for a run directory or a
single profile, and prints its address:

  - the run's report.html, flame graphs and files;
  - for every profile of the run (or PROFILE), pprof's own web UI — flame
    graph, top, source, peek, graph, disassembly — mounted in heapscope's
    server through pprof's driver, so a finding's site is two clicks from
    pprof's source and peek views; and heapscope's own interactive flame
    graph of it, with every sample type.

pprof's graph view needs Graphviz (dot) and its disassembly objdump, as with
go tool pprof. heapscope hands pprof the profile itself, so pprof saves no
copy under ~/pprof. Ctrl-C stops the server.`,
		Example: `  heapscope view heapscope-runs/127.0.0.1_6060-20261122T101500Z
  heapscope view heapscope-runs/127.0.0.1_6060-20261122T101500Z --open
  heapscope view profiles/allocs-delta.pb.gz --addr 127.0.0.1:8080`,
		Args: exactArgs(1, "RUN_DIR or PROFILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runView(cmd.Context(), e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.addr, "addr", defaultViewAddr, "address to listen on: 127.0.0.1:PORT (port 0 picks a free one)")
	fs.BoolVar(&o.open, "open", false, "open the address in a browser (xdg-open or open)")
	return cmd
}

func runView(ctx context.Context, e *env, path string, o *viewOptions) error {
	if _, err := view.LoopbackAddr(o.addr); err != nil {
		return fmt.Errorf("--addr %w", err)
	}
	srv, err := view.Open(path, view.Options{Log: e.stderr})
	if err != nil {
		return err
	}
	err = view.Serve(ctx, o.addr, srv, func(url string) {
		fmt.Fprintf(e.stdout, "%s: %d profiles\nserving on %s (Ctrl-C stops)\n", srv.Title(), len(srv.Profiles()), url)
		if o.open {
			browse := o.browse
			if browse == nil {
				browse = view.OpenBrowser
			}
			if err := browse(url); err != nil {
				fmt.Fprintf(e.stderr, "heapscope: warning: open a browser: %v; open %s yourself\n", err, url)
			}
		}
		if o.ready != nil {
			o.ready(url)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "stopped")
	return nil
}
