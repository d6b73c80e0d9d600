package target

import (
	"bytes"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsHandler serves what a service instrumented with client_golang
// serves on /metrics: Go runtime and process collectors.
func metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

func TestClient_Metrics(t *testing.T) {
	tests := []struct {
		name        string
		handler     http.Handler
		path        string
		metricsPath string
	}{
		{name: "root", handler: metricsHandler()},
		{name: "base URL with path prefix", handler: http.StripPrefix("/svc", metricsHandler()), path: "/svc"},
		{name: "a path of its own", handler: http.StripPrefix("/admin", metricsHandler()), metricsPath: "/admin/metrics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			c := newClient(t, Options{BaseURL: srv.URL + tc.path, MetricsPath: tc.metricsPath, Timeout: 5 * time.Second})
			body, err := c.Metrics(t.Context())
			if err != nil {
				t.Fatalf("Metrics: %v", err)
			}
			rss, ok := ResidentMemory(body)
			if !ok || rss == 0 {
				t.Fatalf("ResidentMemory = %d, %t; want a positive value from:\n%s", rss, ok, body)
			}
			// This very process serves the metrics: its RSS is at least
			// the heap in use.
			if rss < 1<<20 {
				t.Errorf("ResidentMemory = %d bytes, implausibly small", rss)
			}
		})
	}
}

func TestClient_Metrics_notFound(t *testing.T) {
	srv := newServer(t, pprofMux())
	c := newClient(t, Options{BaseURL: srv.URL, Timeout: 5 * time.Second})
	_, err := c.Metrics(t.Context())
	checkErr(t, err, "fetch metrics", "/metrics", "404", "Prometheus")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("errors.Is(%v, ErrNotFound) = false", err)
	}
	if strings.Contains(err.Error(), "pprof") {
		t.Errorf("a missing /metrics is blamed on pprof: %v", err)
	}
}

func TestClient_MemStats_afterGC(t *testing.T) {
	srv := newServer(t, pprofMux())
	c := newClient(t, Options{BaseURL: srv.URL, Timeout: 5 * time.Second})
	before, err := c.MemStats(t.Context(), false)
	if err != nil {
		t.Fatalf("MemStats: %v", err)
	}
	after, err := c.MemStats(t.Context(), true)
	if err != nil {
		t.Fatalf("MemStats after GC: %v", err)
	}
	if after.NumForcedGC <= before.NumForcedGC {
		t.Errorf("NumForcedGC %d after gc=1, %d before: no GC was forced", after.NumForcedGC, before.NumForcedGC)
	}

	c = newClient(t, Options{BaseURL: srv.URL, PprofPath: "/elsewhere/", Timeout: 5 * time.Second})
	_, err = c.MemStats(t.Context(), true)
	checkErr(t, err, "fetch MemStats", "/elsewhere/heap?debug=1&gc=1", "--pprof-path")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("errors.Is(%v, ErrNotFound) = false", err)
	}
}

// A large service's heap?debug=1 is megabytes of stack records before
// the MemStats: they stream through, within the body limit.
func TestClient_MemStats_streamsLargeBodies(t *testing.T) {
	real := httptest.NewRecorder()
	pprofMux().ServeHTTP(real, httptest.NewRequest(http.MethodGet, "/debug/pprof/heap?debug=1", nil))
	_, trailer, ok := bytes.Cut(real.Body.Bytes(), []byte("\n# runtime.MemStats\n"))
	if !ok {
		t.Fatal("the runtime's heap?debug=1 has no MemStats section")
	}
	record := []byte("1: 4096 [1: 4096] @ 0x4a1b2c 0x4a1d3e 0x43f0a1\n#\t0x4a1b2c\tmain.fill+0x2c\t/src/main.go:12\n")
	body := append(bytes.Repeat(record, (16<<20)/len(record)), "\n# runtime.MemStats\n"...)
	body = append(body, trailer...)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
	srv := newServer(t, mux)

	c := newClient(t, Options{BaseURL: srv.URL, Timeout: 10 * time.Second})
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	ms, err := c.MemStats(t.Context(), true)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatalf("MemStats of a %d-byte body: %v", len(body), err)
	}
	if ms.HeapSys == 0 || ms.NumGC == 0 {
		t.Errorf("MemStats %+v: the trailer was not read", ms)
	}
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > uint64(len(body))/4 {
		t.Errorf("reading a %d-byte body allocated %d bytes: it was held, not streamed", len(body), alloc)
	}

	c = newClient(t, Options{BaseURL: srv.URL, Timeout: 10 * time.Second, MaxBody: 1 << 20})
	_, err = c.MemStats(t.Context(), true)
	var tl *BodyTooLargeError
	if !errors.As(err, &tl) || tl.Limit != 1<<20 {
		t.Errorf("MemStats of a body over the limit: %v, want a BodyTooLargeError", err)
	}
	checkErr(t, err, "fetch MemStats", "larger than the limit of 1048576 bytes")
}

