package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/result"
)

// TestProfile_RealModuleAtBuggyAndFixedVersions profiles a small service
// built on a public module at a release with a known leak and at the
// release that fixed it, fetched from the Go module proxy as a user's
// build fetches them, started as a user starts it (no GODEBUG, the
// runtime's default heap sampling rate) and loaded at 300 requests/s.
//
// github.com/gorilla/sessions before v1.2.0 keeps each request's session
// registry in github.com/gorilla/context's package-level map, keyed by
// the *http.Request. A handler that first shallow-copies its request with
// r.WithContext, as anything behind a context-setting middleware does,
// registers the copy, and context.ClearHandler clears only the original:
// every request stays in the map. v1.2.0 keeps the registry in
// r.Context() instead.
func TestProfile_RealModuleAtBuggyAndFixedVersions(t *testing.T) {
	// Exact versions, as in the user's go.mod. gorilla/context is the
	// service's own import (ClearHandler) at both; securecookie is what
	// both sessions releases require.
	versions := []struct {
		name, version string
		require       []string
	}{
		{"buggy", "v1.1.3", []string{"github.com/gorilla/sessions v1.1.3", "github.com/gorilla/context v1.1.1", "github.com/gorilla/securecookie v1.1.1"}},
		{"fixed", "v1.2.0", []string{"github.com/gorilla/sessions v1.2.0", "github.com/gorilla/context v1.1.1", "github.com/gorilla/securecookie v1.1.1"}},
	}
	tmpl, err := os.ReadFile(filepath.Join("testdata", "realmodule", "sessions", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}

	// Both builds, then both runs, side by side: each is mostly waiting
	// (on the proxy, on the window's clock).
	var wg sync.WaitGroup
	bins := make([]string, len(versions))
	errs := make([]error, len(versions))
	for i, v := range versions {
		wg.Go(func() {
			bins[i], errs[i] = buildModule(t.Context(), t.TempDir(), "example.com/sessionsvc", tmpl, v.require)
		})
	}
	wg.Wait()
	for i, v := range versions {
		if errs[i] != nil {
			t.Fatalf("build the service on gorilla/sessions %s: %v", v.version, errs[i])
		}
	}
	runs := make([]*result.Run, len(versions))
	for i := range versions {
		wg.Go(func() {
			var url string
			if url, errs[i] = startService(t, bins[i]); errs[i] == nil {
				runs[i], errs[i] = profileURL(t, url, "--duration", "20s", "--load", "GET /", "--rate", "300")
			}
		})
	}
	wg.Wait()
	for i, v := range versions {
		if errs[i] != nil {
			t.Fatalf("gorilla/sessions %s: %v", v.version, errs[i])
		}
		r := runs[i]
		t.Logf("gorilla/sessions %s (%s): findings:%s\nnotes:%s\nheap: %s", v.version, v.name, describeSites(r.Findings), bullets(r.DiagnosisNotes), growthLine(r.HeapGrowth))
		if r.Load == nil || r.Load.Completed == 0 || r.Load.Errors != 0 {
			t.Errorf("gorilla/sessions %s: load %+v, want requests and no errors", v.version, r.Load)
		}
	}

	buggy, fixed := runs[0], runs[1]
	// The catalogue of known bugs (its entry gorilla-sessions-context-
	// registry) names the way out on the leak itself: the release that
	// fixed it.
	const upgrade = "upgrade github.com/gorilla/sessions from v1.1.3 to v1.2.0"
	judge(t, "gorilla/sessions v1.1.3 (known leak), 20 s at 300/s", buggy.Findings, buggy.DiagnosisNotes,
		want{id: "leak.*", min: diagnose.Medium, says: upgrade})
	judge(t, "gorilla/sessions v1.2.0 (its fix), 20 s at 300/s", fixed.Findings, fixed.DiagnosisNotes)
	says := func(f result.Finding) bool {
		return strings.Contains(f.Fix, "upgrade github.com/gorilla/sessions") || strings.Contains(f.Title, "upgrade github.com/gorilla/sessions")
	}
	if slices.ContainsFunc(fixed.Findings, says) {
		t.Errorf("gorilla/sessions v1.2.0: a finding says to upgrade gorilla/sessions, whose fixed release it runs; findings:%s", describe(fixed.Findings))
	}
}

// TestProfile_PoolThatFillsOnceIsWarmUp profiles a real server before,
// during and after its load begins: a pool of gzip writers fills as the
// concurrent requests need them (each keeps its compressor's tables, about
// 800 KiB) and is then reused. The heap grows once, when the load begins,
// and holds: warm-up, said with its size, not a leak.
func TestProfile_PoolThatFillsOnceIsWarmUp(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "realmodule", "gzippool", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := buildModule(t.Context(), t.TempDir(), "example.com/gzipsvc", src, nil)
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	url, err := startService(t, bin)
	if err != nil {
		t.Fatal(err)
	}
	// --warmup 0: the window opens on the idle service, so its first
	// snapshot is from before the load.
	r, err := profileURL(t, url, "--duration", "20s", "--warmup", "0", "--load", "GET /items", "--connections", "4")
	if err != nil {
		t.Fatal(err)
	}
	judge(t, "gzip writer pool filling once as the load begins, 20 s", r.Findings, r.DiagnosisNotes)
	if !slices.ContainsFunc(r.DiagnosisNotes, func(n string) bool { return strings.Contains(n, "as the load began") }) &&
		!slices.ContainsFunc(r.Findings, func(f result.Finding) bool { return f.ID == "growth.bounded" && f.Severity == "low" }) {
		t.Errorf("notes %v, findings %v: want the growth as the load began said, or bounded growth with its plateau", r.DiagnosisNotes, r.Findings)
	}
}

// TestProfile_MisusesOnRealRuns proves each entry of the misuse catalogue
// (internal/diagnose/misuses.yaml) on a real service that makes the
// mistake, profiled at default settings: the finding leads with the
// misuse's cause and the fix in the service's code, not with advice about
// the library's internals.
func TestProfile_MisusesOnRealRuns(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "realmodule", "misuses", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := buildModule(t.Context(), t.TempDir(), "example.com/misusesvc", src, nil)
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	upstream, err := startService(t, bin, "-mode", "upstream")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		misuse string
		args   []string
		rate   string
		wants  []want
	}{
		// The connections' goroutines grow inside net/http, and their
		// buffers with them: one cause, one finding, at the handler's
		// http.Get.
		{"http-response-body-not-closed", []string{"-mode", "body-not-closed", "-upstream", upstream}, "100", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "http.Get(*upstream"), min: diagnose.Medium, says: "close every response body"},
		}},
		// A context and its timer are a few hundred bytes: at 400/s the
		// growth takes samples enough to place it within the window.
		{"context-timeout-never-cancelled", []string{"-mode", "timeout-not-cancelled"}, "400", []want{
			{id: "leak.*", min: diagnose.Medium, says: "call the cancel function on every path"},
		}},
		// The contexts, timers and their channels grow inside context and
		// time; each finding is the handler's line that makes them.
		{"context-cancel-never-called", []string{"-mode", "cancel-not-called"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "context.WithCancel(background)"), min: diagnose.Medium, says: "call the cancel function when the work is done"},
		}},
		{"time-after-in-select", []string{"-mode", "time-after-in-select"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "<-time.After(time.Hour)"), min: diagnose.Medium, says: "defer t.Stop() instead of time.After"},
		}},
		// A timer and its function are about a hundred bytes: at 1,000/s
		// they grow past the leak threshold within the window.
		{"time-afterfunc-never-stopped", []string{"-mode", "afterfunc-not-stopped"}, "1000", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.AfterFunc(time.Hour"), min: diagnose.Medium, says: "call its Stop when the work it guards ends"},
		}},
		// Tickers and timers made per request and dropped stay in the
		// timer heap under the module's go line, 1.22.
		{"time-tick-in-function", []string{"-mode", "tick-in-handler"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.Tick(10 * time.Second)"), min: diagnose.Medium, says: "make the ticker with t := time.NewTicker(d) and defer t.Stop()"},
		}},
		{"time-newticker-never-stopped", []string{"-mode", "ticker-not-stopped"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.NewTicker(10 * time.Second)"), min: diagnose.Medium, says: "stop every ticker when its loop ends"},
		}},
		{"time-newtimer-never-stopped", []string{"-mode", "timer-not-stopped"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.NewTimer(time.Hour)"), min: diagnose.Medium, says: "stop the timer when the wait ends"},
		}},
		{"context-afterfunc-never-stopped", []string{"-mode", "context-afterfunc-not-stopped"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "context.AfterFunc(background"), min: diagnose.Medium, says: "keep the stop function context.AfterFunc returns"},
		}},
		// Each kept 16-byte sub-slice holds its whole 16 KiB read. The
		// finding is at the read, or at the map that keeps the slices
		// when the samples caught its tables growing: either is the
		// service's line, and the fix is the entry's.
		{"io-readall-kept-whole", []string{"-mode", "readall-subslice", "-upstream", upstream}, "100", []want{
			{id: "leak.*", file: "main.go", min: diagnose.Medium, says: "keep a copy of the part you need"},
		}},
		// The requests wait inside net/http for an audit service that
		// stalls: their goroutines, their connections' goroutines and
		// buffers are one finding, at the call without a timeout.
		{"http-client-without-timeout", []string{"-mode", "client-without-timeout", "-upstream", upstream}, "100", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, `http.Post(*upstream+"/audit"`), min: diagnose.Medium, says: "give every outgoing request a bound"},
		}},
		// Goroutines blocked for ever in the service's own code: the
		// memory they hold (their structs, what they were writing) is a
		// symptom of the one finding at the line they wait on. The pipes
		// grow the heap as fast as the writers pile up: whichever of
		// the two is rated worse leads, and the memory at a tie.
		{"io-pipe-reader-abandoned", []string{"-mode", "pipe-reader-abandoned"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "fmt.Fprintf(pw,"), min: diagnose.Medium, says: "close the reading end when you stop reading"},
		}},
		{"mutex-never-unlocked", []string{"-mode", "lock-not-released"}, "400", []want{
			{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "settingsMu.Lock()"), min: diagnose.Medium, says: "unlock on every path"},
		}},
		{"channel-send-never-received", []string{"-mode", "result-never-received", "-upstream", upstream}, "200", []want{
			{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "found <- lookup()"), min: diagnose.Medium, says: "give the channel room for the results nobody may wait for"},
		}},
		{"waitgroup-done-missed", []string{"-mode", "waitgroup-done-missed"}, "400", []want{
			{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "wg.Wait()"), min: diagnose.Medium, says: "call Done on every path"},
		}},
		{"channel-never-closed", []string{"-mode", "workers-never-released"}, "400", []want{
			{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "for j := range jobs"), min: diagnose.Medium, says: "close the channel when the last value is sent"},
		}},
		{"cond-waiter-never-woken", []string{"-mode", "cond-never-signalled"}, "400", []want{
			{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "q.ready.Wait()"), min: diagnose.Medium, says: "wake every waiter with Broadcast"},
		}},
		{"sleep-loop-never-ends", []string{"-mode", "poller-per-request"}, "400", []want{
			{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "time.Sleep(time.Second)"), min: diagnose.Medium, says: "give it a way to end"},
		}},
		{"net-read-without-deadline", []string{"-mode", "read-without-deadline", "-upstream", upstream}, "100", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "bufio.NewReader(conn).ReadString"), min: diagnose.Medium, says: "set a deadline before each read"},
		}},
		// Each request's Transport keeps its idle connection, with its
		// goroutines and buffers: one finding, at the request's call.
		{"http-transport-per-request", []string{"-mode", "transport-per-request", "-upstream", upstream}, "100", []want{
			{id: "leak.*", file: "main.go", min: diagnose.Medium, says: "make one http.Client (with its Transport)"},
		}},
		// database/sql on a small driver of the service's: what grows
		// is database/sql's own, with its goroutines.
		{"sql-db-per-request", []string{"-mode", "db-per-request"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, `db, err := sql.Open("inventory"`), min: diagnose.Medium, says: "open the database once when the service starts"},
		}},
		{"sql-tx-never-ended", []string{"-mode", "tx-never-ended"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "tx, err := inventory.BeginTx(background"), min: diagnose.Medium, says: "defer tx.Rollback() right after BeginTx"},
		}},
		{"sql-rows-never-closed", []string{"-mode", "rows-never-closed"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "rows, err := inventory.QueryContext(background"), min: diagnose.Medium, says: "defer rows.Close()"},
		}},
		// The same, on no context: no goroutine waits, the DB keeps the
		// connections.
		{"sql-rows-never-closed, plain Query", []string{"-mode", "rows-never-closed-plain"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, `rows, err := inventory.Query("SELECT sku, count FROM stock")`), min: diagnose.Medium, says: "defer rows.Close()"},
		}},
		{"expvar-map-key-per-request", []string{"-mode", "expvar-key-per-session"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "sessionHits.Add("), min: diagnose.Medium, says: "key expvar maps with bounded values only"},
		}},
		{"signal-notify-context-never-stopped", []string{"-mode", "notify-context-per-request"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "signal.NotifyContext(background"), min: diagnose.Medium, says: "call the stop function"},
		}},
		{"sql-stmt-never-closed", []string{"-mode", "stmt-per-request"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "stmt, err := inventory.Prepare("), min: diagnose.Medium, says: "defer stmt.Close() right after Prepare"},
		}},
		{"sync-map-never-deleted", []string{"-mode", "sync-map-per-request"}, "400", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "lastVisit.Store(caller"), min: diagnose.Medium, says: "delete each key when what it tracks ends"},
		}},
		// A link and its value are about a hundred bytes: at 1,000/s the
		// chain grows past the leak threshold within the window.
		{"context-value-chain", []string{"-mode", "value-chain"}, "1000", []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "tagCtx = context.WithValue(tagCtx"), min: diagnose.Medium, says: "derive per-request values from the request's context"},
		}},
	}
	runs, errs := profileMisuses(t, bin, "GET /", 4, len(cases), func(i int) ([]string, string) { return cases[i].args, cases[i].rate })
	for i, c := range cases {
		t.Run(c.misuse, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			judge(t, "misuse: "+c.misuse+", 10 s at "+c.rate+"/s", runs[i].Findings, runs[i].DiagnosisNotes, c.wants...)
			t.Logf("%s: window %.0f s", c.misuse, runs[i].Window.DurationSeconds)
		})
	}
}

