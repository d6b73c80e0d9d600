package pyroscope

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"connectrpc.com/connect"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
)

// Defaults of an Exporter's zero fields.
const (
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRequestBytes bounds one push request, encoded: a larger
	// push is split by series; a series alone over it is not sent.
	// Pyroscope's own limits are below it (a 4 MiB profile, a 2 MiB
	// burst a tenant, by default): beyond them it answers the push with
	// an error, which is returned.
	DefaultMaxRequestBytes = 16 << 20
	// maxBackoff caps the wait between two attempts.
	maxBackoff = 30 * time.Second
	// maxResponse bounds what is read of a reply.
	maxResponse = 1 << 20
)

// ErrTooLarge is wrapped by the error of a series too large to be sent
// within the request bound.
var ErrTooLarge = errors.New("over the request size bound")

// Exporter pushes captures to a Pyroscope server through its Connect
// push API (push.v1.PusherService/Push).
type Exporter struct {
	// URL is the server's base URL, such as http://pyroscope:4040.
	URL string
	// Username and Password are sent as HTTP basic auth when Username is
	// not empty.
	Username, Password string
	// TenantID is sent as X-Scope-OrgID when not empty (a multi-tenant
	// Pyroscope, Grafana Cloud).
	TenantID string
	// Timeout bounds each attempt (DefaultTimeout when zero).
	Timeout time.Duration
	// Retries is how many times a failed attempt is tried again, after
	// 1 s, 2 s, 4 s… (at most 30 s): only when the server is unavailable,
	// overloaded (429, 503) or did not answer in time. A refusal (a bad
	// profile, bad credentials) is final.
	Retries int
	// MaxRequestBytes bounds one request (DefaultMaxRequestBytes when
	// zero).
	MaxRequestBytes int
	// Client makes the requests; a client that follows no redirect (which
	// would drop the credentials) when nil.
	Client *http.Client

	// backoff is the first wait between attempts (tests shorten it).
	backoff time.Duration
}

// Export reads the capture stored in dir, builds its push and pushes it.
// The warnings say what was left out.
func (e *Exporter) Export(ctx context.Context, dir string, m Meta) ([]string, error) {
	c, warnings, err := Read(dir, m)
	if err != nil {
		return warnings, err
	}
	req, more, err := Build(c)
	warnings = append(warnings, more...)
	if err != nil {
		return warnings, fmt.Errorf("export %s to pyroscope: %w", dir, err)
	}
	return warnings, e.Push(ctx, req)
}

// Push sends req, split into requests of at most MaxRequestBytes by
// series, each tried again as Retries says. A series that alone is over
// the bound is not sent, and the error wraps ErrTooLarge; the other
// series are sent all the same.
func (e *Exporter) Push(ctx context.Context, req *pushv1.PushRequest) error {
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("push to pyroscope: %q: want an http or https URL", e.URL)
	}
	limit := e.MaxRequestBytes
	if limit <= 0 {
		limit = DefaultMaxRequestBytes
	}
	parts, tooLarge := split(req, limit)
	client := e.Client
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	pusher := pushv1connect.NewPusherServiceClient(client, e.URL,
		connect.WithReadMaxBytes(maxResponse), connect.WithSendMaxBytes(limit))
	errs := tooLarge
	for _, part := range parts {
		if err := e.send(ctx, pusher, part); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("push to pyroscope %s: %w", e.URL, err)
	}
	return nil
}

// split cuts req into requests of at most limit bytes, keeping each
// series whole; a series over limit alone gives an error instead.
func split(req *pushv1.PushRequest, limit int) ([]*pushv1.PushRequest, []error) {
	var parts []*pushv1.PushRequest
	var errs []error
	var cur *pushv1.PushRequest
	for _, s := range req.Series {
		one := &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{s}}
		if n := one.SizeVT(); n > limit {
			errs = append(errs, fmt.Errorf("series %s: %d bytes: %w of %d bytes", seriesName(s), n, ErrTooLarge, limit))
			continue
		}
		if cur != nil {
			grown := &pushv1.PushRequest{Series: append(cur.Series[:len(cur.Series):len(cur.Series)], s)}
			if grown.SizeVT() <= limit {
				cur.Series = grown.Series
				continue
			}
		}
		cur = one
		parts = append(parts, cur)
	}
	return parts, errs
}

func seriesName(s *pushv1.RawProfileSeries) string {
	for _, l := range s.Labels {
		if l.Name == LabelName {
			return l.Value
		}
	}
	return "?"
}

// send makes the attempts of one request.
func (e *Exporter) send(ctx context.Context, pusher pushv1connect.PusherServiceClient, msg *pushv1.PushRequest) error {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	wait := e.backoff
	if wait <= 0 {
		wait = time.Second
	}
	for attempt := 0; ; attempt++ {
		err := e.attempt(ctx, pusher, msg, timeout)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retryable(err) || attempt >= max(e.Retries, 0) {
			return fmt.Errorf("%w (after %d attempts)", err, attempt+1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}

func (e *Exporter) attempt(ctx context.Context, pusher pushv1connect.PusherServiceClient, msg *pushv1.PushRequest, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := connect.NewRequest(msg)
	req.Header().Set("User-Agent", "heapscope")
	if e.Username != "" {
		r := http.Request{Header: http.Header{}}
		r.SetBasicAuth(e.Username, e.Password)
		req.Header().Set("Authorization", r.Header.Get("Authorization"))
	}
	if e.TenantID != "" {
		req.Header().Set("X-Scope-OrgID", e.TenantID)
	}
	_, err := pusher.Push(ctx, req)
	return err
}

// retryable says whether a failed push may succeed if tried again: the
// server or a proxy before it was unavailable or overloaded (Connect maps
// 429, 502, 503 and 504 to unavailable), or the attempt timed out.
func retryable(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable, connect.CodeResourceExhausted, connect.CodeDeadlineExceeded,
		connect.CodeAborted, connect.CodeUnknown:
		return true
	}
	return false
}
