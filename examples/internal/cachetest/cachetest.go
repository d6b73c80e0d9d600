// Package cachetest is the conformance suite of the cache example services,
// leakycache and optimizedcache: the twins must answer the same requests
// alike, so each runs these tests and benchmarks with its own constructors.
// The one difference the suite allows is the documented one, what an id's
// second request returns (the leaky cache repeats the id, the fixed one does
// not); the caller says which with a Second function. The suite covers:
//
//   - TestHandler: the /process route, each request made twice.
//   - TestWorkerReturnsCopy: a result is the caller's own memory.
//   - BenchmarkProcess, BenchmarkProcessParallel and BenchmarkHandler: the
//     same load for both twins, so their figures compare directly.
//
// It is imported by test files only.
package cachetest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/servetest"
)

// maxIDLen is the longest id, in bytes, both cache handlers accept.
const maxIDLen = 256

// Worker is what the suite needs of a cache's worker.
type Worker interface {
	// Process returns the result for id in memory the caller owns.
	Process(id string) []byte
}

// Second returns the body of the answer to an id's second request, given the
// body of the first.
type Second func(first string) string

// Same is the Second of a cache whose answer does not change: the first
// body again.
func Same(first string) string { return first }

// Doubled is the Second of a cache that appends the id to its entry on each
// request: the first body twice.
func Doubled(first string) string { return first + first }

// TestHandler sends each request twice to a fresh handler from newHandler:
// ids plain, escaped and repeated, the longest id, and the rejections (no
// id, an empty, badly escaped or too long one, another method, another
// path). A rejection must be the same both times; a 200 must carry the id
// the first time and second of it the second time.
func TestHandler(t *testing.T, newHandler func(tb testing.TB) http.Handler, second Second) {
	const octets = "application/octet-stream"
	longest := strings.Repeat("k", maxIDLen)
	tests := []struct {
		name     string
		method   string
		target   string
		wantCode int
		wantType string
		wantBody string
	}{
		{name: "ok", method: http.MethodGet, target: "/process?id=alice", wantCode: 200, wantType: octets, wantBody: "alice"},
		{name: "escaped id", method: http.MethodGet, target: "/process?id=a%20b%26c+d", wantCode: 200, wantType: octets, wantBody: "a b&c d"},
		{name: "escaped key", method: http.MethodGet, target: "/process?%69d=k", wantCode: 200, wantType: octets, wantBody: "k"},
		{name: "other parameters first", method: http.MethodGet, target: "/process?x=1&&id=y", wantCode: 200, wantType: octets, wantBody: "y"},
		{name: "first of repeated parameters", method: http.MethodGet, target: "/process?id=x1&id=x2", wantCode: 200, wantType: octets, wantBody: "x1"},
		{name: "bad escape skipped", method: http.MethodGet, target: "/process?id=%zz&id=ok", wantCode: 200, wantType: octets, wantBody: "ok"},
		{name: "longest id", method: http.MethodGet, target: "/process?id=" + longest, wantCode: 200, wantType: octets, wantBody: longest},
		{name: "missing id", method: http.MethodGet, target: "/process", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "empty id", method: http.MethodGet, target: "/process?id=", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "semicolon", method: http.MethodGet, target: "/process?id=a;b", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "bad escape", method: http.MethodGet, target: "/process?id=%zz", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "id too long", method: http.MethodGet, target: "/process?id=" + longest + "k", wantCode: 400, wantType: "text/plain", wantBody: "id longer than 256 bytes\n"},
		{name: "wrong method", method: http.MethodPost, target: "/process?id=alice", wantCode: 405, wantType: "text/plain", wantBody: "method not allowed: use GET\n"},
		{name: "other wrong method", method: http.MethodDelete, target: "/process?id=alice", wantCode: 405, wantType: "text/plain", wantBody: "method not allowed: use GET\n"},
		{name: "unknown path", method: http.MethodGet, target: "/other", wantCode: 404, wantType: "text/plain", wantBody: "404 page not found\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandler(t)
			for n := range 2 {
				wantBody := tt.wantBody
				if n == 1 && tt.wantCode == http.StatusOK {
					wantBody = second(wantBody)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))
				if rec.Code != tt.wantCode {
					t.Errorf("request %d: status %d, want %d", n+1, rec.Code, tt.wantCode)
				}
				if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, tt.wantType) {
					t.Errorf("request %d: Content-Type %q, want prefix %q", n+1, got, tt.wantType)
				}
				if got := rec.Body.String(); got != wantBody {
					t.Errorf("request %d: body %q, want %q", n+1, got, wantBody)
				}
				if tt.wantCode == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != http.MethodGet {
					t.Errorf("request %d: Allow %q, want GET", n+1, rec.Header().Get("Allow"))
				}
			}
		})
	}
}

// TestWorkerReturnsCopy checks that w's results are the caller's own: that
// changing one changes neither the cache nor another result. second says
// what an id's second call returns.
func TestWorkerReturnsCopy(t *testing.T, w Worker, second Second) {
	t.Run("changed result leaves cache alone", func(t *testing.T) {
		first := w.Process("xy")
		first[0] = 'Z'
		if got, want := string(w.Process("xy")), second("xy"); got != want {
			t.Errorf("Process after changing the first result = %q, want %q", got, want)
		}
	})
	t.Run("results do not share memory", func(t *testing.T) {
		a, b := w.Process("q"), w.Process("q")
		a[0] = 'Z'
		if got, want := string(b), second("q"); got != want {
			t.Errorf("changing one result changed another to %q, want %q", got, want)
		}
	})
}

// IDs returns the 1000 ids the benchmarks draw from, in a shuffled but
// fixed order.
func IDs() []string {
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa((i*7919)%100000)
	}
	return ids
}

// BenchmarkProcess processes the ids of IDs in turn with w.
func BenchmarkProcess(b *testing.B, w Worker) {
	ids := IDs()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w.Process(ids[i%len(ids)])
		i++
	}
}

// BenchmarkProcessParallel is BenchmarkProcess from GOMAXPROCS goroutines.
func BenchmarkProcessParallel(b *testing.B, w Worker) {
	ids := IDs()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			w.Process(ids[i%len(ids)])
			i += 7
		}
	})
}

// BenchmarkHandler serves GET /process for the ids of IDs in turn through h,
// into a ResponseWriter that discards.
func BenchmarkHandler(b *testing.B, h http.Handler) {
	ids := IDs()
	reqs := make([]*http.Request, len(ids))
	for i, id := range ids {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/process?id="+id, nil)
	}
	servetest.Loop(b, h, reqs)
}