// residentMemoryCases are exposition bodies and what ResidentMemory finds in
// them; the fuzz test seeds its corpus from them.
var residentMemoryCases = []struct {
	name   string
	body   string
	want   uint64
	wantOK bool
}{
	{name: "plain", body: "process_resident_memory_bytes 12345678\n", want: 12345678, wantOK: true},
	{name: "no final newline", body: "process_resident_memory_bytes 4096", want: 4096, wantOK: true},
	{
		name: "help and type lines",
		body: "# HELP process_resident_memory_bytes Resident memory size in bytes.\n" +
			"# TYPE process_resident_memory_bytes gauge\n" +
			"process_resident_memory_bytes 2.5165824e+07\n",
		want: 25165824, wantOK: true,
	},
	{name: "scientific notation", body: "process_resident_memory_bytes 1.2345e+07\n", want: 12345000, wantOK: true},
	{name: "fraction dropped", body: "process_resident_memory_bytes 42.9\n", want: 42, wantOK: true},
	{name: "zero", body: "process_resident_memory_bytes 0\n", want: 0, wantOK: true},
	{
		name: "among other metrics",
		body: "# TYPE go_goroutines gauge\ngo_goroutines 7\n" +
			"# TYPE process_open_fds gauge\nprocess_open_fds 9\n" +
			"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 8.388608e+06\n" +
			"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.7e+09\n",
		want: 8388608, wantOK: true,
	},
	{
		name: "longer name with the same prefix first",
		body: "process_resident_memory_bytes_total 5\nprocess_resident_memory_bytes_max{a=\"b\"} 6\nprocess_resident_memory_bytes 7\n",
		want: 7, wantOK: true,
	},
	{name: "only a longer name", body: "process_resident_memory_bytes_total 5\n"},
	{name: "longer name without separator", body: "process_resident_memory_bytesx 5\n"},
	{name: "longer name with a colon", body: "process_resident_memory_bytes:avg 5\n"},
	{name: "value right after the name", body: "process_resident_memory_bytes+42\n", want: 42, wantOK: true},
	{name: "blank before labels", body: "process_resident_memory_bytes {job=\"svc\"}\t42\n", want: 42, wantOK: true},
	{name: "labels", body: "process_resident_memory_bytes{instance=\"a:1\",job=\"svc\"} 42\n", want: 42, wantOK: true},
	{name: "empty labels", body: "process_resident_memory_bytes{} 42\n", want: 42, wantOK: true},
	{name: "brace in label value", body: "process_resident_memory_bytes{path=\"/}{ 1\"} 42\n", want: 42, wantOK: true},
	{name: "escaped quote in label value", body: "process_resident_memory_bytes{v=\"a\\\"} 1\"} 42\n", want: 42, wantOK: true},
	{name: "unclosed labels", body: "process_resident_memory_bytes{job=\"svc\" 42\n"},
	{name: "timestamp", body: "process_resident_memory_bytes 42 1700000000000\n", want: 42, wantOK: true},
	{name: "tab separator", body: "process_resident_memory_bytes\t42\n", want: 42, wantOK: true},
	{name: "leading blanks", body: "  \tprocess_resident_memory_bytes 42\n", want: 42, wantOK: true},
	{name: "CRLF line ends", body: "# TYPE process_resident_memory_bytes gauge\r\nprocess_resident_memory_bytes 42\r\n", want: 42, wantOK: true},
	{name: "after a 2 MiB line", body: "big_label{v=\"" + strings.Repeat("x", 2<<20) + "\"} 1\nprocess_resident_memory_bytes 42\n", want: 42, wantOK: true},
	{name: "NaN", body: "process_resident_memory_bytes NaN\n"},
	{name: "negative", body: "process_resident_memory_bytes -1\n"},
	{name: "infinite", body: "process_resident_memory_bytes +Inf\n"},
	{name: "beyond uint64", body: "process_resident_memory_bytes 1e30\n"},
	{name: "garbage value", body: "process_resident_memory_bytes lots\n"},
	{name: "no value", body: "process_resident_memory_bytes\n"},
	{name: "blank value", body: "process_resident_memory_bytes   \n"},
	{name: "only in a comment", body: "# HELP process_resident_memory_bytes 99\n# TYPE process_resident_memory_bytes gauge\n"},
	{name: "absent", body: "# TYPE go_goroutines gauge\ngo_goroutines 7\nprocess_virtual_memory_bytes 1e+09\n"},
	{name: "empty", body: ""},
}

