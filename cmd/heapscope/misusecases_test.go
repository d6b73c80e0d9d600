package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/diagnose"
)

// misuseCase is one end-to-end case of the misuse catalogue
// (internal/diagnose/misuses.yaml): a mode of a real service that makes
// the misuse, or its fixed twin, which must stay quiet; the rate of the
// load that drives it; and the findings its run must have.
type misuseCase struct {
	name  string
	args  []string
	rate  string
	fixed bool
	wants []want
}

// judgeName is the case as judge and the accuracy table name it.
func (c misuseCase) judgeName() string {
	kind := "misuse: "
	if c.fixed {
		kind = "fixed twin: "
	}
	return kind + c.name + ", 10 s at " + c.rate + "/s"
}

var notInName = regexp.MustCompile(`[^a-z0-9]+`)

// dirName is the name of the case's recorded run directory.
func (c misuseCase) dirName() string {
	return strings.Trim(notInName.ReplaceAllString(strings.ToLower(c.name), "-"), "-")
}

// misuseSuite is a service of testdata/realmodule that makes misuses of
// the catalogue, one mode each, and its cases. The live test builds it,
// profiles every case under load and judges the runs
// (misuses_live_test.go, build tag accuracy, run by bench/accuracy.sh);
// TestDiagnose_RecordedMisuseRuns judges the runs it recorded.
type misuseSuite struct {
	// test is the live test's name, and the directory of testdata/recorded
	// that holds its recorded runs.
	test string
	// source is the directory of testdata/realmodule with its main.go.txt.
	source  string
	module  string
	require []string
	// upstreamMode is the mode of the service the cases call out to.
	upstreamMode string
	load         string
	// slots is how many cases run at once.
	slots int
	// cases are the suite's cases, for the service's source and the URL
	// of its upstream ("" when judging recorded runs).
	cases func(t *testing.T, src []byte, upstream string) []misuseCase
}

