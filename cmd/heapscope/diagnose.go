package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/store/location"
	"github.com/heapscope/heapscope/internal/watch/config"
)

type diagnoseOptions struct {
	run.Diagnosis
	format, failOn, target, since string
	loc                           location.Location
}

func newDiagnoseCmd(e *env) *cobra.Command {
	o := &diagnoseOptions{}
	cmd := &cobra.Command{
		Use:   "diagnose RUN_DIR | PROFILE...",
		Short: "Name the lines that leak, allocate or contend, with evidence and a fix",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.loc.Given() && (len(args) > 0 || o.target == ""):
				return fmt.Errorf("diagnose --data DIR takes --target (the URL history lists) and no RUN_DIR or PROFILE")
			case !o.loc.Given() && len(args) == 0:
				return fmt.Errorf("diagnose takes RUN_DIR or one or more PROFILE files; see heapscope diagnose --help")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiagnose(cmd.Context(), e, args, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.format, "format", "text", "output: text, json or markdown")
	fs.StringVar(&o.failOn, "fail-on", "", "exit 1 when a finding of this severity or above is present: low, medium or high")
	fs.StringVar(&o.ThresholdsFile, "config", "", "YAML file of thresholds overriding the defaults")
	fs.StringVar(&o.SourceDir, "source", "", "directory of the service's source, to read the lines findings point at")
	storeFlags(fs, &o.loc, "diagnose a watched target's stored runs in the store `DIR` together (with --target; or --postgres and --objects)")
	fs.StringVar(&o.target, "target", "", "with --data: the target, its URL as history lists it")
	fs.StringVar(&o.since, "since", "7d", "with --data: the runs of the last `DURATION`")
	fs.BoolVar(&o.All, "all", false, "also show the allocation hot spots too small to matter (few samples, or below every low threshold)")
	return withHelp(cmd, "diagnose")
}

func runDiagnose(ctx context.Context, e *env, args []string, o *diagnoseOptions) error {
	format, err := report.ParseFormat(o.format)
	if err != nil {
		return err
	}
	gate := diagnose.Severity(-1)
	if o.failOn != "" {
		if gate, err = diagnose.ParseSeverity(o.failOn); err != nil || gate == diagnose.Info {
			return fmt.Errorf("--fail-on %q: choose low, medium or high", o.failOn)
		}
	}
	rep, warnings, err := diagnoseInput(ctx, args, o)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "heapscope: warning: %v\n", w)
	}

	if err := report.Write(e.stdout, format, report.Findings{Findings: rep.Findings, Notes: rep.Notes}); err != nil {
		return err
	}
	if n := diagnose.CountAtLeast(rep.Findings, gate); gate >= 0 && n > 0 {
		return &codeError{code: exitGateFailed, err: fmt.Errorf("%d finding(s) of severity %s or above", n, gate)}
	}
	return nil
}

// diagnoseInput diagnoses the paths given, or the target's stored runs.
func diagnoseInput(ctx context.Context, paths []string, o *diagnoseOptions) (diagnose.Report, []error, error) {
	if !o.loc.Given() {
		return run.DiagnosePaths(ctx, paths, o.Diagnosis)
	}
	since, err := config.Since("--since", o.since, time.Now())
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	st, err := o.loc.Open(ctx, true)
	if err != nil {
		return diagnose.Report{}, nil, err
	}
	defer st.Close()
	return run.DiagnoseStored(ctx, st, o.target, since, o.Diagnosis)
}
