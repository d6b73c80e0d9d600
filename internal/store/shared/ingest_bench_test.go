package shared_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // the embedded store's index, read for its size and rows

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/testserver/pgtest"
	"github.com/heapscope/heapscope/internal/testserver/s3test"
	"github.com/heapscope/heapscope/internal/watch"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// The ingest benchmarks' settings; bench/ingest.sh sets them
// (go test … -args -ingest.window=30s).
var (
	ingestRun = flag.String("ingest.run", "",
		"the ingest benchmarks: a stored run `directory` to commit again and again (default: one captured in the setup, as watch captures)")
	ingestWindow = flag.Duration("ingest.window", 5*time.Second,
		"the ingest benchmarks: the window of the capture made in the setup (watch's default is 30s)")
	ingestDurable = flag.Bool("ingest.durable", true,
		"the ingest benchmarks: PostgreSQL with fsync and synchronous commits on, as in production (the tests' cluster has them off)")
	ingestTargets = flag.Int("ingest.targets", 10000,
		"the ingest benchmarks: targets the captures are spread over, each captured every 15 minutes")
	ingestCommitters = flag.String("ingest.committers", "1,8,32",
		"the ingest benchmarks: the numbers of goroutines committing at once, comma-separated")
	ingestCheckpoint = flag.Duration("ingest.checkpoint", 0,
		"the ingest benchmarks: run a PostgreSQL CHECKPOINT this often while committing, so that the WAL holds the full-page writes a production server's checkpoints cause (0: leave them to PostgreSQL)")
	ingestCount = flag.Bool("ingest.count", true,
		"the ingest benchmarks: count the S3 requests through a proxy (false: the store talks to the S3 server directly, and the client's CPU time leaves the proxy's out)")
)

// exampleEnv makes the test binary serve a bundled example, as `heapscope
// serve-example NAME` does: the ingest benchmarks capture a real service
// in a process of its own.
const exampleEnv = "HEAPSCOPE_SHARED_TEST_EXAMPLE"

// runFiles is a run directory held in memory: its files' bytes by their
// slash-separated paths in it, without the store's entry.json (Commit
// writes it).
type runFiles map[string][]byte

func (r runFiles) bytes() int64 {
	var n int64
	for _, data := range r {
		n += int64(len(data))
	}
	return n
}

// profiles counts the pprof files of a run.
func (r runFiles) profiles() int {
	n := 0
	for name := range r {
		if strings.HasPrefix(name, "profiles/") {
			n++
		}
	}
	return n
}

