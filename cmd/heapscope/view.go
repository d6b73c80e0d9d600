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
		Args:  exactArgs(1, "RUN_DIR or PROFILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runView(cmd.Context(), e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.addr, "addr", defaultViewAddr, "address to listen on: 127.0.0.1:PORT (port 0 picks a free one)")
	fs.BoolVar(&o.open, "open", false, "open the address in a browser (xdg-open or open)")
	return withHelp(cmd, "view")
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