// TestProfile_ModuleMisusesOnRealRuns proves the entries of the misuse
// catalogue that are misuses of public modules, on a real service built
// on them at real versions from the module proxy, with the fixed twin of
// each as a control that must stay quiet.
func TestProfile_ModuleMisusesOnRealRuns(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "realmodule", "modmisuses", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := buildModule(t.Context(), t.TempDir(), "example.com/modmisusesvc", src,
		[]string{
			"github.com/prometheus/client_golang v1.25.0",
			"google.golang.org/grpc v1.82.1",
			"golang.org/x/sync v0.25.0",
			"golang.org/x/time v0.16.0",
			"github.com/patrickmn/go-cache v2.1.0+incompatible",
			"github.com/sirupsen/logrus v1.10.2",
			"github.com/robfig/cron/v3 v3.0.1",
			"github.com/hashicorp/golang-lru/v2 v2.0.7",
			"github.com/dgraph-io/ristretto/v2 v2.4.2",
		})
	if err != nil {
		t.Fatalf("build the service: %v", err)
	}
	upstream, err := startService(t, bin, "-mode", "grpc-upstream")
	if err != nil {
		t.Fatal(err)
	}
	grpcTarget := strings.TrimPrefix(upstream, "http://")
	cases := []struct {
		name string
		args []string
		rate string
		// fixed: the twin that fixes the misuse, which must stay quiet.
		fixed bool
		wants []want
	}{
		// A series per user id: the registry keeps each for ever.
		{"prometheus-label-per-request", []string{"-mode", "metric-label-per-request"}, "400", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, `requests.WithLabelValues("/", r.URL.Query()`), min: diagnose.Medium, says: "label with bounded values only"},
		}},
		{"prometheus-label-bounded", []string{"-mode", "metric-label-bounded"}, "400", true, nil},
		// A ClientConn per request: its goroutines (callbacks, the
		// transport's reader and writer) and buffers grow inside grpc,
		// one finding at the handler's grpc.NewClient.
		{"grpc-client-per-request", []string{"-mode", "grpc-client-per-request", "-upstream", grpcTarget}, "100", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "grpc.NewClient(*upstream"), min: diagnose.Medium, says: "make one grpc.ClientConn per target"},
		}},
		{"grpc-client-shared", []string{"-mode", "grpc-client-shared", "-upstream", grpcTarget}, "100", true, nil},
		// A Watch stream per request on one ClientConn: each keeps its
		// goroutine and HTTP/2 stream, at the handler's Watch call.
		{"grpc-stream-never-ended", []string{"-mode", "grpc-stream-never-ended", "-upstream", grpcTarget}, "100", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "stream, err := client.Watch(ctx"), min: diagnose.Medium, says: "cancel the stream's context when you are done with it"},
		}},
		{"grpc-stream-cancelled", []string{"-mode", "grpc-stream-cancelled", "-upstream", grpcTarget}, "100", true, nil},
		{"singleflight-call-hangs", []string{"-mode", "singleflight-no-timeout"}, "100", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, `resp, err := client.Get(self + "/catalogue-source")`), min: diagnose.Medium, says: "give the function passed to Do a bound"},
		}},
		{"singleflight-timeout", []string{"-mode", "singleflight-timeout"}, "100", true, nil},
		{"semaphore-slot-never-released", []string{"-mode", "semaphore-release-missed"}, "400", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "if err := renderSlots.Acquire(background, 1); err != nil {"), min: diagnose.Medium, says: "defer sem.Release(n) right after a successful Acquire"},
		}},
		{"semaphore-release-deferred", []string{"-mode", "semaphore-release-deferred"}, "400", true, nil},
		// A group and its context are about two hundred bytes: at 1,000/s
		// they take samples enough to be placed within the window.
		{"errgroup-never-waited", []string{"-mode", "errgroup-never-waited"}, "1000", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "g, ctx := errgroup.WithContext(background)"), min: diagnose.Medium, says: "call g.Wait() for every group"},
		}},
		{"errgroup-waited", []string{"-mode", "errgroup-waited"}, "1000", true, nil},
		// An expired visit is about a hundred bytes, with its key and
		// its slot in go-cache's map: at 1,000/s they grow steadily past
		// the leak threshold within the window.
		{"go-cache-without-janitor", []string{"-mode", "cache-without-janitor"}, "1000", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "recent.Set(r.URL.Query()"), min: diagnose.Medium, says: "give the cache a cleanup interval"},
		}},
		{"cache-with-janitor", []string{"-mode", "cache-with-janitor"}, "1000", true, nil},
		{"logrus-hook-per-request", []string{"-mode", "logrus-hook-per-request"}, "400", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "logger.AddHook(&userHook{"), min: diagnose.Medium, says: "add hooks once, when the logger is set up"},
		}},
		{"logrus-field-per-request", []string{"-mode", "logrus-field-per-request"}, "400", true, nil},
		// An entry, its parsed schedule and its function are a few
		// hundred bytes: at 1,000/s they take samples enough to place
		// the growth at the AddFunc within the window.
		{"cron-job-per-request", []string{"-mode", "cron-job-per-request"}, "1000", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, `reminders.AddFunc("@every 1h", func() { remind(user) })`), min: diagnose.Medium, says: "call Remove(id) when the job is no longer wanted"},
		}},
		{"cron-job-once", []string{"-mode", "cron-job-once"}, "1000", true, nil},
		// The map that keeps the limiters holds the leak: its line is
		// the one to change. A limiter is about a hundred bytes: at
		// 1,000/s they take samples enough to name it.
		{"rate-limiter-per-client-never-evicted", []string{"-mode", "limiter-per-client"}, "1000", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "limiters[client] = l"), min: diagnose.Medium, says: "keep the limiters in a cache that evicts"},
		}},
		{"limiter-per-client-evicted", []string{"-mode", "limiter-per-client-evicted"}, "1000", true, nil},
		{"expirable-lru-per-call", []string{"-mode", "lru-per-request"}, "100", false, []want{
			{id: "leak.*", file: "main.go", min: diagnose.Medium, says: "make the expirable LRU once and share it"},
		}},
		{"lru-shared", []string{"-mode", "lru-shared"}, "100", true, nil},
		{"ristretto-cache-never-closed", []string{"-mode", "ristretto-per-request"}, "100", false, []want{
			{id: "leak.*", file: "main.go", line: lineOf(t, src, "return ristretto.NewCache(&ristretto.Config"), min: diagnose.Medium, says: "make the cache once when the service starts"},
		}},
		{"ristretto-shared", []string{"-mode", "ristretto-shared"}, "100", true, nil},
	}
	runs, errs := profileMisuses(t, bin, "GET /?user=u{seq}", 2, len(cases), func(i int) ([]string, string) { return cases[i].args, cases[i].rate })
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			name := "misuse: " + c.name
			if c.fixed {
				name = "fixed twin: " + c.name
			}
			judge(t, name+", 10 s at "+c.rate+"/s", runs[i].Findings, runs[i].DiagnosisNotes, c.wants...)
		})
	}
}

