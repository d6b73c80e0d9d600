package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heapscope/heapscope/examples"
)

func newDemoCmd(e *env) *cobra.Command {
	o := &profileOptions{}
	var example string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Profile a bundled example service under load",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), e, cmd.Flags(), example, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&example, "example", "leaky", "example service: "+strings.Join(examples.Names(), ", "))
	_ = cmd.RegisterFlagCompletionFunc("example", cobra.FixedCompletions(examples.Names(), cobra.ShellCompDirectiveNoFileComp))
	// The example starts empty: two seconds of load fill the optimized
	// cache and open the connections before the window, as a service
	// that has been running a while would be.
	o.addWindowFlags(fs, 20*time.Second, 2*time.Second)
	fs.StringVar(&o.load.source.Request, "load", "", "request to drive instead of the example's own, as 'METHOD /path' with {seq}, {rand:N} and {pick:FILE} placeholders")
	fs.Lookup("rate").DefValue = "500"
	o.load.Rate = 500
	return withHelp(cmd, "demo", "{{examples}}", strings.Join(examples.Names(), ", "))
}

func runDemo(ctx context.Context, e *env, fs *pflag.FlagSet, example string, o *profileOptions) error {
	method, path := examples.DefaultLoad(example)
	if method == "" {
		return fmt.Errorf("--example %q: choose one of %s", example, strings.Join(examples.Names(), ", "))
	}
	if o.load.source.Request == "" && o.load.source.TargetsFile == "" {
		o.load.source.Request = method + " " + path
	}
	program, profiles := examples.Program(example)
	if !fs.Changed("profiles") {
		o.cfg.Extra = profiles
	}
	// Validate before starting anything.
	if _, _, err := o.config(fs, "http://127.0.0.1:1"); err != nil {
		return err
	}
	svc, err := startExample(ctx, example)
	if err != nil {
		return err
	}
	defer func() {
		if err := svc.Stop(); err != nil {
			fmt.Fprintf(e.stderr, "heapscope: %v\n", err)
		}
	}()
	cfg, format, err := o.config(fs, svc.URL)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "heapscope: started example %q (pid %d) on %s; profiling for %s %s\n",
		example, svc.PID(), svc.URL, cfg.Duration, cfg.Load.Describe())
	cfg.PID, cfg.Name = svc.PID(), program
	return profileAndReport(ctx, e, cfg, format)
}

// exampleExecutable is the executable that serves the bundled examples:
// heapscope itself (serve-example). Tests point it at a heapscope built
// as users build it, so that the examples' memory is not a race-detector
// build's.
var exampleExecutable = os.Executable

// startExample re-executes heapscope with the hidden serve-example command
// and waits for the service to say where it listens.
func startExample(ctx context.Context, name string) (*examples.Process, error) {
	self, err := exampleExecutable()
	if err != nil {
		return nil, fmt.Errorf("start example: find heapscope's own executable: %w", err)
	}
	return examples.Start(ctx, name, self, serveExampleName, name, "--addr", "127.0.0.1:0")
}
