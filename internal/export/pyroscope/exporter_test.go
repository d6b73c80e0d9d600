package pyroscope

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

// recorder is a Pyroscope push endpoint: the Connect handler of
// PusherService, recording each request, failing the first ones with the
// codes in fail (proxy503: a plain HTTP 503, as a proxy answers;
// CodeDeadlineExceeded: no answer until the client gives up).
type recorder struct {
	mu       sync.Mutex
	fail     []connect.Code
	attempts int
	got      []recorded
}

// proxy503 stands in fail for a proxy's plain 503, no Connect error.
const proxy503 connect.Code = 1000

type recorded struct {
	header http.Header
	msg    *pushv1.PushRequest
}

func (r *recorder) Push(ctx context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, recorded{req.Header().Clone(), req.Msg})
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}

// serve starts the endpoint on 127.0.0.1.
func (r *recorder) serve(t *testing.T) *httptest.Server {
	t.Helper()
	path, handler := pushv1connect.NewPusherServiceHandler(r)
	mux := http.NewServeMux()
	mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.attempts++
		failing := len(r.fail) > 0
		var code connect.Code
		if failing {
			code, r.fail = r.fail[0], r.fail[1:]
		}
		r.mu.Unlock()
		switch {
		case !failing:
			handler.ServeHTTP(w, req)
		case code == proxy503:
			http.Error(w, "<html>503 Service Temporarily Unavailable</html>", http.StatusServiceUnavailable)
		case code == connect.CodeDeadlineExceeded:
			// Read the request whole, so that the server sees the
			// client hang up.
			io.Copy(io.Discard, req.Body)
			select {
			case <-req.Context().Done():
			case <-time.After(10 * time.Second):
			}
		default:
			// As the real handler fails: Connect's error body and status.
			connect.NewErrorWriter().Write(w, req, connect.NewError(code, fmt.Errorf("refused (%s)", code)))
		}
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.got...)
}

func exporterOf(srv *httptest.Server) *Exporter {
	return &Exporter{URL: srv.URL, Client: srv.Client(), Retries: 3, Timeout: 5 * time.Second, backoff: time.Millisecond}
}

// TestExporter_Export pushes a real capture and checks what the server
// received: the credentials, the tenant, and the series, whose label sets
// and sample types are in testdata/export.golden.
func TestExporter_Export(t *testing.T) {
	rec := &recorder{}
	srv := rec.serve(t)
	e := exporterOf(srv)
	e.Username, e.Password, e.TenantID = "heapscope", "s3cret:with colon", "team-a"
	meta := Meta{Target: "http://10.1.2.3:6060/debug/pprof/", Kind: "bundle", Trigger: "memory>=80%", ID: "bundles/x",
		Labels: map[string]string{"namespace": "shop", "pod": "cart-5f6-abc", "container": "cart", "group": "pods",
			"instance": "10.1.2.3:6060", "app.kubernetes.io/name": "cart"}}
	warnings, err := e.Export(t.Context(), realCapture(t), meta)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	if len(warnings) != 1 || warnings[0] != "label app.kubernetes.io/name renamed app_kubernetes_io_name" {
		t.Errorf("warnings %q", warnings)
	}
	got := rec.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	h := got[0].header
	if auth := h.Get("Authorization"); auth != "Basic "+base64.StdEncoding.EncodeToString([]byte("heapscope:s3cret:with colon")) {
		t.Errorf("Authorization %q", auth)
	}
	if tenant := h.Get("X-Scope-OrgID"); tenant != "team-a" {
		t.Errorf("X-Scope-OrgID %q, want team-a", tenant)
	}
	if ct := h.Get("Content-Type"); ct != "application/proto" {
		t.Errorf("Content-Type %q, want Connect's binary protobuf", ct)
	}
	var golden strings.Builder
	for _, s := range got[0].msg.Series {
		name := seriesName(s)
		p := mustParse(t, s.Samples[0].RawProfile)
		fmt.Fprintf(&golden, "%s\n  labels: %s\n  sample types: %s\n", name, pairs(s.Labels), strings.Join(typesOf(p), " "))
	}
	goldenfile.Check(t, filepath.Join("testdata", "export.golden"), []byte(golden.String()))
}