// profileMisuses starts the service bin with each of n cases' flags and
// profiles it for 10 s (30 s at most) under load at the case's rate, at
// most slots at a time: each service and its load take a core's share,
// and a starved run would judge the machine, not the misuse.
func profileMisuses(t *testing.T, bin, load string, slots, n int, caseOf func(int) (args []string, rate string)) ([]*result.Run, []error) {
	runs := make([]*result.Run, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	free := make(chan struct{}, slots)
	for i := range n {
		args, rate := caseOf(i)
		wg.Go(func() {
			free <- struct{}{}
			defer func() { <-free }()
			var url string
			if url, errs[i] = startService(t, bin, args...); errs[i] == nil {
				runs[i], errs[i] = profileURL(t, url, "--duration", "10s", "--max-duration", "30s", "--load", load, "--rate", rate)
			}
		})
	}
	wg.Wait()
	return runs, errs
}

// lineOf returns the number of the first line of src that holds text.
func lineOf(t *testing.T, src []byte, text string) int64 {
	t.Helper()
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, text) {
			return int64(i + 1)
		}
	}
	t.Fatalf("no line holds %q", text)
	return 0
}

// buildModule writes a main package from src and a go.mod of the given
// module path requiring the given module versions into dir, resolves
// them through the module proxy as a user's build does, and builds it. It
// returns the executable's path.
func buildModule(ctx context.Context, dir, module string, src []byte, require []string) (string, error) {
	gomod := "module " + module + "\n\ngo 1.22\n"
	if len(require) > 0 {
		gomod += "\nrequire (\n\t" + strings.Join(require, "\n\t") + "\n)\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o666); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o666); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "svc")
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", bin, "."}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		// A module of its own, outside any workspace of the caller's.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s (GOPROXY=%q; the module proxy must be reachable): %w\n%s",
				strings.Join(args, " "), goEnv("GOPROXY"), err, out)
		}
	}
	return bin, nil
}

