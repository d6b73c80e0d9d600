package examples

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(serveChild())
	}
	goleak.VerifyTestMain(m)
}

func TestNames(t *testing.T) {
	want := []string{"leaky", "optimized", "kv-naive", "kv-tuned"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	Names()[0] = "changed"
	if Names()[0] != "leaky" {
		t.Errorf("Names() shares its slice between calls")
	}
}

func TestDefaultLoad(t *testing.T) {
	tests := []struct{ name, method, path string }{
		{"leaky", "GET", cacheLoadPath},
		{"optimized", "GET", cacheLoadPath},
		{"kv-naive", "GET", "/kv/key-{rand:1000}"},
		{"kv-tuned", "GET", "/kv/key-{rand:1000}"},
		{"nope", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path := DefaultLoad(tt.name)
			if method != tt.method || path != tt.path {
				t.Errorf("DefaultLoad(%q) = %q, %q; want %q, %q", tt.name, method, path, tt.method, tt.path)
			}
		})
	}
}

func TestNew_UnknownName(t *testing.T) {
	_, err := New("leakycache")
	if err == nil {
		t.Fatal("New(\"leakycache\") succeeded, want an error")
	}
	for _, name := range Names() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list the valid name %q", err, name)
		}
	}
}

// expand fills heapscope's load placeholders with fixed values.
func expand(path string) string {
	return regexp.MustCompile(`\{rand:\d+\}|\{seq\}`).ReplaceAllString(path, "7")
}

func get(t *testing.T, h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
	return rec
}

func TestNew_FullMux(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			h, err := New(name)
			if err != nil {
				t.Fatal(err)
			}
			method, path := DefaultLoad(name)
			for range 2 {
				if rec := get(t, h, method, expand(path), ""); rec.Code != http.StatusOK || rec.Body.Len() == 0 {
					t.Errorf("%s %s: %d %q, want 200 with a body", method, expand(path), rec.Code, rec.Body.String())
				}
			}
			if rec := get(t, h, "GET", "/health", ""); rec.Code != http.StatusOK || rec.Body.String() != "ok\n" {
				t.Errorf("/health: %d %q", rec.Code, rec.Body.String())
			}
			if rec := get(t, h, "GET", "/debug/pprof/heap", ""); rec.Code != http.StatusOK || !bytes.HasPrefix(rec.Body.Bytes(), []byte{0x1f, 0x8b}) {
				t.Errorf("/debug/pprof/heap: %d, body not a gzipped profile", rec.Code)
			}
			metrics := get(t, h, "GET", "/metrics", "").Body.String()
			for _, want := range []string{"process_resident_memory_bytes", "go_gc_duration_seconds", `code="200"`} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
		})
	}
}