// stdlibMisuses are the catalogue's misuses of the standard library.
var stdlibMisuses = misuseSuite{
	test:         "TestProfile_MisusesOnRealRuns",
	source:       "misuses",
	module:       "example.com/misusesvc",
	upstreamMode: "upstream",
	load:         "GET /",
	slots:        4,
	cases: func(t *testing.T, src []byte, upstream string) []misuseCase {
		return []misuseCase{
			// The connections' goroutines grow inside net/http, and their
			// buffers with them: one cause, one finding, at the handler's
			// http.Get.
			{"http-response-body-not-closed", []string{"-mode", "body-not-closed", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "http.Get(*upstream"), min: diagnose.Medium, says: "close every response body"},
			}},
			// A context and its timer are a few hundred bytes: at 400/s the
			// growth takes samples enough to place it within the window.
			{"context-timeout-never-cancelled", []string{"-mode", "timeout-not-cancelled"}, "400", false, []want{
				{id: "leak.*", min: diagnose.Medium, says: "call the cancel function on every path"},
			}},
			// The contexts, timers and their channels grow inside context and
			// time; each finding is the handler's line that makes them.
			{"context-cancel-never-called", []string{"-mode", "cancel-not-called"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "context.WithCancel(background)"), min: diagnose.Medium, says: "call the cancel function when the work is done"},
			}},
			{"time-after-in-select", []string{"-mode", "time-after-in-select"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "<-time.After(time.Hour)"), min: diagnose.Medium, says: "defer t.Stop() instead of time.After"},
			}},
			// A timer and its function are about a hundred bytes: at 1,000/s
			// they grow past the leak threshold within the window.
			{"time-afterfunc-never-stopped", []string{"-mode", "afterfunc-not-stopped"}, "1000", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.AfterFunc(time.Hour"), min: diagnose.Medium, says: "call its Stop when the work it guards ends"},
			}},
			// Tickers and timers made per request and dropped stay in the
			// timer heap under the module's go line, 1.22.
			{"time-tick-in-function", []string{"-mode", "tick-in-handler"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.Tick(10 * time.Second)"), min: diagnose.Medium, says: "make the ticker with t := time.NewTicker(d) and defer t.Stop()"},
			}},
			{"time-newticker-never-stopped", []string{"-mode", "ticker-not-stopped"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.NewTicker(10 * time.Second)"), min: diagnose.Medium, says: "stop every ticker when its loop ends"},
			}},
			{"time-newtimer-never-stopped", []string{"-mode", "timer-not-stopped"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.NewTimer(time.Hour)"), min: diagnose.Medium, says: "stop the timer when the wait ends"},
			}},
			{"context-afterfunc-never-stopped", []string{"-mode", "context-afterfunc-not-stopped"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "context.AfterFunc(background"), min: diagnose.Medium, says: "keep the stop function context.AfterFunc returns"},
			}},
			// Each kept 16-byte sub-slice holds its whole 16 KiB read. The
			// finding is at the read, or at the map that keeps the slices
			// when the samples caught its tables growing: either is the
			// service's line, and the fix is the entry's.
			{"io-readall-kept-whole", []string{"-mode", "readall-subslice", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", min: diagnose.Medium, says: "keep a copy of the part you need"},
			}},
			// The requests wait inside net/http for an audit service that
			// stalls: their goroutines, their connections' goroutines and
			// buffers are one finding, at the call without a timeout.
			{"http-client-without-timeout", []string{"-mode", "client-without-timeout", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, `http.Post(*upstream+"/audit"`), min: diagnose.Medium, says: "give every outgoing request a bound"},
			}},
			// Goroutines blocked for ever in the service's own code: the
			// memory they hold (their structs, what they were writing) is a
			// symptom of the one finding at the line they wait on. The pipes
			// grow the heap as fast as the writers pile up: whichever of
			// the two is rated worse leads, and the memory at a tie.
			{"io-pipe-reader-abandoned", []string{"-mode", "pipe-reader-abandoned"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "fmt.Fprintf(pw,"), min: diagnose.Medium, says: "close the reading end when you stop reading"},
			}},
			{"mutex-never-unlocked", []string{"-mode", "lock-not-released"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "settingsMu.Lock()"), min: diagnose.Medium, says: "unlock on every path"},
			}},
			{"channel-send-never-received", []string{"-mode", "result-never-received", "-upstream", upstream}, "200", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "found <- lookup()"), min: diagnose.Medium, says: "give the channel room for the results nobody may wait for"},
			}},
			{"waitgroup-done-missed", []string{"-mode", "waitgroup-done-missed"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "wg.Wait()"), min: diagnose.Medium, says: "call Done on every path"},
			}},
			{"channel-never-closed", []string{"-mode", "workers-never-released"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "for j := range jobs"), min: diagnose.Medium, says: "close the channel when the last value is sent"},
			}},
			{"cond-waiter-never-woken", []string{"-mode", "cond-never-signalled"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "q.ready.Wait()"), min: diagnose.Medium, says: "wake every waiter with Broadcast"},
			}},
			{"sleep-loop-never-ends", []string{"-mode", "poller-per-request"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "time.Sleep(time.Second)"), min: diagnose.Medium, says: "give it a way to end"},
			}},
			{"net-read-without-deadline", []string{"-mode", "read-without-deadline", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "bufio.NewReader(conn).ReadString"), min: diagnose.Medium, says: "set a deadline before each read"},
			}},
			// Each request's Transport keeps its idle connection, with its
			// goroutines and buffers: one finding, at the request's call.
			{"http-transport-per-request", []string{"-mode", "transport-per-request", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", min: diagnose.Medium, says: "make one http.Client (with its Transport)"},
			}},
			// database/sql on a small driver of the service's: what grows
			// is database/sql's own, with its goroutines.
			{"sql-db-per-request", []string{"-mode", "db-per-request"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, `db, err := sql.Open("inventory"`), min: diagnose.Medium, says: "open the database once when the service starts"},
			}},
			{"sql-tx-never-ended", []string{"-mode", "tx-never-ended"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "tx, err := inventory.BeginTx(background"), min: diagnose.Medium, says: "defer tx.Rollback() right after BeginTx"},
			}},
			{"sql-rows-never-closed", []string{"-mode", "rows-never-closed"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "rows, err := inventory.QueryContext(background"), min: diagnose.Medium, says: "defer rows.Close()"},
			}},
			// The same, on no context: no goroutine waits, the DB keeps the
			// connections.
			{"sql-rows-never-closed, plain Query", []string{"-mode", "rows-never-closed-plain"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, `rows, err := inventory.Query("SELECT sku, count FROM stock")`), min: diagnose.Medium, says: "defer rows.Close()"},
			}},
			{"expvar-map-key-per-request", []string{"-mode", "expvar-key-per-session"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "sessionHits.Add("), min: diagnose.Medium, says: "key expvar maps with bounded values only"},
			}},
			{"signal-notify-context-never-stopped", []string{"-mode", "notify-context-per-request"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "signal.NotifyContext(background"), min: diagnose.Medium, says: "call the stop function"},
			}},
			{"sql-stmt-never-closed", []string{"-mode", "stmt-per-request"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "stmt, err := inventory.Prepare("), min: diagnose.Medium, says: "defer stmt.Close() right after Prepare"},
			}},
			{"sync-map-never-deleted", []string{"-mode", "sync-map-per-request"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "lastVisit.Store(caller"), min: diagnose.Medium, says: "delete each key when what it tracks ends"},
			}},
			// A link and its value are about a hundred bytes: at 1,000/s the
			// chain grows past the leak threshold within the window.
			{"context-value-chain", []string{"-mode", "value-chain"}, "1000", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "tagCtx = context.WithValue(tagCtx"), min: diagnose.Medium, says: "derive per-request values from the request's context"},
			}},
			// Second shapes: the same mistakes in a helper, a middleware, a
			// worker pool or a method. The line to change is the helper's,
			// the middleware's, the worker's or the method's.
			{"http-response-body-not-closed, in a helper", []string{"-mode", "body-not-closed-in-helper", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "res, err := http.Get(*upstream + path)"), min: diagnose.Medium, says: "close every response body"},
			}},
			{"context-cancel-never-called, in a middleware", []string{"-mode", "cancel-not-called-in-middleware"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "scope, _ := context.WithCancel(background)"), min: diagnose.Medium, says: "call the cancel function when the work is done"},
			}},
			{"time-after-in-select, in a worker pool", []string{"-mode", "time-after-in-worker"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "case <-time.After(time.Hour): // idle"), min: diagnose.Medium, says: "defer t.Stop() instead of time.After"},
			}},
			{"channel-send-never-received, in a helper", []string{"-mode", "result-never-received-in-helper", "-upstream", upstream}, "200", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "price <- lookup()"), min: diagnose.Medium, says: "give the channel room for the results nobody may wait for"},
			}},
			{"sql-rows-never-closed, in a helper", []string{"-mode", "rows-never-closed-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "items, err := inventory.QueryContext(background"), min: diagnose.Medium, says: "defer rows.Close()"},
			}},
			{"mutex-never-unlocked, in a method", []string{"-mode", "lock-not-released-in-method"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "s.mu.Lock()"), min: diagnose.Medium, says: "unlock on every path"},
			}},
			{"context-timeout-never-cancelled, in a helper", []string{"-mode", "timeout-not-cancelled-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "bounded, _ := context.WithTimeout(background, d)"), min: diagnose.Medium, says: "call the cancel function on every path"},
			}},
			{"time-afterfunc-never-stopped, in a method", []string{"-mode", "afterfunc-not-stopped-in-method"}, "1000", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "time.AfterFunc(time.Hour, b.expire)"), min: diagnose.Medium, says: "call its Stop when the work it guards ends"},
			}},
			{"time-tick-in-function, in a helper", []string{"-mode", "tick-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "pulse := time.Tick(10 * time.Second)"), min: diagnose.Medium, says: "make the ticker with t := time.NewTicker(d) and defer t.Stop()"},
			}},
			{"time-newticker-never-stopped, in a worker pool", []string{"-mode", "ticker-not-stopped-in-worker"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "progress := time.NewTicker(10 * time.Second)"), min: diagnose.Medium, says: "stop every ticker when its loop ends"},
			}},
			{"time-newtimer-never-stopped, in a middleware", []string{"-mode", "timer-not-stopped-in-middleware"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "limit := time.NewTimer(time.Hour)"), min: diagnose.Medium, says: "stop the timer when the wait ends"},
			}},
			{"context-afterfunc-never-stopped, in a helper", []string{"-mode", "context-afterfunc-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "context.AfterFunc(background, f)"), min: diagnose.Medium, says: "keep the stop function context.AfterFunc returns"},
			}},
			{"io-readall-kept-whole, in a helper", []string{"-mode", "readall-subslice-in-helper", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", min: diagnose.Medium, says: "keep a copy of the part you need"},
			}},
			{"http-client-without-timeout, in a helper", []string{"-mode", "client-without-timeout-in-helper", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, `http.Post(*upstream+"/audit?from=helper"`), min: diagnose.Medium, says: "give every outgoing request a bound"},
			}},
			{"waitgroup-done-missed, in a method", []string{"-mode", "waitgroup-done-missed-in-method"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "a.wg.Wait()"), min: diagnose.Medium, says: "call Done on every path"},
			}},
			{"sleep-loop-never-ends, in a helper", []string{"-mode", "poller-in-helper"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "time.Sleep(2 * time.Second)"), min: diagnose.Medium, says: "give it a way to end"},
			}},
			{"channel-never-closed, in a helper", []string{"-mode", "workers-never-released-in-helper"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "for v := range queue"), min: diagnose.Medium, says: "close the channel when the last value is sent"},
			}},
			{"expvar-map-key-per-request, in a middleware", []string{"-mode", "expvar-key-in-middleware"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "visitorHits.Add("), min: diagnose.Medium, says: "key expvar maps with bounded values only"},
			}},
			{"sync-map-never-deleted, in a middleware", []string{"-mode", "sync-map-in-middleware"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "seenAt.Store("), min: diagnose.Medium, says: "delete each key when what it tracks ends"},
			}},
			{"signal-notify-context-never-stopped, in a helper", []string{"-mode", "notify-context-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "signal.NotifyContext(background, syscall.SIGTERM, syscall.SIGINT)"), min: diagnose.Medium, says: "call the stop function"},
			}},
			{"sql-stmt-never-closed, in a method", []string{"-mode", "stmt-per-request-in-method"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "query, err := s.db.Prepare("), min: diagnose.Medium, says: "defer stmt.Close() right after Prepare"},
			}},
			{"sql-tx-never-ended, in a helper", []string{"-mode", "tx-never-ended-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "reservation, err := inventory.BeginTx(background"), min: diagnose.Medium, says: "defer tx.Rollback() right after BeginTx"},
			}},
			{"sql-db-per-request, in a helper", []string{"-mode", "db-per-request-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, `return sql.Open("inventory", "")`), min: diagnose.Medium, says: "open the database once when the service starts"},
			}},
			{"context-value-chain, in a middleware", []string{"-mode", "value-chain-in-middleware"}, "1000", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "chainCtx = context.WithValue(chainCtx"), min: diagnose.Medium, says: "derive per-request values from the request's context"},
			}},
			{"http-transport-per-request, in a helper", []string{"-mode", "transport-per-request-in-helper", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", min: diagnose.Medium, says: "make one http.Client (with its Transport)"},
			}},
			{"net-read-without-deadline, in a helper", []string{"-mode", "read-without-deadline-in-helper", "-upstream", upstream}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "reply, err := bufio.NewReader(c).ReadString"), min: diagnose.Medium, says: "set a deadline before each read"},
			}},
			{"io-pipe-reader-abandoned, in a helper", []string{"-mode", "pipe-reader-abandoned-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, `fmt.Fprintf(out, "entry`), min: diagnose.Medium, says: "close the reading end when you stop reading"},
			}},
			{"cond-waiter-never-woken, in a helper", []string{"-mode", "cond-never-signalled-in-helper"}, "400", false, []want{
				{id: "leak.goroutine-growth", file: "main.go", line: lineOf(t, src, "b.cond.Wait()"), min: diagnose.Medium, says: "wake every waiter with Broadcast"},
			}},
			// Fixed twins: each misuse's handler with the catalogue's fix,
			// under the same load, must stay quiet.
			{"body-closed", []string{"-mode", "body-closed", "-upstream", upstream}, "100", true, nil},
			{"timeout-cancelled", []string{"-mode", "timeout-cancelled"}, "400", true, nil},
			{"cancel-called", []string{"-mode", "cancel-called"}, "400", true, nil},
			{"timer-stopped-in-select", []string{"-mode", "timer-stopped-in-select"}, "400", true, nil},
			{"afterfunc-stopped", []string{"-mode", "afterfunc-stopped"}, "1000", true, nil},
			{"ticker-stopped", []string{"-mode", "ticker-stopped"}, "400", true, nil},
			{"timer-stopped", []string{"-mode", "timer-stopped"}, "400", true, nil},
			{"result-buffered", []string{"-mode", "result-buffered", "-upstream", upstream}, "200", true, nil},
			{"workers-released", []string{"-mode", "workers-released"}, "400", true, nil},
			{"pipe-reader-closed", []string{"-mode", "pipe-reader-closed"}, "400", true, nil},
			{"lock-released", []string{"-mode", "lock-released"}, "400", true, nil},
			{"client-with-timeout", []string{"-mode", "client-with-timeout", "-upstream", upstream}, "100", true, nil},
			{"value-per-request", []string{"-mode", "value-per-request"}, "1000", true, nil},
			{"context-afterfunc-stopped", []string{"-mode", "context-afterfunc-stopped"}, "400", true, nil},
			{"readall-copied", []string{"-mode", "readall-copied", "-upstream", upstream}, "100", true, nil},
			{"waitgroup-done-deferred", []string{"-mode", "waitgroup-done-deferred"}, "400", true, nil},
			{"cond-broadcast", []string{"-mode", "cond-broadcast"}, "400", true, nil},
			{"transport-shared", []string{"-mode", "transport-shared", "-upstream", upstream}, "100", true, nil},
			{"db-shared", []string{"-mode", "db-shared"}, "400", true, nil},
			{"tx-rolled-back", []string{"-mode", "tx-rolled-back"}, "400", true, nil},
			{"rows-closed", []string{"-mode", "rows-closed"}, "400", true, nil},
			{"poller-ends", []string{"-mode", "poller-ends"}, "400", true, nil},
			{"expvar-key-bounded", []string{"-mode", "expvar-key-bounded"}, "400", true, nil},
			{"read-with-deadline", []string{"-mode", "read-with-deadline", "-upstream", upstream}, "100", true, nil},
			{"notify-context-stopped", []string{"-mode", "notify-context-stopped"}, "400", true, nil},
			{"stmt-closed", []string{"-mode", "stmt-closed"}, "400", true, nil},
			{"sync-map-bounded", []string{"-mode", "sync-map-bounded"}, "400", true, nil},
		}
	},
}

// moduleMisuses are the catalogue's misuses of public modules, on a
// service built on them at real versions from the module proxy, each
// beside its fixed twin.
var moduleMisuses = misuseSuite{
	test:   "TestProfile_ModuleMisusesOnRealRuns",
	source: "modmisuses",
	module: "example.com/modmisusesvc",
	require: []string{
		"github.com/prometheus/client_golang v1.25.0",
		"google.golang.org/grpc v1.82.1",
		"golang.org/x/sync v0.25.0",
		"golang.org/x/time v0.16.0",
		"github.com/patrickmn/go-cache v2.1.0+incompatible",
		"github.com/sirupsen/logrus v1.10.2",
		"github.com/robfig/cron/v3 v3.0.1",
		"github.com/hashicorp/golang-lru/v2 v2.0.7",
		"github.com/dgraph-io/ristretto/v2 v2.4.2",
	},
	upstreamMode: "grpc-upstream",
	load:         "GET /?user=u{seq}",
	slots:        2,
	cases: func(t *testing.T, src []byte, upstream string) []misuseCase {
		grpcTarget := strings.TrimPrefix(upstream, "http://")
		return []misuseCase{
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
			// Second shapes: the same mistakes in a middleware and a helper.
			{"prometheus-label-per-request, in a middleware", []string{"-mode", "metric-label-in-middleware"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "pageViews.WithLabelValues(r.URL.Path"), min: diagnose.Medium, says: "label with bounded values only"},
			}},
			{"errgroup-never-waited, in a helper", []string{"-mode", "errgroup-never-waited-in-helper"}, "1000", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "audits, actx := errgroup.WithContext(background)"), min: diagnose.Medium, says: "call g.Wait() for every group"},
			}},
			{"grpc-client-per-request, in a method", []string{"-mode", "grpc-client-in-method", "-upstream", grpcTarget}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "conn, err := grpc.NewClient(h.target"), min: diagnose.Medium, says: "make one grpc.ClientConn per target"},
			}},
			{"grpc-stream-never-ended, in a helper", []string{"-mode", "grpc-stream-in-helper", "-upstream", grpcTarget}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "s, err := client.Watch(background"), min: diagnose.Medium, says: "cancel the stream's context when you are done with it"},
			}},
			// The callers waiting in the method's Do are the service's
			// own frames on the piling goroutines: the Do is the line,
			// and the fix bounds the function passed to it.
			{"singleflight-call-hangs, in a method", []string{"-mode", "singleflight-in-method"}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, `c.refreshes.Do("catalogue"`), min: diagnose.Medium, says: "give the function passed to Do a bound"},
			}},
			{"semaphore-slot-never-released, in a helper", []string{"-mode", "semaphore-in-helper"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "if err := thumbSlots.Acquire(background, 1); err != nil {"), min: diagnose.Medium, says: "defer sem.Release(n) right after a successful Acquire"},
			}},
			{"go-cache-without-janitor, in a middleware", []string{"-mode", "cache-without-janitor-in-middleware"}, "1000", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "visits.Set(r.URL.Query()"), min: diagnose.Medium, says: "give the cache a cleanup interval"},
			}},
			{"logrus-hook-per-request, in a middleware", []string{"-mode", "logrus-hook-in-middleware"}, "400", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "logger.AddHook(&userHook{user: caller})"), min: diagnose.Medium, says: "add hooks once, when the logger is set up"},
			}},
			{"cron-job-per-request, in a helper", []string{"-mode", "cron-job-in-helper"}, "1000", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, `return reminders.AddFunc("@every 2h"`), min: diagnose.Medium, says: "call Remove(id) when the job is no longer wanted"},
			}},
			{"rate-limiter-per-client-never-evicted, in a method", []string{"-mode", "limiter-in-method"}, "1000", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "b.byClient[client] = l"), min: diagnose.Medium, says: "keep the limiters in a cache that evicts"},
			}},
			{"expirable-lru-per-call, in a helper", []string{"-mode", "lru-in-helper"}, "100", false, []want{
				{id: "leak.*", file: "main.go", min: diagnose.Medium, says: "make the expirable LRU once and share it"},
			}},
			{"ristretto-cache-never-closed, in a method", []string{"-mode", "ristretto-in-method"}, "100", false, []want{
				{id: "leak.*", file: "main.go", line: lineOf(t, src, "return ristretto.NewCache(&ristretto.Config[string, string]{NumCounters: 2000"), min: diagnose.Medium, says: "make the cache once when the service starts"},
			}},
		}
	},
}