func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return os.Getenv(name)
	}
	return strings.TrimSpace(string(out))
}

// startService starts the executable with args as a user starts a service, reads
// where it listens from its first line of output ("listening on
// HOST:PORT") and returns its base URL. The service is killed when the
// test ends.
func startService(t *testing.T, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(t.Context(), bin, args...)
	first := &firstLine{line: make(chan string, 1)}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = first, &stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case line := <-first.line:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			return "", fmt.Errorf("start %s: first line %q, want \"listening on HOST:PORT\"", bin, line)
		}
		return "http://" + strings.TrimSpace(addr), nil
	case err := <-exited:
		exited <- err
		return "", fmt.Errorf("start %s: exited (%v): %s", bin, err, stderr.String())
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("start %s: no address on stdout after 30s", bin)
	}
}

// firstLine is a process's standard output that hands on its first line
// and discards the rest.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	done bool
	line chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.done = true
		w.line <- string(w.buf[:i])
		w.buf = nil
	}
	return len(p), nil
}

// profileURL runs heapscope profile against a service already running at
// url, with args, and returns the result. It may run on any goroutine: it
// reports failures as errors.
func profileURL(t *testing.T, url string, args ...string) (*result.Run, error) {
	args = append([]string{"profile", url, "--out", t.TempDir(), "--format", "json"}, args...)
	got := heapscopeIn(t, "", args...)
	if got.code != exitOK {
		return nil, fmt.Errorf("profile %s: exit %d\nstderr: %s", url, got.code, got.stderr)
	}
	var res result.Run
	if err := json.Unmarshal([]byte(got.stdout), &res); err != nil {
		return nil, fmt.Errorf("profile %s: stdout is not result JSON: %w", url, err)
	}
	return &res, nil
}

