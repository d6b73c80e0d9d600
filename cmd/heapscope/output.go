package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

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

// status shows a long command's progress on stderr as one line: on a
// terminal, redrawn in place; elsewhere (a CI log), when the command asks
// for it, one line per update, or one per interval at most and the last
// one at the end.
type status struct {
	w        io.Writer
	terminal bool
	on       bool
	every    time.Duration // off a terminal, the least time between lines
	last     time.Time
	drawn    bool
	pending  string // the last line, when not printed
}

// newStatus returns a status line on w. offTerminal says whether to print
// lines when w is not a terminal, every how often at most.
func newStatus(w io.Writer, offTerminal bool, every time.Duration) *status {
	st := &status{w: w, on: offTerminal, every: every}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		st.terminal, st.on = true, true
	}
	return st
}

func (st *status) show(line string) {
	if !st.on {
		return
	}
	now := time.Now()
	if !st.terminal && st.drawn && now.Sub(st.last) < st.every {
		st.pending = line
		return
	}
	st.last, st.drawn, st.pending = now, true, ""
	if st.terminal {
		fmt.Fprintf(st.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(st.w, line)
	}
}

// finish clears the terminal's line, or prints the last line when it was
// held back.
func (st *status) finish() {
	switch {
	case st.terminal && st.drawn:
		fmt.Fprint(st.w, "\r\033[K")
	case !st.terminal && st.pending != "":
		fmt.Fprintln(st.w, st.pending)
	}
}

// window shows a profiling window's progress.
func (st *status) window(p run.Progress) {
	line := fmt.Sprintf("window %s/%s", p.Elapsed.Round(time.Second), p.Total)
	if p.Requests > 0 {
		line += fmt.Sprintf(", %d requests", p.Requests)
		if p.Errors > 0 {
			line += fmt.Sprintf(" (%d errors)", p.Errors)
		}
	}
	st.show(line)
}

// step shows step done of total, described by what.
func (st *status) step(done, total int, what string) {
	st.show(fmt.Sprintf("[%d/%d] %s", done, total, what))
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
