package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/target"
	"github.com/heapscope/heapscope/internal/units"
)

// profileOptions are the flags of profile, shared with demo.
type profileOptions struct {
	cfg    run.Config
	noCPU  bool
	format string
	target targetFlags
	load   loadFlags
}

// addWindowFlags registers the flags of the collection window and output,
// shared by profile and demo.
func (o *profileOptions) addWindowFlags(fs *pflag.FlagSet, defaultDuration, defaultWarmup time.Duration) {
	c := &o.cfg
	fs.VarP(units.NewDuration(&c.Duration, defaultDuration), "duration", "d", "collection window; load runs for the same window")
	fs.Var(units.NewDuration(&c.Warmup, defaultWarmup), "warmup", "drive the load this long before the window opens, so caches and connections reach their steady size first")
	fs.IntVar(&c.Snapshots, "snapshots", run.DefaultSnapshots, "heap snapshots over the window, start and end included")
	fs.Var(units.NewDuration(&c.Interval, 0), "interval", "take a heap snapshot this often instead of --snapshots")
	fs.StringSliceVar(&c.Extra, "profiles", nil, "extra profiles over the window: block, mutex (comma-separated)")
	fs.BoolVar(&o.noCPU, "no-cpu", false, "skip the CPU profile")
	fs.Var(units.NewDuration(&c.Trace, 0), "trace", "also capture an execution trace of this long (whole seconds) from the window's start: profiles/trace.out and its GC timeline")
	fs.StringVar(&c.OutDir, "out", run.DefaultOutDir, "directory where the run directory is created")
	fs.StringVar(&o.format, "format", "text", "summary printed on stdout: text, json or markdown")
	fs.IntVar(&c.Repeat, "repeat", 1, "record `N` consecutive windows under windows/NNN/ of one run directory, for heapscope compare's significance tests")
	fs.BoolVar(&c.UntilConfident, "until-confident", true, "while the live heap grows but the samples cannot yet place the growth, keep the window open (and the load running) a snapshot interval at a time")
	fs.Var(units.NewDuration(&c.MaxDuration, 0), "max-duration", "longest window --until-confident keeps open (default 5 × --duration)")
	fs.BoolVar(&c.AllFindings, "all", false, "keep the allocation hot spots too small to matter among the findings")
	o.load.register(fs, "load-timeout", 200)
}

func newProfileCmd(e *env) *cobra.Command {
	o := &profileOptions{}
	cmd := &cobra.Command{
		Use:   "profile TARGET",
		Short: "Profile a running Go service over one window",
		Args:  exactArgs(1, "TARGET, the service's base URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProfile(cmd.Context(), e, cmd.Flags(), args[0], o)
		},
	}
	fs := cmd.Flags()
	o.addWindowFlags(fs, run.DefaultDuration, 0)
	fs.StringVar(&o.load.source.Request, "load", "", "drive load during the window: 'METHOD URL' (URL absolute or a path on TARGET; {seq}, {rand:N} and {pick:FILE} placeholders)")
	o.target.register(fs, "TARGET", "timeout of each request to pprof, beyond a profile's own duration", target.DefaultTimeout,
		"largest response accepted from pprof, in bytes")
	fs.IntVar(&o.cfg.PID, "pid", 0, "process id of the target, when it cannot be found from its port")
	return withHelp(cmd, "profile")
}

// config turns the options into a run configuration for the base URL,
// checked.
func (o *profileOptions) config(fs *pflag.FlagSet, baseURL string) (run.Config, report.Format, error) {
	format, err := report.ParseFormat(o.format)
	if err != nil {
		return run.Config{}, "", err
	}
	if fs.Changed("snapshots") && fs.Changed("interval") {
		return run.Config{}, "", errors.New("--snapshots and --interval both set: give one")
	}
	cfg := o.cfg
	cfg.CPU, cfg.Version = !o.noCPU, version
	cfg.UntilConfident = cfg.UntilConfident && cfg.Repeat == 1
	var header http.Header
	if cfg.Target, header, err = o.target.options(baseURL); err != nil {
		return run.Config{}, "", err
	}
	if cfg.Load, err = o.loadConfig(fs, baseURL, header); err != nil {
		return run.Config{}, "", err
	}
	if cfg.Load == nil && cfg.Warmup != 0 {
		return run.Config{}, "", errors.New("--warmup drives the load before the window: give --load 'METHOD URL' or --targets FILE")
	}
	return cfg, format, cfg.Validate()
}

// loadConfig builds the window's load from --load or --targets and the
// load flags; nil when there is no load.
func (o *profileOptions) loadConfig(fs *pflag.FlagSet, baseURL string, header http.Header) (*load.Options, error) {
	if o.load.source.Request == "" && o.load.source.TargetsFile == "" {
		for _, name := range []string{"connections", "ramp", "max-in-flight", "body", "body-file", "no-keepalive", "http1", "http2", "load-timeout"} {
			if fs.Changed(name) {
				return nil, fmt.Errorf("--%s applies to the load: give --load 'METHOD URL' or --targets FILE", name)
			}
		}
		return nil, nil
	}
	base, err := target.ParseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	o.load.source.Base, o.load.source.Header = base.Scheme+"://"+base.Host+base.Path, header
	opts, err := o.load.options(fs)
	if err != nil {
		return nil, err
	}
	if opts.TLS, err = target.TLSConfig(o.target.CACertFile, o.target.Insecure); err != nil {
		return nil, err
	}
	return &opts, nil
}

func runProfile(ctx context.Context, e *env, fs *pflag.FlagSet, baseURL string, o *profileOptions) error {
	cfg, format, err := o.config(fs, baseURL)
	if err != nil {
		return err
	}
	return profileAndReport(ctx, e, cfg, format)
}

// profileAndReport carries out a run, prints its summary and turns its
// status into the exit code.
func profileAndReport(ctx context.Context, e *env, cfg run.Config, format report.Format) error {
	bar := newStatus(e.stderr, false, 0)
	cfg.Progress = func(p run.Progress) { bar.Show(p.String()) }
	res, dir, err := run.Profile(ctx, cfg)
	bar.Finish()
	if err != nil {
		return err
	}
	if err := report.Write(e.stdout, format, report.Run{Result: res, Dir: dir}); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return &codeError{code: exitInterrupted, err: fmt.Errorf("interrupted; what was collected is in %s", dir)}
	case res.Status != result.StatusComplete:
		return &codeError{code: exitPartial, err: fmt.Errorf("run %s: %d step(s) not collected, see %s", res.Status, len(res.Failures), dir)}
	}
	return nil
}
