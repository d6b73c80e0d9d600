package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/fleet"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/location"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/units"
	"github.com/heapscope/heapscope/internal/watch"
	"github.com/heapscope/heapscope/internal/watch/config"
	"github.com/heapscope/heapscope/internal/watch/kubesd"
)

type watchOptions struct {
	config, listen, logFormat, webhook, member string
	tokens, htpasswd                           string
	loc                                        location.Location
	once, debugPprof                           bool
	every, window, timeout, lease              time.Duration
	triggers                                   []string
	pid, concurrency                           int
}

func newWatchCmd(e *env) *cobra.Command {
	o := &watchOptions{}
	d := config.Default().Defaults
	cmd := &cobra.Command{
		Use:   "watch [URL…]",
		Short: "Profile services on a schedule and on triggers, into a store",
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWatch(cmd.Context(), e, cmd, args, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.config, "config", "", "watch configuration `FILE` (YAML); without it, the URLs with the flags below")
	storeFlags(fs, &o.loc, "store `DIR`: run directories and their index (or --postgres and --objects)")
	fs.Var(units.NewDuration(&o.lease, fleet.DefaultLease), "fleet-lease", "shared store: watchers split the targets; one that stops heartbeating loses its targets after this")
	fs.StringVar(&o.member, "fleet-member", "", "shared store: this watcher's `NAME` in the fleet (default: host name and a random suffix)")
	fs.BoolVar(&o.once, "once", false, "capture every target once and exit")
	fs.StringVar(&o.listen, "listen", "", "serve /metrics, /healthz and the history API (as heapscope server) on `ADDR`, such as 127.0.0.1:7071")
	fs.BoolVar(&o.debugPprof, "debug-pprof", false, "also serve watch's own /debug/pprof/ at --listen, behind the same credentials")
	fs.StringVar(&o.tokens, "auth-tokens", "", "require a bearer token of `FILE` (one a line) of every request to --listen but a bare /healthz; needed beyond loopback")
	fs.StringVar(&o.htpasswd, "htpasswd", "", "require a user and password of `FILE` (htpasswd -B) of every request to --listen but a bare /healthz; needed beyond loopback")
	fs.StringVar(&o.logFormat, "log-format", "text", "log lines on stderr: text or json")
	fs.Var(units.NewDuration(&o.every, d.Every), "every", "capture each target this often")
	fs.Var(units.NewDuration(&o.window, d.Window), "window", "each scheduled capture's window")
	fs.Var(units.NewDuration(&o.timeout, d.Timeout), "timeout", "bound of each request to a target, and of a capture beyond its window")
	fs.StringArrayVar(&o.triggers, "trigger", nil, "capture a bundle when `EXPR` holds, such as 'memory>=80%' or 'goroutines>=10000'; repeatable")
	fs.StringVar(&o.webhook, "webhook", "", "POST each bundle's summary as JSON to `URL`")
	fs.IntVar(&o.pid, "pid", 0, "the target's process, when it cannot be found from its port (one URL only)")
	fs.IntVar(&o.concurrency, "concurrency", config.DefaultConcurrency, "captures at once, across all targets")
	return withHelp(cmd, "watch")
}

func runWatch(ctx context.Context, e *env, cmd *cobra.Command, urls []string, o *watchOptions) error {
	log, err := watch.NewLogger(e.stderr, o.logFormat)
	if err != nil {
		return err
	}
	warn := func(err error) { log.Warn(err.Error()) }
	cfg, err := config.FromCommandLine(config.CommandLine{File: o.config, URLs: urls, Every: o.every, Window: o.window, Timeout: o.timeout,
		Triggers: o.triggers, Webhook: o.webhook, PID: o.pid, Concurrency: o.concurrency,
		Given: cmd.Flags().Changed, CheckTrigger: trigger.Check, Pods: &kubesd.Discovery{Warn: warn}, Warn: warn})
	if err != nil {
		return err
	}
	addr := cmp.Or(o.listen, cfg.Listen)
	if err := server.CheckCredentials(addr, o.tokens, o.htpasswd); err != nil && !o.once {
		return err // refused before anything starts
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(watch.DefaultMemoryLimit)
	}
	st, err := o.loc.Open(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := watch.Options{Config: cfg, Store: st, Version: version, Log: log}
	if !o.once {
		var leave func()
		if opts.Fleet, leave, err = watch.JoinFleet(ctx, st, fleet.Options{ID: o.member, Lease: o.lease, Log: log}); err != nil {
			return err
		}
		defer leave()
	}
	w, err := watch.New(opts)
	if err != nil {
		return err
	}
	if o.once {
		if err := w.Once(ctx); err != nil {
			return &codeError{code: exitPartial, err: err}
		}
		return nil
	}
	if addr != "" {
		sctx, stop := context.WithCancel(ctx)
		served := make(chan error, 2)
		go func() {
			served <- server.Run(sctx, server.Config{Store: st, Listen: addr, TokensFile: o.tokens, HtpasswdFile: o.htpasswd,
				Own: w.Handler(), DebugPprof: o.debugPprof || cfg.DebugPprof, Health: w.ServerHealth, Log: log}, func(url string) { log.Info("serving", "url", url); served <- nil })
		}()
		if err := <-served; err != nil {
			stop()
			return fmt.Errorf("--listen %s: %w", addr, err)
		}
		defer func() { // before the store closes: requests in flight end first
			stop()
			if err := <-served; err != nil {
				log.Error("serve", "err", err)
			}
		}()
	}
	if err := w.Run(ctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

type historyOptions struct {
	loc                             location.Location
	target, format, severity, since string
	limit                           int
}

func newHistoryCmd(e *env) *cobra.Command {
	o := &historyOptions{}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the problems, runs, trigger bundles and findings in a watch store",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := report.ParseFormat(o.format)
			if err != nil {
				return err
			}
			st, err := o.loc.Open(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer st.Close()
			min, err := diagnose.ParseSeverity(o.severity)
			if err != nil {
				return fmt.Errorf("--min-severity: %w", err)
			}
			q := store.Query{Target: o.target, Limit: o.limit, Severities: min.AndAbove()}
			if q.Since, err = config.Since("--since", o.since, time.Now()); err != nil {
				return err
			}
			d, err := report.ReadHistory(st, q)
			if err != nil {
				return err
			}
			d.Width = report.Width(e.stdout)
			return report.Write(e.stdout, format, d)
		},
	}
	fs := cmd.Flags()
	storeFlags(fs, &o.loc, "store `DIR` (or --postgres and --objects)")
	fs.StringVar(&o.target, "target", "", "only this target (its URL as history lists it)")
	fs.StringVar(&o.since, "since", "", "only the last `DURATION`, such as 24h or 7d")
	fs.IntVar(&o.limit, "limit", 100, "at most this many items of each kind; 0 for all")
	fs.StringVar(&o.severity, "min-severity", "low", "list findings of this severity and above: info, low, medium or high")
	fs.StringVar(&o.format, "format", "text", "output: text, markdown or json")
	return withHelp(cmd, "history")
}

func newStoreCmd(e *env) *cobra.Command {
	var data string
	var repair bool
	cmd := &cobra.Command{Use: "store", Short: "Look after a watch store"}
	check := &cobra.Command{
		Use:   "check",
		Short: "Check the index, the run directories and every file of every run; change nothing without --repair",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := store.OpenToCheck(data, repair) // without --repair, nothing changes
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := st.Check(repair)
			if err != nil {
				return err
			}
			if fmt.Fprintln(e.stdout, r.String()); !r.OK() {
				return &codeError{code: exitGateFailed, err: fmt.Errorf("store %s: %d problems", data, len(r.Problems()))}
			}
			return nil
		},
	}
	check.Flags().StringVar(&data, "data", "", "store `DIR` (required)")
	check.Flags().BoolVar(&repair, "repair", false, "index unindexed runs, remove leftovers, drop the rows of missing runs, mark runs with a broken file partial")
	cmd.AddCommand(withHelp(check, "store_check"))
	return cmd
}