// write writes the run into dir, as a capture writes it.
func (r runFiles) write(dir string) error {
	for name, data := range r {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func readRun(dir string) (runFiles, error) {
	files := runFiles{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == store.EntryFile {
			return nil
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the run %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("read the run %s: no files", dir)
	}
	return files, nil
}

var captured struct {
	once  sync.Once
	files runFiles
	err   error
}

// benchRun returns the run the ingest benchmarks commit: -ingest.run's,
// or one made once per test binary as a watcher makes a scheduled capture
// (watch.Once, with watch's default settings and profiles but the
// window, into an embedded store) of the leaky example in a process of
// its own, under 400 requests a second from the window's start.
func benchRun(b *testing.B) runFiles {
	b.Helper()
	captured.once.Do(func() {
		if *ingestRun != "" {
			captured.files, captured.err = readRun(*ingestRun)
			return
		}
		captured.files, captured.err = captureLeaky(*ingestWindow)
	})
	if captured.err != nil {
		b.Fatal(captured.err)
	}
	return captured.files
}

func captureLeaky(window time.Duration) (runFiles, error) {
	ctx := context.Background()
	os.Setenv(exampleEnv, "leaky")
	svc, err := examples.Start(ctx, "leaky", os.Args[0], "-addr", "127.0.0.1:0")
	os.Unsetenv(exampleEnv)
	if err != nil {
		return nil, err
	}
	defer svc.Stop()
	method, path := examples.DefaultLoad("leaky")
	req, err := load.ParseRequestOn(method+" "+path, svc.URL)
	if err != nil {
		return nil, err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan error, 1)
	go func() {
		_, err := load.Run(loadCtx, load.Options{Targets: []load.Request{req}, Rate: 400, Duration: window + 10*time.Minute})
		loaded <- err
	}()
	defer func() {
		stopLoad()
		<-loaded
	}()
	dir, err := os.MkdirTemp("", "heapscope-ingest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	cfg, err := config.ForURLs([]string{svc.URL}, config.Settings{Window: window})
	if err != nil {
		return nil, err
	}
	w, err := watch.New(watch.Options{Config: cfg, Store: st, Version: "bench", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if err := w.Once(ctx); err != nil {
		return nil, fmt.Errorf("capture the leaky example: %w", err)
	}
	h, err := st.History(store.Query{})
	if err != nil {
		return nil, err
	}
	if len(h.Runs) != 1 {
		return nil, fmt.Errorf("capture the leaky example: %d runs stored, want 1", len(h.Runs))
	}
	runDir, err := st.RunDir(ctx, h.Runs[0])
	if err != nil {
		return nil, err
	}
	return readRun(runDir)
}

// s3Counter is a reverse proxy in front of the S3 server that counts the
// requests through it by operation, and the bytes of the objects put:
// the shared store is pointed at it as at any endpoint, so it needs no
// hook of its own.
type s3Counter struct {
	srv       *httptest.Server
	transport *http.Transport
	mu        sync.Mutex
	requests  map[string]int64
	putBytes  int64
	// conns counts the connections the store opened to it.
	conns int64
}

func newS3Counter(b *testing.B, endpoint string) *s3Counter {
	b.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		b.Fatal(err)
	}
	c := &s3Counter{requests: map[string]int64{}, transport: http.DefaultTransport.(*http.Transport).Clone()}
	c.transport.MaxIdleConnsPerHost = 64
	proxy := httputil.NewSingleHostReverseProxy(u) // keeps the Host the client signed
	proxy.Transport = c.transport
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := s3Operation(r)
		c.mu.Lock()
		c.requests[op]++
		if op == "PUT" {
			n := r.ContentLength
			// A streamed, checksummed upload's length on the wire
			// includes its chunk framing.
			if d, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64); err == nil {
				n = d
			}
			c.putBytes += n
		}
		c.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	c.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			c.mu.Lock()
			c.conns++
			c.mu.Unlock()
		}
	}
	c.srv.Start()
	b.Cleanup(func() {
		c.srv.Close()
		c.transport.CloseIdleConnections()
	})
	return c
}

// s3Operation names a request's S3 operation as priced: PUT, GET, LIST,
// HEAD, DELETE (a multi-object delete) or another method.
func s3Operation(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && q.Has("list-type"):
		return "LIST"
	case r.Method == http.MethodPost && q.Has("delete"):
		return "DELETE"
	}
	return r.Method
}

// snapshot returns the requests counted so far by operation, with the
// connections under "conns", and the bytes put; nothing without a
// counter.
func (c *s3Counter) snapshot() (map[string]int64, int64) {
	if c == nil {
		return nil, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.requests {
		out[k] = v
	}
	out["conns"] = c.conns
	return out, c.putBytes
}

// rig is a store under measurement, with what it is measured by.
type rig struct {
	store.Store
	// s3 counts the shared store's requests; nil for the embedded one.
	s3 *s3Counter
	// pool reads the shared store's database; db the embedded store's
	// index.
	pool *pgxpool.Pool
	db   *sql.DB
	// pgPID and s3PID are the servers' processes, for their CPU time.
	pgPID, s3PID int
}

// benchCluster is the PostgreSQL cluster of the ingest benchmarks: a
// durable one of their own (-ingest.durable), or the tests' shared one.
func benchCluster(b *testing.B) *pgtest.Server {
	b.Helper()
	if !*ingestDurable {
		return pgtest.Shared(b)
	}
	s, err := pgtest.StartClusterWith(pgtest.Options{Durable: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Stop(); err != nil {
			b.Error(err)
		}
	})
	return s
}

// openRig opens a fresh, empty store of a kind: "shared" (a new database
// of pg and a new bucket of the tests' S3 server, through a counting
// proxy) or "embedded" (a new data directory).
func openRig(b *testing.B, kind string, pg *pgtest.Server) *rig {
	b.Helper()
	if kind == "embedded" {
		dir := b.TempDir()
		s, err := store.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, store.IndexFile)+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			db.Close()
			if err := s.Close(); err != nil {
				b.Error(err)
			}
		})
		return &rig{Store: s, db: db}
	}
	srv := s3test.Shared(b)
	b.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	endpoint := srv.Endpoint
	var counter *s3Counter
	if *ingestCount {
		counter = newS3Counter(b, srv.Endpoint)
		endpoint = counter.srv.URL
	}
	o := shared.Objects{Bucket: srv.NewBucket(b), Prefix: "heapscope", Endpoint: endpoint, Region: srv.Region, PathStyle: true}
	s, err := shared.Open(context.Background(), shared.Options{Postgres: pg.NewDatabase(b), Objects: o, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return &rig{Store: s, s3: counter, pool: s.Pool(), pgPID: pg.PID(), s3PID: srv.PID()}
}

// usage is what a rig has used so far.
type usage struct {
	// self is this process's CPU time (the store's client, and the S3
	// proxy); pg the PostgreSQL cluster's processes'; s3 the S3
	// server's. The machine's own total would count whatever else runs
	// on it.
	self, pg, s3 time.Duration
	// wal is PostgreSQL's WAL position, in bytes.
	wal int64
	// dbBytes is the size of the tables a capture adds rows to, with
	// their indexes; rows counts those rows.
	dbBytes, rows int64
	requests      map[string]int64
	putBytes      int64
}

// captureTables returns the tables a capture adds rows to (targets
// grows with new targets alone; problems with new problems, and findings
// with the series' findings alone, but their bytes count).
func (r *rig) captureTables() []string {
	if r.pool != nil {
		return []string{"entries", "problems", "sightings", "findings", "points", "names"}
	}
	return []string{"entries", "labels", "problems", "sightings", "findings", "points"}
}

// usageBefore and usageAfter read what the rig has used before and after
// a measure: the CPU times nearest to it, the counts of rows further.
func (r *rig) usageBefore(b *testing.B) usage {
	u := r.stored(b)
	r.cpu(&u)
	return u
}

func (r *rig) usageAfter(b *testing.B) usage {
	var u usage
	r.cpu(&u)
	s := r.stored(b)
	s.self, s.pg, s.s3 = u.self, u.pg, u.s3
	return s
}

func (r *rig) cpu(u *usage) {
	u.self = selfCPU()
	if r.pool != nil {
		u.pg, u.s3 = processCPU(r.pgPID, true), processCPU(r.s3PID, false)
	}
}

// stored reads what the store holds, and the requests it made.
func (r *rig) stored(b *testing.B) usage {
	b.Helper()
	ctx := context.Background()
	var u usage
	tables := r.captureTables()
	if r.pool != nil {
		u.requests, u.putBytes = r.s3.snapshot()
		sizes, counts := make([]string, len(tables)), make([]string, len(tables))
		for i, t := range tables {
			sizes[i] = fmt.Sprintf("pg_total_relation_size('%s')", t)
			counts[i] = fmt.Sprintf("(SELECT COUNT(*) FROM %s)", t)
		}
		err := r.pool.QueryRow(ctx, "SELECT "+strings.Join(sizes, " + ")+", "+strings.Join(counts, " + ")+
			", pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::BIGINT").Scan(&u.dbBytes, &u.rows, &u.wal)
		if err != nil {
			b.Fatal(err)
		}
		return u
	}
	// The embedded index's size as SQLite sees it: its pages, those
	// still in the WAL included.
	var pages, pageSize int64
	if err := r.db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		b.Fatal(err)
	}
	if err := r.db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		b.Fatal(err)
	}
	u.dbBytes = pages * pageSize
	for _, t := range tables {
		var n int64
		if err := r.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&n); err != nil {
			b.Fatal(err)
		}
		u.rows += n
	}
	return u
}