// TestNew_TwinsAgree sends the same requests to each example and its twin
// and expects the same answers, byte for byte.
func TestNew_TwinsAgree(t *testing.T) {
	type req struct{ method, target, body string }
	tests := []struct {
		name string
		a, b string
		reqs []req
	}{
		{
			name: "caches", a: "leaky", b: "optimized",
			reqs: []req{
				{"GET", "/process?id=alice", ""},
				{"GET", "/process?id=" + url.QueryEscape("x&y=z é"), ""},
				{"GET", "/process", ""},
				{"GET", "/process?id=", ""},
				{"GET", "/process?id=%zz", ""},
				{"GET", "/process?id=" + strings.Repeat("a", 257), ""},
				{"POST", "/process?id=alice", ""},
				{"GET", "/nowhere", ""},
			},
		},
		{
			name: "kv", a: "kv-naive", b: "kv-tuned",
			reqs: []req{
				{"GET", "/kv/key-1", ""},
				{"GET", "/kv/missing", ""},
				{"PUT", "/kv/" + url.PathEscape("k\"\\\x01<é\u2028\xff"), "v\"\\\x00\x1f<>&é\u2029\xfe"},
				{"GET", "/kv/" + url.PathEscape("k\"\\\x01<é\u2028\xff"), ""},
				{"PUT", "/kv/big", strings.Repeat("x", 64<<10+1)},
				{"GET", "/kv/" + strings.Repeat("k", 257), ""},
				{"POST", "/kv/key-1", ""},
				{"PATCH", "/stats", ""},
				{"GET", "/kv/a/b", ""},
				{"GET", "/stats", ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, err := New(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			hb, err := New(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tt.reqs {
				ra, rb := get(t, ha, r.method, r.target, r.body), get(t, hb, r.method, r.target, r.body)
				what := r.method + " " + r.target
				if len(what) > 50 {
					what = what[:50] + "…"
				}
				if ra.Code != rb.Code {
					t.Errorf("%s: %s answers %d, %s %d", what, tt.a, ra.Code, tt.b, rb.Code)
				}
				for _, k := range []string{"Content-Type", "Allow"} {
					if ra.Header().Get(k) != rb.Header().Get(k) {
						t.Errorf("%s: %s %s %q, %s %q", what, k, tt.a, ra.Header().Get(k), tt.b, rb.Header().Get(k))
					}
				}
				if ra.Body.String() != rb.Body.String() {
					t.Errorf("%s: bodies differ:\n%s: %q\n%s: %q", what, tt.a, ra.Body.String(), tt.b, rb.Body.String())
				}
			}
		})
	}
}

func TestMain_UnknownName(t *testing.T) {
	var stderr bytes.Buffer
	if code := Main(context.Background(), "nope", nil, nil, &stderr); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if got := stderr.String(); !strings.Contains(got, `unknown example "nope"`) || strings.Count(got, "\n") != 1 {
		t.Errorf("stderr %q, want one line naming the unknown example", got)
	}
}

func TestMain_UsageError(t *testing.T) {
	tests := []struct {
		name, example string
		args          []string
		env           map[string]string
		want          string
	}{
		{"capacity", "optimized", []string{"--capacity", "0"}, nil, `optimizedcache: invalid value "0" for flag -capacity: must be at least 1`},
		{"preload", "kv-naive", []string{"--preload=-1"}, nil, `naivekv: invalid value "-1" for flag -preload: must be from 0 to 10000000`},
		{"preload env", "kv-tuned", nil, map[string]string{"TUNEDKV_PRELOAD": "lots"}, `tunedkv: invalid value "lots" for TUNEDKV_PRELOAD: not an integer`},
		{"addr env", "leaky", nil, map[string]string{"LEAKYCACHE_ADDR": "6060"}, `leakycache: invalid value "6060" for LEAKYCACHE_ADDR: missing port in address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := Main(context.Background(), tt.example, tt.args, func(k string) string { return tt.env[k] }, &stderr)
			if code != 2 || !strings.HasPrefix(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("Main: %d %q, want 2 and one line starting %q", code, stderr.String(), tt.want)
			}
		})
	}
}

// syncWriter collects what is written to it, safely from several goroutines,
// and signals each write.
type syncWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestMain_Serves(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncWriter{wrote: make(chan struct{}, 1)}
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, "kv-tuned", []string{"--addr", "127.0.0.1:0", "--preload", "5"}, nil, stderr)
	}()

	re := regexp.MustCompile(`^tunedkv: listening on (http://127\.0\.0\.1:\d+)\n`)
	var base string
	deadline := time.After(10 * time.Second)
	for base == "" {
		select {
		case <-stderr.wrote:
			if m := re.FindStringSubmatch(stderr.String()); m != nil {
				base = m[1]
			}
		case c := <-code:
			t.Fatalf("Main returned %d before listening: %s", c, stderr.String())
		case <-deadline:
			t.Fatalf("no listening line within 10s: %q", stderr.String())
		}
	}

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for path, wantCode := range map[string]int{"/kv/key-4": 200, "/kv/key-5": 404, "/health": 200} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != wantCode {
			t.Errorf("GET %s: status %d, want %d", path, resp.StatusCode, wantCode)
		}
	}

	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code %d after cancellation, want 0; stderr %q", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Main did not return within 10s of cancellation")
	}
}
