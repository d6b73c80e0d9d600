package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/target"
)

// exactArgs is cobra.ExactArgs with an error that names what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s takes %s (got %d arguments); see heapscope %s --help", cmd.Name(), what, len(args), cmd.Name())
		}
		return nil
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// progress draws a bar with the window's elapsed time and requests on
// stderr, when stderr is a terminal; otherwise it stays silent.
type progress struct {
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer, total time.Duration) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	bar := progressbar.NewOptions64(total.Milliseconds(),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("window"),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(200*time.Millisecond),
	)
	return &progress{bar: bar}
}

func (p *progress) update(s run.Progress) {
	if p.bar == nil {
		return
	}
	desc := fmt.Sprintf("window %s/%s", s.Elapsed.Round(time.Second), s.Total)
	if s.Requests > 0 {
		desc += fmt.Sprintf(", %d requests", s.Requests)
		if s.Errors > 0 {
			desc += fmt.Sprintf(" (%d errors)", s.Errors)
		}
	}
	p.bar.Describe(desc)
	_ = p.bar.Set64(s.Elapsed.Milliseconds())
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// stepProgress draws a bar of a long command's steps (benchmark runs,
// allocation patterns) with an ETA on stderr, when stderr is a terminal;
// otherwise it stays silent.
type stepProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func newStepProgress(w io.Writer) *stepProgress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &stepProgress{}
	}
	return &stepProgress{w: w}
}

// update shows step done of total, described by step; total may change
// as the command learns more.
func (p *stepProgress) update(done, total int, step string) {
	if p.w == nil {
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	if total != p.bar.GetMax() {
		p.bar.ChangeMax(total)
	}
	p.bar.Describe(step)
	_ = p.bar.Set(done)
}

func (p *stepProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// targetFlags say how to reach a service's pprof: its path, headers, TLS,
// timeout and response-size limit. profile (and demo), trace and rss share
// them.
type targetFlags struct {
	pprofPath string
	headers   []string
	caCert    string
	insecure  bool
	timeout   time.Duration
	maxBody   int64
}

// register adds the flags to fs. what names the service in their help
// ("TARGET", "--target"), timeoutUsage says what --timeout bounds, and
// --max-body is registered only with a maxBodyUsage.
func (f *targetFlags) register(fs *pflag.FlagSet, what, timeoutUsage string, defaultTimeout time.Duration, maxBodyUsage string) {
	fs.StringVar(&f.pprofPath, "pprof-path", target.DefaultPprofPath, "path of net/http/pprof on "+what)
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "header 'Name: value' sent with every request to "+what+" (repeatable)")
	fs.StringVar(&f.caCert, "cacert", "", "PEM file of CA certificates to trust for https")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify the target's TLS certificate")
	fs.DurationVar(&f.timeout, "timeout", defaultTimeout, timeoutUsage)
	if maxBodyUsage != "" {
		fs.Int64Var(&f.maxBody, "max-body", target.DefaultMaxBody, maxBodyUsage)
	}
}

// options checks the flags and returns the client options for baseURL,
// with the parsed headers.
func (f *targetFlags) options(baseURL string) (target.Options, http.Header, error) {
	header, err := target.ParseHeaders(f.headers)
	if err != nil {
		return target.Options{}, nil, err
	}
	if f.timeout < 0 {
		return target.Options{}, nil, fmt.Errorf("--timeout %s: give a positive duration", f.timeout)
	}
	if f.maxBody < 0 {
		return target.Options{}, nil, fmt.Errorf("--max-body %d: give a positive size in bytes", f.maxBody)
	}
	return target.Options{
		BaseURL: baseURL, PprofPath: f.pprofPath, Header: header,
		CACertFile: f.caCert, Insecure: f.insecure, Timeout: f.timeout, MaxBody: f.maxBody,
	}, header, nil
}