// describeSites is describe with each finding's site and fix, for a log
// that shows where a verdict points and what it advises.
func describeSites(fs []result.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(describe([]result.Finding{f}))
		if f.Function != "" {
			fmt.Fprintf(&b, "\n    at %s (%s:%d)", f.Function, f.File, f.Line)
		}
		if f.Fix != "" {
			b.WriteString("\n    fix: " + f.Fix)
		}
	}
	return b.String()
}

func bullets(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n  - " + l)
	}
	return b.String()
}

// growthLine sums up the heap snapshots: the live heap after each forced
// GC, and the slopes fitted to it and to the sampled inuse_space.
func growthLine(g *result.HeapGrowth) string {
	if g == nil {
		return "none"
	}
	var live []string
	for _, s := range g.Snapshots {
		live = append(live, fmt.Sprintf("%.1f", float64(s.LiveBytes)/(1<<20)))
	}
	line := fmt.Sprintf("live MiB %s; inuse_space %+.1f MiB/min (R² %.2f)", strings.Join(live, " → "), g.SlopeBytesPerMinute/(1<<20), g.R2)
	if g.Live != nil {
		line += fmt.Sprintf("; live %+.1f MiB/min (R² %.2f)", g.Live.SlopeBytesPerMinute/(1<<20), g.Live.R2)
	}
	return line
}
