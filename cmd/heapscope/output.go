package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/progress"
	"github.com/heapscope/heapscope/internal/target"
	"github.com/heapscope/heapscope/internal/units"
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

// flagNames names the flags of the fields whose flag is not their name in
// kebab case.
var flagNames = map[string]string{
	"MaxRequests": "requests", "TargetsFile": "targets", "Request": "load", "Extra": "profiles",
	"ThresholdsFile": "config", "SourceDir": "source",
}

// flagText is err's message with the options that an *option.Error in it
// names by field path named by their flags on cmd (option.Names), or by
// their paths when they have none.
func flagText(cmd *cobra.Command, err error) string {
	var oe *option.Error
	if cmd == nil || !errors.As(err, &oe) {
		return err.Error()
	}
	name := option.Names(func(n string) bool { return cmd.Flags().Lookup(n) != nil }, flagNames)
	return strings.Replace(err.Error(), oe.Error(), oe.Text(func(path string) string {
		if n := name(path); n != path {
			return "--" + n
		}
		return path
	}), 1)
}

// newStatus returns the progress line of a long command on w, redrawn in
// place when w is a terminal; elsewhere (a CI log), offTerminal says
// whether to print lines, every how often at most.
func newStatus(w io.Writer, offTerminal bool, every time.Duration) *progress.Line {
	f, ok := w.(*os.File)
	return progress.NewLine(w, ok && term.IsTerminal(int(f.Fd())), offTerminal, every)
}

// open opens the file at path, or stdin for "-".
func (e *env) open(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(e.stdin), nil
	}
	return os.Open(path)
}

// targetFlags say how to reach a service's pprof: its path, headers, TLS,
// timeout and response-size limit. profile (and demo), trace and rss share
// them.
type targetFlags struct {
	target.Options
	headers []string
}

// register adds the flags to fs. what names the service in their help
// ("TARGET", "--target"), timeoutUsage says what --timeout bounds, and
// --max-body is registered only with a maxBodyUsage.
func (f *targetFlags) register(fs *pflag.FlagSet, what, timeoutUsage string, defaultTimeout time.Duration, maxBodyUsage string) {
	fs.StringVar(&f.PprofPath, "pprof-path", target.DefaultPprofPath, "path of net/http/pprof on "+what)
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "header 'Name: value' sent with every request to "+what+" (repeatable)")
	fs.StringVar(&f.CACertFile, "cacert", "", "PEM file of CA certificates to trust for https")
	fs.BoolVar(&f.Insecure, "insecure", false, "do not verify the target's TLS certificate")
	fs.Var(units.NewDuration(&f.Timeout, defaultTimeout), "timeout", timeoutUsage)
	if maxBodyUsage != "" {
		fs.Int64Var(&f.MaxBody, "max-body", target.DefaultMaxBody, maxBodyUsage)
	}
}

// options returns the client options for baseURL, checked, with the
// parsed headers.
func (f *targetFlags) options(baseURL string) (target.Options, http.Header, error) {
	header, err := target.ParseHeaders(f.headers)
	if err != nil {
		return target.Options{}, nil, err
	}
	o := f.Options
	o.BaseURL, o.Header = baseURL, header
	return o, header, o.Validate()
}