// checkpoints runs a CHECKPOINT in the shared store's database every
// period until the function it returns is called; nothing for the
// embedded store or a zero period. After a checkpoint, the first change
// to each page writes the whole page to the WAL: a watch revisits each
// target's pages once a cadence, 15 minutes, and PostgreSQL checkpoints
// every 5 minutes by default, so in production nearly every page a
// capture changes is written whole.
func (r *rig) checkpoints(b *testing.B, period time.Duration) (stop func()) {
	if r.pool == nil || period <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if _, err := r.pool.Exec(context.Background(), "CHECKPOINT"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// logTables logs the rows and bytes of each table a capture adds rows
// to, with its indexes.
func (r *rig) logTables(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	var parts []string
	for _, t := range r.captureTables() {
		var rows, size int64
		var err error
		if r.pool != nil {
			err = r.pool.QueryRow(ctx, fmt.Sprintf("SELECT COUNT(*), pg_total_relation_size('%s') FROM %s", t, t)).Scan(&rows, &size)
		} else {
			// The pages of the table and of its indexes, from SQLite's
			// dbstat table.
			err = r.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT (SELECT COUNT(*) FROM %s),
				(SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = '%s'))`,
				t, t)).Scan(&rows, &size)
		}
		if err != nil {
			b.Logf("%s: %v", t, err)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d rows %d bytes", t, rows, size))
	}
	b.Logf("%s: %s", b.Name(), strings.Join(parts, ", "))
}

// report reports, per capture, what the rig used between two usages
// for n captures.
func (r *rig) report(b *testing.B, from, to usage, n int) {
	per := func(x float64) float64 { return x / float64(n) }
	ms := func(d time.Duration) float64 { return per(float64(d) / float64(time.Millisecond)) }
	b.ReportMetric(per(float64(to.rows-from.rows)), "rows/capture")
	b.ReportMetric(per(float64(to.dbBytes-from.dbBytes)), "db-B/capture")
	b.ReportMetric(ms(to.self-from.self), "client-cpu-ms/capture")
	if r.pool == nil {
		return
	}
	b.ReportMetric(per(float64(to.wal-from.wal)), "wal-B/capture")
	if to.pg > 0 {
		b.ReportMetric(ms(to.pg-from.pg), "pg-cpu-ms/capture")
		b.ReportMetric(ms(to.s3-from.s3), "s3-cpu-ms/capture")
	}
	if r.s3 != nil {
		reportRequests(b, from.requests, to.requests, n, "capture")
		b.ReportMetric(per(float64(to.putBytes-from.putBytes)), "put-B/capture")
	}
}

// reportRequests reports the S3 requests between two snapshots, per
// one of n units: each operation that had some, all of them (s3-req),
// and the connections opened (conns).
func reportRequests(b *testing.B, from, to map[string]int64, n int, unit string) {
	var total int64
	for op, v := range to {
		d := v - from[op]
		if op != "conns" {
			total += d
		}
		if d > 0 {
			b.ReportMetric(float64(d)/float64(n), op+"/"+unit)
		}
	}
	b.ReportMetric(float64(total)/float64(n), "s3-req/"+unit)
}

// ticksToDuration converts clock ticks: USER_HZ is 100 on Linux.
func ticksToDuration(ticks int64) time.Duration { return time.Duration(ticks) * 10 * time.Millisecond }

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPU returns the CPU time of a process, and with children of the
// processes whose parent it is (a PostgreSQL cluster's backends).
func processCPU(pid int, children bool) time.Duration {
	dirs := []string{strconv.Itoa(pid)}
	if children {
		all, _ := filepath.Glob("/proc/[0-9]*")
		dirs = dirs[:0]
		for _, d := range all {
			dirs = append(dirs, filepath.Base(d))
		}
	}
	var ticks int64
	for _, d := range dirs {
		data, err := os.ReadFile("/proc/" + d + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid … utime stime: the fields after comm,
		// which may hold spaces.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 13 {
			continue
		}
		if d != strconv.Itoa(pid) && f[1] != strconv.Itoa(pid) {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	return ticksToDuration(ticks)
}

// benchStart is the time of the first slot the benchmarks commit.
var benchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchTarget returns the key of the benchmarks' target number i.
func benchTarget(i int) string {
	return fmt.Sprintf("http://10.%d.%d.%d:6060", i>>16&255, i>>8&255, i&255)
}

// benchLabels are the labels each capture carries, as a pod's would.
var benchLabels = map[string]string{"env": "prod", "namespace": "checkout", "app": "cart", "team": "payments"}

// commitAll commits captures first … first+n-1 of run into s from
// committers goroutines at once, capture i being target i mod targets's
// slot i / targets (every 15 minutes from benchStart), and returns each
// commit's latency. It stops the benchmark at the first error.
func commitAll(b *testing.B, s store.Store, run runFiles, first, n, committers int) []time.Duration {
	b.Helper()
	targets := *ingestTargets
	var next atomic.Int64
	next.Store(int64(first))
	lat := make([][]time.Duration, committers)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for w := range committers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= first+n {
					return
				}
				t0 := time.Now()
				p, err := s.Begin(store.KindRun, benchTarget(i%targets))
				if err == nil {
					err = run.write(p.Dir())
				}
				if err == nil {
					_, err = p.Commit(p.Dir(), store.Entry{Time: benchStart.Add(time.Duration(i/targets) * 15 * time.Minute),
						Scheduled: true, Labels: benchLabels})
				}
				if err != nil {
					p.Abandon()
					if failed.CompareAndSwap(false, true) {
						b.Error(err)
					}
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		b.FailNow()
	}
	return slices.Concat(lat...)
}

// committersList parses -ingest.committers.
func committersList(b *testing.B) []int {
	b.Helper()
	var out []int
	for f := range strings.SplitSeq(*ingestCommitters, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("-ingest.committers=%q: want numbers ≥ 1, comma-separated", *ingestCommitters)
		}
		out = append(out, n)
	}
	return out
}

func quantile(lat []time.Duration, q float64) float64 {
	slices.Sort(lat)
	return float64(lat[min(int(q*float64(len(lat))), len(lat)-1)]) / float64(time.Millisecond)
}

// BenchmarkIngest commits captures as a watch does, into a fresh store
// of each backend (the shared one on PostgreSQL and versitygw on this
// machine; the embedded one beside it, the reference) from 1, 8 and 32
// goroutines at once (-ingest.committers): each capture a copy of one
// real run (benchRun) written into a Begin's directory, then committed.
// Besides the time a capture it reports per capture: captures/s, the
// latency's p50 and p99, the run's bytes, the rows indexed and the bytes
// they take with their indexes, the CPU time of the client (this process:
// the store, and for the shared store the counting S3 proxy), and for the
// shared store the CPU time of PostgreSQL and of the S3 server, its WAL
// bytes and its S3 requests by operation.
func BenchmarkIngest(b *testing.B) {
	run := benchRun(b)
	pg := benchCluster(b)
	var files []string
	for name, data := range run {
		files = append(files, fmt.Sprintf("%s %d", name, len(data)))
	}
	slices.Sort(files)
	dir := b.TempDir()
	if err := run.write(dir); err != nil {
		b.Fatal(err)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("each capture: %d files (%d profiles), %d bytes: %s; %d findings, %d series points; PostgreSQL durable: %v",
		len(run), run.profiles(), run.bytes(), strings.Join(files, ", "), len(res.Findings), len(store.SeriesOf(res)), *ingestDurable)
	for _, kind := range []string{"embedded", "shared"} {
		for _, n := range committersList(b) {
			b.Run(fmt.Sprintf("store=%s/committers=%d", kind, n), func(b *testing.B) {
				r := openRig(b, kind, pg)
				// One capture first, so that the measure starts past
				// the store's first write.
				commitAll(b, r, run, 0, 1, 1)
				from := r.usageBefore(b)
				b.ReportAllocs()
				b.ResetTimer()
				stop := r.checkpoints(b, *ingestCheckpoint)
				t0 := time.Now()
				lat := commitAll(b, r, run, 1, b.N, n)
				elapsed := time.Since(t0)
				stop()
				b.StopTimer()
				to := r.usageAfter(b)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "captures/s")
				b.ReportMetric(quantile(lat, 0.5), "p50-ms")
				b.ReportMetric(quantile(lat, 0.99), "p99-ms")
				b.ReportMetric(float64(run.bytes()), "run-B/capture")
				r.report(b, from, to, b.N)
				r.logTables(b)
			})
		}
	}
}

// BenchmarkRunDir reads runs back from the shared store as a server
// does the first time (RunDir into an empty cache: a LIST of the run's
// prefix, a GET of each object), from a second store over the same
// database and bucket. It reports reads/s and S3 requests a read.
func BenchmarkRunDir(b *testing.B) {
	run := benchRun(b)
	pg := benchCluster(b)
	r := openRig(b, "shared", pg)
	commitAll(b, r, run, 0, b.N, 8)
	h, err := r.History(store.Query{})
	if err != nil {
		b.Fatal(err)
	}
	if len(h.Runs) != b.N {
		b.Fatalf("%d runs stored, want %d", len(h.Runs), b.N)
	}
	reader, err := shared.Open(context.Background(), shared.Options{Postgres: r.pool.Config().ConnString(),
		Objects: r.Store.(*shared.Store).Objects(), CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer reader.Close()
	before, _ := r.s3.snapshot()
	cpu := selfCPU()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for _, e := range h.Runs {
		t := time.Now()
		if _, err := reader.RunDir(context.Background(), e); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	elapsed := time.Since(t0)
	cpu = selfCPU() - cpu
	b.StopTimer()
	after, _ := r.s3.snapshot()
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "client-cpu-ms/read")
	if r.s3 != nil {
		reportRequests(b, before, after, b.N, "read")
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reads/s")
	b.ReportMetric(quantile(lat, 0.5), "p50-ms")
	b.ReportMetric(quantile(lat, 0.99), "p99-ms")
}

// BenchmarkRetain removes runs past their age, as a watcher's hourly
// retention does: b.N captures committed (not timed), then one Retain
// that removes them all. It reports runs removed a second and, for the
// shared store, S3 requests and WAL bytes per run removed.
func BenchmarkRetain(b *testing.B) {
	run := benchRun(b)
	pg := benchCluster(b)
	for _, kind := range []string{"embedded", "shared"} {
		b.Run("store="+kind, func(b *testing.B) {
			r := openRig(b, kind, pg)
			commitAll(b, r, run, 0, b.N, 8)
			from := r.usageBefore(b)
			// Past every slot committed: all of them are older than a day.
			now := benchStart.Add(time.Duration(b.N / *ingestTargets + 1) * 15 * time.Minute).Add(24 * time.Hour)
			b.ReportAllocs()
			b.ResetTimer()
			t0 := time.Now()
			removed, err := r.Retain(store.Retention{MaxAge: 24 * time.Hour, Now: now})
			elapsed := time.Since(t0)
			b.StopTimer()
			if err != nil || removed != b.N {
				b.Fatalf("Retain: %d removed, %v; want %d", removed, err, b.N)
			}
			to := r.usageAfter(b)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
			if r.pool == nil {
				return
			}
			b.ReportMetric(float64(to.wal-from.wal)/float64(b.N), "wal-B/run")
			if r.s3 != nil {
				reportRequests(b, from.requests, to.requests, b.N, "run")
			}
		})
	}
}
