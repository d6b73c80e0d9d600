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
	"github.com/heapscope/heapscope/internal/target"
	"github.com/heapscope/heapscope/internal/units"
)

// loadFlags are the request and model flags of load, shared with profile
// and demo.
type loadFlags struct {
	load.Options
	source       load.Source
	http1, http2 bool
}

// register adds the flags; timeoutName is the name of the per-request
// timeout (profile's --timeout is pprof's).
func (f *loadFlags) register(fs *pflag.FlagSet, timeoutName string, defaultRate float64) {
	fs.Float64Var(&f.Rate, "rate", defaultRate, "open model: requests per second, sent at their intended times whatever the service does")
	fs.Var(units.NewDuration(&f.Ramp, 0), "ramp", "open model: grow the rate linearly from 0 over this long")
	fs.IntVar(&f.Connections, "connections", 0, "closed model: connections sending back to back (with --rate 0 or omitted)")
	fs.IntVar(&f.MaxInFlight, "max-in-flight", 0, fmt.Sprintf("open model: most requests outstanding at once (default %d)", load.DefaultMaxInFlight))
	fs.StringVar(&f.source.Body, "body", "", "request body")
	fs.StringVar(&f.source.BodyFile, "body-file", "", "file holding the request body")
	fs.StringVar(&f.source.TargetsFile, "targets", "", "file of requests in vegeta's http format (METHOD URL, header lines, @body-file), sent round-robin")
	fs.BoolVar(&f.NoKeepAlive, "no-keepalive", false, "open a new connection for every request")
	fs.BoolVar(&f.http1, "http1", false, "speak HTTP/1.1 only, also to https URLs")
	fs.BoolVar(&f.http2, "http2", false, "speak HTTP/2 only: over TLS for https URLs, h2c for http URLs")
	fs.Var(units.NewDuration(&f.Timeout, load.DefaultTimeout), timeoutName, "timeout of each load request, to the end of its response")
	fs.Int64Var(&f.Seed, "seed", 1, "seed of the {rand:N} and {pick:FILE} placeholders")
}

// options returns the load options of the flags, with the requests of
// their source (whose request, base and header the caller sets). A bare
// --connections selects the closed model even where --rate has a default.
func (f *loadFlags) options(fs *pflag.FlagSet) (load.Options, error) {
	reqs, err := f.source.Requests()
	if err != nil {
		return load.Options{}, err
	}
	o := f.Options
	o.Targets = reqs
	if o.Connections > 0 && !fs.Changed("rate") {
		o.Rate = 0
	}
	switch {
	case f.http1 && f.http2:
		return load.Options{}, errors.New("--http1 and --http2 both set: give one")
	case f.http1:
		o.Protocol = load.ProtocolHTTP1
	case f.http2:
		o.Protocol = load.ProtocolHTTP2
	}
	return o, nil
}

// loadOptions are the flags of heapscope load.
type loadOptions struct {
	loadFlags
	headers  []string
	progress bool
	format   string
	caCert   string
	insecure bool
}

func newLoadCmd(e *env) *cobra.Command {
	o := &loadOptions{}
	cmd := &cobra.Command{
		Use:   "load [URL]",
		Short: "Drive HTTP load and report latency, like wrk or vegeta",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 || len(args) == 0 && o.source.TargetsFile == "" {
				return fmt.Errorf("load takes URL (or --targets FILE) (got %d arguments); see heapscope load --help", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			url := ""
			if len(args) == 1 {
				url = args[0]
			}
			return runLoad(cmd.Context(), e, cmd.Flags(), url, o)
		},
	}
	fs := cmd.Flags()
	o.register(fs, "timeout", 0)
	fs.StringVarP(&o.source.Method, "method", "X", http.MethodGet, "request method")
	fs.StringArrayVarP(&o.headers, "header", "H", nil, "header 'Name: value' sent with every request (repeatable)")
	fs.VarP(units.NewDuration(&o.Duration, 10*time.Second), "duration", "d", "how long to send requests (with --requests and no --duration: until they are sent)")
	fs.Uint64VarP(&o.MaxRequests, "requests", "n", 0, "stop after this many requests")
	fs.BoolVar(&o.Series, "series", false, "add a per-second time series to the results")
	fs.BoolVar(&o.progress, "progress", false, "show progress on stderr even when it is not a terminal")
	fs.StringVar(&o.format, "format", "text", "output: text, json or markdown")
	fs.StringVar(&o.caCert, "cacert", "", "PEM file of CA certificates to trust for https")
	fs.BoolVar(&o.insecure, "insecure", false, "do not verify the server's TLS certificate")
	return withHelp(cmd, "load")
}

func runLoad(ctx context.Context, e *env, fs *pflag.FlagSet, url string, o *loadOptions) error {
	format, err := report.ParseFormat(o.format)
	if err != nil {
		return err
	}
	if o.source.Header, err = target.ParseHeaders(o.headers); err != nil {
		return err
	}
	if o.source.URL = url; url != "" {
		o.source.Base = load.Origin(url)
	}
	opts, err := o.loadFlags.options(fs)
	if err != nil {
		return err
	}
	if opts.MaxRequests > 0 && !fs.Changed("duration") {
		opts.Duration = 0
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if opts.TLS, err = target.TLSConfig(o.caCert, o.insecure); err != nil {
		return err
	}
	pr := newStatus(e.stderr, o.progress, time.Second)
	opts.Progress = func(p load.Progress) { pr.Show(p.String()) } // every load.DefaultProgressInterval
	res, err := load.Run(ctx, opts)
	pr.Finish()
	if err != nil {
		return err
	}
	if err := report.Write(e.stdout, format, report.Load{Load: res.Summary()}); err != nil {
		return err
	}
	if res.Interrupted {
		return &codeError{code: exitInterrupted, err: fmt.Errorf("interrupted after %s: the results above are those so far", res.Duration.Round(time.Millisecond))}
	}
	if err := res.NoneSucceeded(); err != nil {
		return &codeError{code: exitPartial, err: err}
	}
	return nil
}
