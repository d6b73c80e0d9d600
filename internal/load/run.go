package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Defaults for the zero values of Options.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxInFlight = 256
)

// progressInterval is the period of Options.Progress calls.
const progressInterval = 200 * time.Millisecond

// Options configures a run.
type Options struct {
	// Request is the template of every request.
	Request Request
	// Rate is the number of requests per second, > 0.
	Rate float64
	// Duration is how long requests are scheduled, > 0.
	Duration time.Duration
	// Timeout bounds each request from its send to the end of its response
	// body; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxInFlight bounds the requests outstanding at once; a request that
	// falls due while MaxInFlight are outstanding is dropped and counted in
	// Result.Dropped. 0 means DefaultMaxInFlight.
	MaxInFlight int
	// Client sends the requests. nil means a client of its own with
	// keep-alive connections for MaxInFlight requests, which does not follow
	// redirects (a 3xx is the response measured) and whose idle connections
	// are closed when Run returns.
	Client *http.Client
	// Seed seeds the generator of {rand:N} placeholders. Request i of the
	// schedule, due at start + i/rate, gets {seq} = i and the i-th draws of
	// the generator whether or not earlier requests were dropped, so the
	// same seed gives the same URL to the same request. 0 is a seed like any
	// other.
	Seed int64
	// Progress, if set, is called every 200ms while the run lasts and once
	// more with the final counts before Run returns. Calls never overlap.
	Progress func(Progress)
}

// Progress is a snapshot of a run's counts.
type Progress struct {
	// Elapsed is the time since the run started.
	Elapsed time.Duration
	// Sent, Completed, Errors and Dropped are as in Result (Sent is
	// Result.Requests).
	Sent, Completed, Errors, Dropped uint64
}

// Run sends opts.Request at opts.Rate for opts.Duration and returns what
// happened. It returns once Duration has elapsed and every request sent has
// completed, failed or timed out. When ctx ends, Run stops scheduling at
// once, cancels the outstanding requests (counted as ErrorKindCanceled) and
// returns the partial Result with a nil error: the caller decides what an
// interrupted run means. Only invalid Options are errors.
func Run(ctx context.Context, opts Options) (Result, error) {
	return run(ctx, opts, systemClock{})
}

// clock is the time source of the scheduler; tests replace it to make the
// scheduler late.
type clock interface {
	// Now returns the current time; it is called from many goroutines.
	Now() time.Time
	// SleepUntil waits until t or until ctx ends, and reports whether t was
	// reached. It is called from one goroutine.
	SleepUntil(ctx context.Context, t time.Time) bool
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

func (o *Options) setDefaults() {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Request.Method == "" {
		o.Request.Method = http.MethodGet
	}
}

func (o *Options) validate() (*Template, error) {
	switch {
	case math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate <= 0:
		return nil, fmt.Errorf("rate %g per second must be a positive number", o.Rate)
	case o.Duration <= 0:
		return nil, fmt.Errorf("duration %s must be positive", o.Duration)
	case o.Timeout < 0:
		return nil, fmt.Errorf("timeout %s must not be negative", o.Timeout)
	case o.MaxInFlight < 0:
		return nil, fmt.Errorf("max in-flight %d must not be negative", o.MaxInFlight)
	}
	if err := o.Request.Validate(); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	return compileURL(o.Request.URL)
}

// runner is the state of one run.
type runner struct {
	opts   Options
	clock  clock
	client *http.Client
	slots  chan struct{} // one token per outstanding request
	host   string        // the Host header, if the request sets one
	tally  tally
}

func run(ctx context.Context, opts Options, clk clock) (Result, error) {
	opts.setDefaults()
	tmpl, err := opts.validate()
	if err != nil {
		return Result{}, fmt.Errorf("run load: %w", err)
	}
	r := &runner{
		opts:   opts,
		clock:  clk,
		client: opts.Client,
		slots:  make(chan struct{}, opts.MaxInFlight),
		host:   opts.Request.Header.Get("Host"),
	}
	r.tally.init()
	if r.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = opts.MaxInFlight
		tr.MaxIdleConnsPerHost = opts.MaxInFlight
		defer tr.CloseIdleConnections()
		r.client = &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}

	start := clk.Now()
	var progress sync.WaitGroup
	stopProgress := make(chan struct{})
	if opts.Progress != nil {
		progress.Go(func() { r.reportProgress(start, stopProgress) })
	}

	var requests sync.WaitGroup
	r.schedule(ctx, start, tmpl, &requests)
	requests.Wait()
	end := clk.Now()
	close(stopProgress)
	progress.Wait()

	res := r.tally.result(end.Sub(start))
	res.TargetRate = opts.Rate
	if opts.Progress != nil {
		opts.Progress(Progress{
			Elapsed: res.Duration, Sent: res.Requests, Completed: res.Completed,
			Errors: res.Errors, Dropped: res.Dropped,
		})
	}
	return res, nil
}