func TestExporter_Push_Retries(t *testing.T) {
	unavailable, invalid := connect.CodeUnavailable, connect.CodeInvalidArgument
	tests := []struct {
		name     string
		fail     []connect.Code
		retries  int
		attempts int
		err      string // "" for none
	}{
		{"503 then delivered", []connect.Code{unavailable, unavailable}, 3, 3, ""},
		{"a proxy's 503 then delivered", []connect.Code{proxy503}, 3, 2, ""},
		{"429 then delivered", []connect.Code{connect.CodeResourceExhausted}, 3, 2, ""},
		{"no answer in time then delivered", []connect.Code{connect.CodeDeadlineExceeded}, 3, 2, ""},
		{"400 is final", []connect.Code{invalid, invalid}, 3, 1, "invalid_argument: refused (invalid_argument) (after 1 attempts)"},
		{"401 is final", []connect.Code{connect.CodeUnauthenticated}, 3, 1, "unauthenticated"},
		{"503 past the retries", []connect.Code{unavailable, unavailable, unavailable, unavailable}, 2, 3,
			"unavailable: refused (unavailable) (after 3 attempts)"},
		{"no retries", []connect.Code{unavailable}, 0, 1, "(after 1 attempts)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{fail: tt.fail}
			srv := rec.serve(t)
			e := exporterOf(srv)
			e.Retries, e.Timeout = tt.retries, 200*time.Millisecond
			err := e.Push(t.Context(), onePush())
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Push: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("Push error %v, want one containing %q", err, tt.err)
			case tt.err != "" && !strings.HasPrefix(err.Error(), "push to pyroscope "+srv.URL+": "):
				t.Errorf("error %q does not say what failed", err)
			}
			if rec.attempts != tt.attempts {
				t.Errorf("%d attempts, want %d", rec.attempts, tt.attempts)
			}
			if delivered := len(rec.requests()); (tt.err == "") != (delivered == 1) {
				t.Errorf("%d requests delivered", delivered)
			}
		})
	}
}

func TestExporter_Push_StopsWithItsContext(t *testing.T) {
	rec := &recorder{fail: []connect.Code{connect.CodeUnavailable, connect.CodeUnavailable}}
	srv := rec.serve(t)
	e := exporterOf(srv)
	e.backoff = time.Hour
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := e.Push(ctx, onePush())
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("Push = %v after %s, want the context's end, at once", err, time.Since(start))
	}
}

func TestExporter_Push_SplitsWhatIsOverTheBound(t *testing.T) {
	rec := &recorder{}
	srv := rec.serve(t)
	e := exporterOf(srv)
	small := func(name string, n int) *pushv1.RawProfileSeries {
		s := onePush().Series[0]
		for _, l := range s.Labels {
			if l.Name == LabelName {
				l.Value = name
			}
		}
		s.Samples[0].RawProfile = make([]byte, n)
		return s
	}
	e.MaxRequestBytes = 1000
	req := &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{
		small("a", 300), small("b", 300), small("huge", 5000), small("c", 300), small("d", 100),
	}}
	err := e.Push(t.Context(), req)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "series huge: ") {
		t.Errorf("Push error %v, want the huge series named as too large", err)
	}
	var parts []string
	for _, r := range rec.requests() {
		var names []string
		for _, s := range r.msg.Series {
			names = append(names, seriesName(s))
		}
		parts = append(parts, strings.Join(names, "+"))
		if n := r.msg.SizeVT(); n > e.MaxRequestBytes {
			t.Errorf("a request of %d bytes, over the bound", n)
		}
	}
	if got := strings.Join(parts, " "); got != "a+b c+d" {
		t.Errorf("requests %q, want a+b c+d (the huge series left out)", got)
	}
}

func TestExporter_Push_RefusesABadURL(t *testing.T) {
	for _, u := range []string{"", "pyroscope:4040", "ftp://p:4040", "http://"} {
		e := &Exporter{URL: u}
		if err := e.Push(t.Context(), onePush()); err == nil || !strings.Contains(err.Error(), "want an http or https URL") {
			t.Errorf("URL %q: %v", u, err)
		}
	}
}

// onePush is a push of one small series.
func onePush() *pushv1.PushRequest {
	labels, _ := Labels(Meta{Target: "http://h:1/debug/pprof/"})
	return &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{{
		Labels:  withName(labels, NameGoroutine),
		Samples: []*pushv1.RawSample{{RawProfile: []byte("x"), ID: "6f1c3c5e-1d7e-5f3a-9b1e-0c2d3e4f5a6b"}},
	}}}
}