func TestResidentMemory(t *testing.T) {
	for _, tc := range residentMemoryCases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ResidentMemory([]byte(tc.body))
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("ResidentMemory = %d, %t; want %d, %t", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestMetricValue(t *testing.T) {
	body := []byte("# TYPE go_goroutines gauge\ngo_goroutines 7\ngo_goroutines_total 9\n" +
		"go_gc_gomemlimit_bytes 9.223372036854776e+18\nprocess_start_time_seconds 1.79562218391e+09\n" +
		"go_info{version=\"go1.26.8\"} 1\nbad_value x\nnan_value NaN\nneg -3\n")
	tests := []struct {
		name   string
		want   float64
		wantOK bool
	}{
		{"go_goroutines", 7, true},
		{"go_goroutines_total", 9, true},
		{"go_gc_gomemlimit_bytes", 9.223372036854776e+18, true},
		{"process_start_time_seconds", 1.79562218391e+09, true},
		{"go_info", 1, true},
		{"neg", -3, true},
		{"bad_value", 0, false},
		{"nan_value", 0, false},
		{"go", 0, false},
		{"absent", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		got, ok := MetricValue(body, tc.name)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("MetricValue(%q) = %g, %t; want %g, %t", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

// gatheredMetrics renders what a client_golang service serves on /metrics.
func gatheredMetrics(tb testing.TB) []byte {
	tb.Helper()
	rec := httptest.NewRecorder()
	metricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		tb.Fatalf("/metrics answered %d", rec.Code)
	}
	return rec.Body.Bytes()
}

func BenchmarkResidentMemory(b *testing.B) {
	body := gatheredMetrics(b)
	if _, ok := ResidentMemory(body); !ok {
		b.Fatal("no process_resident_memory_bytes in the exposition")
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ResidentMemory(body)
	}
}

// FuzzResidentMemory checks that ResidentMemory never panics and that it
// agrees with the Prometheus text parser whenever that parser reads exactly
// one process_resident_memory_bytes gauge from the input.
func FuzzResidentMemory(f *testing.F) {
	for _, tc := range residentMemoryCases {
		if len(tc.body) < 1<<10 {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := ResidentMemory(body)
		p := expfmt.NewTextParser(model.LegacyValidation)
		families, err := p.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			return
		}
		fam := families["process_resident_memory_bytes"]
		if fam == nil || len(fam.GetMetric()) != 1 {
			return
		}
		m := fam.GetMetric()[0]
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		default:
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v >= 1<<64 {
			if ok {
				t.Errorf("ResidentMemory = %d, true for the unusable value %v", got, v)
			}
			return
		}
		if !ok || got != uint64(v) {
			t.Errorf("ResidentMemory = %d, %t; the text parser reads %v", got, ok, v)
		}
	})
}
