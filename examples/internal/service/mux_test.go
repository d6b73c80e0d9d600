package service

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// record sends a request through h and returns the recorded response.
func record(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

func teapotService() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/brew/{kind}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "short and stout")
	})
	plain := []byte("implicit 200")
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(plain)
	})
	return mux
}

func TestNewMux_CommonRoutes(t *testing.T) {
	h := NewMux("svc", teapotService())
	gzipMagic := []byte{0x1f, 0x8b}
	tests := []struct {
		name       string
		target     string
		wantType   string
		wantPrefix []byte // of the body
		wantSub    string // in the body
	}{
		{name: "health", target: "/health", wantType: "text/plain", wantPrefix: []byte("ok\n")},
		{name: "pprof index", target: "/debug/pprof/", wantType: "text/html", wantSub: "heap"},
		{name: "pprof heap", target: "/debug/pprof/heap", wantType: "application/octet-stream", wantPrefix: gzipMagic},
		{name: "pprof heap debug", target: "/debug/pprof/heap?debug=1", wantType: "text/plain", wantSub: "# runtime.MemStats"},
		{name: "pprof allocs", target: "/debug/pprof/allocs", wantPrefix: gzipMagic},
		{name: "pprof goroutine", target: "/debug/pprof/goroutine", wantPrefix: gzipMagic},
		{name: "pprof mutex", target: "/debug/pprof/mutex", wantPrefix: gzipMagic},
		{name: "pprof block", target: "/debug/pprof/block", wantPrefix: gzipMagic},
		{name: "pprof threadcreate", target: "/debug/pprof/threadcreate", wantPrefix: gzipMagic},
		{name: "pprof cmdline", target: "/debug/pprof/cmdline", wantType: "text/plain"},
		{name: "pprof symbol", target: "/debug/pprof/symbol", wantType: "text/plain", wantSub: "num_symbols"},
		{name: "pprof trace", target: "/debug/pprof/trace?seconds=0.05", wantType: "application/octet-stream", wantSub: "go 1."},
		{name: "metrics", target: "/metrics", wantType: "text/plain", wantSub: "go_goroutines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record(t, h, http.MethodGet, tt.target)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: status %d, want 200; body %q", tt.target, rec.Code, rec.Body.String())
			}
			if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, tt.wantType) {
				t.Errorf("GET %s: Content-Type %q, want prefix %q", tt.target, got, tt.wantType)
			}
			body := rec.Body.Bytes()
			if !bytes.HasPrefix(body, tt.wantPrefix) {
				t.Errorf("GET %s: body starts %q, want prefix %q", tt.target, head(body), tt.wantPrefix)
			}
			if !bytes.Contains(body, []byte(tt.wantSub)) {
				t.Errorf("GET %s: body %q lacks %q", tt.target, head(body), tt.wantSub)
			}
		})
	}
}

func head(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

func TestNewMux_CPUProfile(t *testing.T) {
	h := NewMux("svc", teapotService())
	rec := record(t, h, http.MethodGet, "/debug/pprof/profile?seconds=1")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200; body %q", rec.Code, rec.Body.String())
	}
	if !bytes.HasPrefix(rec.Body.Bytes(), []byte{0x1f, 0x8b}) {
		t.Errorf("body starts %q, want a gzipped profile", head(rec.Body.Bytes()))
	}
}

func TestNewMux_ServiceRoutesAndMetrics(t *testing.T) {
	h := NewMux("svc", teapotService())
	tests := []struct {
		name     string
		target   string
		wantCode int
		wantBody string
	}{
		{name: "explicit status", target: "/brew/earl-grey", wantCode: http.StatusTeapot, wantBody: "short and stout"},
		{name: "implicit 200", target: "/plain", wantCode: http.StatusOK, wantBody: "implicit 200"},
		{name: "unmatched", target: "/nowhere", wantCode: http.StatusNotFound, wantBody: "404 page not found\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record(t, h, http.MethodGet, tt.target)
			if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
				t.Errorf("GET %s: %d %q, want %d %q", tt.target, rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
		})
	}
	record(t, h, http.MethodGet, "/brew/assam")

	metrics := record(t, h, http.MethodGet, "/metrics").Body.String()
	for _, want := range []string{
		`http_requests_total{code="418",route="/brew/{kind}",service="svc"} 2`,
		`http_requests_total{code="200",route="/plain",service="svc"} 1`,
		`http_requests_total{code="404",route="unmatched",service="svc"} 1`,
		`http_request_duration_seconds_count{code="418",route="/brew/{kind}",service="svc"} 2`,
		`process_resident_memory_bytes`,
		`go_memstats_heap_inuse_bytes`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `route="/health"`) || strings.Contains(metrics, `route="/debug/pprof/`) {
		t.Errorf("/metrics counts the common routes, want only the service's:\n%s", metrics)
	}
}

func TestNewMux_IndependentRegistries(t *testing.T) {
	a := NewMux("a", teapotService())
	b := NewMux("b", teapotService())
	record(t, a, http.MethodGet, "/plain")
	if got := record(t, b, http.MethodGet, "/metrics").Body.String(); strings.Contains(got, `route="/plain"`) {
		t.Errorf("service b's /metrics shows service a's request:\n%s", got)
	}
	if got := record(t, a, http.MethodGet, "/metrics").Body.String(); !strings.Contains(got, `service="a"`) {
		t.Errorf("service a's /metrics lacks its request")
	}
}

func BenchmarkNewMux_ServeHTTP(b *testing.B) {
	h := NewMux("svc", teapotService())
	r := httptest.NewRequest(http.MethodGet, "/plain", nil)
	w := &discardWriter{header: make(http.Header)}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

// discardWriter is a ResponseWriter that drops what it is given.
type discardWriter struct{ header http.Header }

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