// schedule sends request i at start + i/rate until Duration has elapsed or
// ctx ends. Due times are computed from start, so a late wake-up delays one
// request and the following ones catch up.
func (r *runner) schedule(ctx context.Context, start time.Time, tmpl *Template, requests *sync.WaitGroup) {
	rnd := rand.New(rand.NewPCG(uint64(r.opts.Seed), 0))
	constant := tmpl.Constant()
	var buf []byte
	for i := uint64(0); ; i++ {
		offset := time.Duration(math.Round(float64(i) * float64(time.Second) / r.opts.Rate))
		if offset >= r.opts.Duration {
			break
		}
		due := start.Add(offset)
		if !r.clock.SleepUntil(ctx, due) {
			return
		}
		// Expand even the requests about to be dropped, so that request i
		// always gets the i-th draws of rnd.
		if !constant {
			buf = tmpl.Expand(buf[:0], i, rnd)
		}
		select {
		case r.slots <- struct{}{}:
		default:
			r.tally.drop()
			continue
		}
		url := r.opts.Request.URL
		if !constant {
			url = string(buf)
		}
		r.tally.send(len(r.opts.Request.Body))
		requests.Go(func() {
			defer func() { <-r.slots }()
			r.do(ctx, url, due)
		})
	}
	// Keep the window its full length even when the last request is due
	// well before its end.
	r.clock.SleepUntil(ctx, start.Add(r.opts.Duration))
}

// do sends one request and records its outcome.
func (r *runner) do(ctx context.Context, url string, due time.Time) {
	rctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	var body io.Reader = http.NoBody
	if len(r.opts.Request.Body) > 0 {
		body = bytes.NewReader(r.opts.Request.Body)
	}
	req, err := http.NewRequestWithContext(rctx, r.opts.Request.Method, url, body)
	if err != nil {
		r.tally.fail(ErrorKindInvalidRequest, 0)
		return
	}
	if r.opts.Request.Header != nil {
		req.Header = r.opts.Request.Header.Clone()
	}
	if r.host != "" {
		req.Host = r.host
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.tally.fail(r.errorKind(ctx, err), 0)
		return
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		r.tally.fail(r.errorKind(ctx, err), uint64(n))
		return
	}
	r.tally.complete(resp.StatusCode, uint64(n), r.clock.Now().Sub(due))
}

// errorKind classifies a transport failure.
func (r *runner) errorKind(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return ErrorKindCanceled
	}
	var (
		netErr  net.Error
		dnsErr  *net.DNSError
		tlsRec  tls.RecordHeaderError
		tlsVer  *tls.CertificateVerificationError
		tlsAl   tls.AlertError
		unknown x509.UnknownAuthorityError
		badHost x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ErrorKindTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrorKindConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return ErrorKindConnectionReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrorKindConnectionClosed
	case errors.As(err, &dnsErr):
		return ErrorKindDNS
	case errors.As(err, &tlsRec), errors.As(err, &tlsVer), errors.As(err, &tlsAl),
		errors.As(err, &unknown), errors.As(err, &badHost), errors.As(err, &invalid):
		return ErrorKindTLS
	}
	return ErrorKindOther
}

func (r *runner) reportProgress(start time.Time, stop <-chan struct{}) {
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			p := r.tally.progress()
			p.Elapsed = r.clock.Now().Sub(start)
			r.opts.Progress(p)
		}
	}
}

// tally accumulates the outcomes of a run's requests.
type tally struct {
	mu                             sync.Mutex
	sent, completed, errs, dropped uint64
	bytesIn, bytesOut              uint64
	status                         map[int]uint64
	kinds                          map[string]uint64
	latency                        Histogram
}

func (t *tally) init() {
	t.status = make(map[int]uint64)
	t.kinds = make(map[string]uint64)
}

func (t *tally) send(bodyLen int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent++
	t.bytesOut += uint64(bodyLen)
}

func (t *tally) drop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropped++
}

func (t *tally) fail(kind string, bytesIn uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs++
	t.kinds[kind]++
	t.bytesIn += bytesIn
}

func (t *tally) complete(status int, bytesIn uint64, latency time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.completed++
	t.status[status]++
	t.bytesIn += bytesIn
	t.latency.Record(latency)
	if status >= 400 {
		t.errs++
		t.kinds[statusKind(status)]++
	}
}

// statusKind returns the error kind of a response status ≥ 400.
func statusKind(status int) string {
	switch status / 100 {
	case 4:
		return "status_4xx"
	case 5:
		return "status_5xx"
	}
	return "status_" + strconv.Itoa(status/100) + "xx"
}

func (t *tally) progress() Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Progress{Sent: t.sent, Completed: t.completed, Errors: t.errs, Dropped: t.dropped}
}

func (t *tally) result(d time.Duration) Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	res := Result{
		Requests:    t.sent,
		Completed:   t.completed,
		Errors:      t.errs,
		Dropped:     t.dropped,
		Duration:    d,
		StatusCodes: t.status,
		ErrorKinds:  t.kinds,
		BytesIn:     t.bytesIn,
		BytesOut:    t.bytesOut,
		Latency:     t.latency.Summary(),
	}
	if d > 0 {
		res.Rate = float64(t.completed) / d.Seconds()
	}
	return res
}
