package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// watcherOver makes a watcher of urls over st, logging into log.
func watcherOver(t *testing.T, st store.Store, urls []string, log io.Writer) *Watcher {
	t.Helper()
	cfg, err := config.ForURLs(urls, config.Settings{Window: time.Second, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Options{Config: cfg, Store: st, Version: "test", Log: slog.New(slog.NewJSONHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// get GETs path of h on a real listener, naming the Host a remote client
// would (but for a "Host" header given: "" for the listener's own
// address), with the given headers.
func get(t *testing.T, h http.Handler, path string, headers ...string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	return testserver.Fetch(t, srv.Client(), srv.URL+path, headers...)
}

// TestStart_adoptsTheRunsLeftUnindexed leaves in the store what a failed
// index write leaves, a complete run in place that the index does not
// know (a copy of a real capture's directory, entry.json and all), and
// checks that the next start indexes it and says so.
func TestStart_adoptsTheRunsLeftUnindexed(t *testing.T) {
	leaky := startExample(t, "leaky")
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var log bytes.Buffer
	if err := watcherOver(t, st, []string{leaky.URL}, &log).Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	h, err := st.History(store.Query{})
	if err != nil || len(h.Runs) != 1 {
		t.Fatalf("history after a capture: %+v (%v)", h.Runs, err)
	}
	left := h.Runs[0].Path + "-unindexed"
	if err := os.CopyFS(filepath.Join(st.Dir(), left), os.DirFS(filepath.Join(st.Dir(), h.Runs[0].Path))); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "adopted") {
		t.Fatalf("a start with nothing to adopt logged an adoption:\n%s", log.String())
	}

	log.Reset()
	dead := deadTarget(t)
	watcherOver(t, st, []string{dead}, &log).Once(t.Context()) // the dead target fails: only the start matters
	if e, ok, err := st.EntryAt(left); err != nil || !ok || e.Status != "complete" {
		t.Fatalf("the run left unindexed after a start: %+v %v %v, want it indexed, complete", e, ok, err)
	}
	var adopted []string
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var rec struct{ Msg, Path string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "adopted a run left unindexed" {
			adopted = append(adopted, rec.Path)
		}
	}
	if len(adopted) != 1 || adopted[0] != left {
		t.Errorf("logged adoptions %v, want one of %s:\n%s", adopted, left, log.String())
	}
	if r, err := st.Check(false); err != nil || !r.OK() || r.Entries != 2 {
		t.Errorf("store check after the start: %s (%v)", r, err)
	}
}

// TestHealthz_notOkAfterFailedCommits breaks the store under a watcher
// (runs/ a file: no run can be placed) and checks /healthz: ok after two
// failed commits, not ok (503) after the third, in full on loopback and
// bare off it, and ok again after the next commit that succeeds.
func TestHealthz_notOkAfterFailedCommits(t *testing.T) {
	leaky := startExample(t, "leaky")
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := watcherOver(t, st, []string{leaky.URL}, io.Discard)
	tokens := filepath.Join(t.TempDir(), "tokens")
	const token = "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(tokens, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	remote, err := server.Handler(server.Config{Listen: "0.0.0.0:7071", TokensFile: tokens, Own: w.Handler()}, st)
	if err != nil {
		t.Fatal(err)
	}
	local, err := server.Handler(server.Config{Listen: "127.0.0.1:7071", Own: w.Handler()}, st)
	if err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(st.Dir(), store.RunsDir)
	if err := os.Remove(runs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runs, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	type health struct {
		Status string      `json:"status"`
		Store  StoreHealth `json:"store"`
	}
	check := func(when string, wantCode int, wantStatus string, wantFailures int) {
		t.Helper()
		code, body := get(t, w.Handler(), "/healthz")
		var h health
		if err := json.Unmarshal([]byte(body), &h); err != nil || code != wantCode || h.Status != wantStatus || h.Store.ConsecutiveFailures != wantFailures {
			t.Errorf("%s: /healthz %d %s, want %d, %q, %d failures", when, code, body, wantCode, wantStatus, wantFailures)
		}
		if wantFailures > 0 && (h.Store.LastError == "" || h.Store.LastErrorTime.IsZero()) {
			t.Errorf("%s: /healthz does not say why: %s", when, body)
		}
		if c, b := get(t, local, "/healthz", "Host", ""); c != wantCode || !strings.Contains(b, `"status":"`+wantStatus+`"`) || !strings.Contains(b, `"store"`) {
			t.Errorf("%s: on loopback /healthz %d %s, want %d and the whole answer", when, c, b, wantCode)
		}
		if c, b := get(t, remote, "/healthz"); c != wantCode || b != `{"status":"`+wantStatus+`"}`+"\n" {
			t.Errorf("%s: off loopback without a credential /healthz %d %q, want %d and the bare status %q", when, c, b, wantCode, wantStatus)
		}
		if c, b := get(t, remote, "/healthz", "Authorization", "Bearer "+token); c != wantCode || !strings.Contains(b, `"store"`) {
			t.Errorf("%s: off loopback with the token /healthz %d %s, want %d and the whole answer", when, c, b, wantCode)
		}
	}
	check("before any capture", 200, "ok", 0)
	for i := 1; i <= UnhealthyCommits; i++ {
		if err := w.Once(t.Context()); err == nil {
			t.Fatalf("capture %d: stored with runs/ a file", i)
		}
		if i < UnhealthyCommits {
			check("after "+strconv.Itoa(i)+" failed commits", 200, "ok", i)
		}
	}
	check("after "+strconv.Itoa(UnhealthyCommits)+" failed commits", 503, "not ok", UnhealthyCommits)

	if err := os.Remove(runs); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("after a commit that succeeded", 200, "ok", 0)
}

// TestStoreBytes_isTheStoresSize watches a real service into a real
// store and checks heapscope_watch_store_bytes, as /metrics serves it,
// against the bytes of the files under runs/ and bundles/ once captures
// are stored: right after them, not at the next hourly retention.
func TestStoreBytes_isTheStoresSize(t *testing.T) {
	leaky := startExample(t, "leaky")
	w, st := newWatcher(t, []string{leaky.URL}, config.Settings{
		Every: 1500 * time.Millisecond, Window: 300 * time.Millisecond, Timeout: 5 * time.Second, Poll: time.Second,
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	type sizes struct{ served, files int64 }
	got := testserver.WaitFor(t, time.Minute, "the store's sizes", func() (sizes, bool) {
		h, err := st.History(store.Query{})
		if err != nil {
			t.Fatal(err)
		}
		s := sizes{storeBytesServed(t, w), filesBytes(t, st.Dir())}
		return s, len(h.Runs) >= 2 && s.served == s.files
	})
	if n, err := st.Size(); err != nil || n != got.files {
		t.Errorf("Size %d (%v), want the %d bytes of the stored files", n, err, got.files)
	}
}

// filesBytes returns the bytes of the files under a store's runs/ and
// bundles/.
func filesBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, top := range []string{store.RunsDir, store.BundlesDir} {
		err := filepath.WalkDir(filepath.Join(dir, top), func(_ string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			fi, err := d.Info()
			if err == nil {
				n += fi.Size()
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// storeBytesServed returns heapscope_watch_store_bytes as /metrics serves
// it.
func storeBytesServed(t *testing.T, w *Watcher) int64 {
	t.Helper()
	code, body := get(t, w.Handler(), "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, "heapscope_watch_store_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int64(f)
		}
	}
	t.Fatalf("/metrics has no heapscope_watch_store_bytes:\n%s", body)
	return 0
}
