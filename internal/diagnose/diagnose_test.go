package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

var (
	t0        = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	cacheAdd  = fn{"example.com/svc/cache.(*Cache).Put", "/src/svc/cache/cache.go", 42}
	handler   = fn{"example.com/svc/api.(*Server).get", "/src/svc/api/api.go", 17}
	lruInsert = fn{"example.com/svc/lru.(*LRU).Add", "/src/svc/lru/lru.go", 30}
	warm      = fn{"example.com/svc/boot.load", "/src/svc/boot/boot.go", 9}
	httpRead  = fn{"net/http.(*conn).readRequest", "/go/src/net/http/server.go", 1043}
)

// heapSeriesOf builds one heap snapshot per minute; inuse gives the
// inuse_space of each function at snapshot i. alloc totals grow by 10
// MiB a minute.
func heapSeriesOf(n int, inuse map[fn]func(i int) int64) []Profile {
	var out []Profile
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Minute)
		h := newHeap(at, 512)
		alloc := int64(i+1) * 10 << 20
		h.sample([4]int64{alloc / 64, alloc, 0, 0}, httpRead)
		for f, v := range inuse {
			y := v(i)
			h.sample([4]int64{y / 64, y, y / 64, y}, f, handler)
		}
		out = append(out, Profile{Name: fmt.Sprintf("heap-%03d", i), Time: at, Profile: h.build()})
	}
	return out
}

func findingsWith(fs []result.Finding, id string) []result.Finding {
	var out []result.Finding
	for _, f := range fs {
		if f.ID == id {
			out = append(out, f)
		}
	}
	return out
}

func TestRun_leakGrowth(t *testing.T) {
	noise := []int64{0, 9000, -7000, 4000, -3000, 8000, -5000, 1000}
	in := Input{Heap: heapSeriesOf(8, map[fn]func(int) int64{
		// 1 MiB a minute: a leak, high.
		cacheAdd: func(i int) int64 { return 4<<20 + int64(i)<<20 },
		// A cache that evicts: up and down.
		lruInsert: func(i int) int64 { return 2<<20 + int64(i%2)*(3<<20) },
		// Warm-up, then flat.
		warm: func(i int) int64 { return min(int64(i), 1) * 8 << 20 },
		// Noise around 1 MiB.
		handler: func(i int) int64 { return 1<<20 + noise[i] },
	})}
	rep := Run(in)
	leaks := findingsWith(rep.Findings, "leak.inuse-growth")
	if len(leaks) != 1 {
		t.Fatalf("leak findings %+v, want one at the cache; notes %v", leaks, rep.Notes)
	}
	f := leaks[0]
	if f.Function != cacheAdd.name || f.Line != cacheAdd.line || f.File != cacheAdd.file {
		t.Errorf("leak at %s %s:%d, want %+v", f.Function, f.File, f.Line, cacheAdd)
	}
	if got := f.Evidence["slope_bytes_per_minute"]; math.Abs(got-(1<<20)) > 1 {
		t.Errorf("slope %.0f B/min, want 1 MiB/min", got)
	}
	if f.Evidence["r2"] < 0.999 || f.Severity != "high" {
		t.Errorf("R² %.3f severity %s, want 1 and high", f.Evidence["r2"], f.Severity)
	}
	if !strings.Contains(f.Title, "cache.(*Cache).Put (cache/cache.go:42)") {
		t.Errorf("title %q does not name the site", f.Title)
	}
}

func TestRun_leakTimeToLimit(t *testing.T) {
	run := &result.Run{RSS: result.RSS{Source: "proc", RSSBytes: 100 << 20,
		Cgroup: &result.Cgroup{LimitBytes: 1 << 30, UsageBytes: 1<<30 - 120<<20}}}
	// 20 KiB a minute is low by itself; 120 MiB of headroom lasts
	// 6144 minutes, 4.3 days: medium.
	in := Input{Run: run, Heap: heapSeriesOf(5, map[fn]func(int) int64{
		cacheAdd: func(i int) int64 { return 1<<20 + int64(i)*20<<10 },
	})}
	leaks := findingsWith(Run(in).Findings, "leak.inuse-growth")
	if len(leaks) != 1 {
		t.Fatalf("leak findings %+v", leaks)
	}
	if h := leaks[0].Evidence["hours_to_limit"]; math.Abs(h-6144.0/60) > 0.01 || leaks[0].Severity != "medium" {
		t.Errorf("hours to limit %.2f severity %s, want %.2f and medium", h, leaks[0].Severity, 6144.0/60)
	}
}

func TestRun_leakNeedsOneProcessAndEnoughSnapshots(t *testing.T) {
	grow := map[fn]func(int) int64{cacheAdd: func(i int) int64 { return int64(i+1) << 20 }}
	restarted := heapSeriesOf(4, grow)
	// The third snapshot's process restarted: its alloc totals are
	// smaller than the second's.
	restarted[2] = heapSeriesOf(1, grow)[0]
	restarted[2].Time, restarted[2].Name = t0.Add(2*time.Minute), "heap-002"
	swapped := heapSeriesOf(4, grow)
	swapped[1].Time, swapped[2].Time = swapped[2].Time, swapped[1].Time
	tests := []struct {
		name string
		heap []Profile
		note string
	}{
		{"a series of one", heapSeriesOf(1, grow), "one heap profile: allocations are counted since the process started"},
		{"a series of two", heapSeriesOf(2, grow), "2 heap snapshot(s), it needs at least 3"},
		{"a restart between snapshots", restarted, "cannot come from one process: cumulative alloc_space went down"},
		{"snapshots out of order", swapped, "out of order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Run(Input{Heap: tt.heap})
			if n := len(findingsWith(rep.Findings, "leak.inuse-growth")); n != 0 {
				t.Errorf("%d leak findings from too little or inconsistent data", n)
			}
			if !strings.Contains(strings.Join(rep.Notes, "\n"), tt.note) {
				t.Errorf("notes %q, want one saying %q", rep.Notes, tt.note)
			}
		})
	}
}

func TestRun_goroutineGrowth(t *testing.T) {
	wait := []fn{{"runtime.gopark", "/go/src/runtime/proc.go", 435}, {"runtime.chanrecv", "/go/src/runtime/chan.go", 664},
		{"runtime.chanrecv1", "/go/src/runtime/chan.go", 506}, {"example.com/svc/api.(*Server).watch", "/src/svc/api/watch.go", 88}}
	idle := []fn{{"runtime.gopark", "/go/src/runtime/proc.go", 435}, {"internal/poll.runtime_pollWait", "/go/src/runtime/netpoll.go", 351}, httpRead}
	var gs []Profile
	for i := range 5 {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		p := countProfile([]string{"goroutine"}, at, 0, []countSample{
			{values: []int64{int64(10 + 25*i)}, stack: wait},
			{values: []int64{int64(8 + (i%2)*6)}, stack: idle},
		})
		gs = append(gs, Profile{Name: fmt.Sprintf("goroutine-%d", i), Time: at, Profile: p})
	}
	rep := Run(Input{Goroutines: gs})
	got := findingsWith(rep.Findings, "leak.goroutine-growth")
	if len(got) != 1 {
		t.Fatalf("goroutine findings %+v; notes %v", got, rep.Notes)
	}
	f := got[0]
	if f.Line != 88 || !strings.Contains(f.Title, "blocked receiving from a channel") || f.Evidence["goroutines_per_minute"] != 50 {
		t.Errorf("finding %+v, want 50/min blocked receiving at watch.go:88", f)
	}
	if f.Severity != "medium" {
		t.Errorf("severity %s, want medium for 50 goroutines a minute", f.Severity)
	}
	if _, ok := f.Evidence["goroutines_per_request"]; ok {
		t.Errorf("evidence %v: goroutines per request without a request count", f.Evidence)
	}

	// With the load's request count: one goroutine left per request.
	run := &result.Run{Load: &result.Load{Completed: 100}}
	perRequest := findingsWith(Run(Input{Run: run, Goroutines: gs}).Findings, "leak.goroutine-growth")
	if len(perRequest) != 1 || perRequest[0].Evidence["goroutines_per_request"] != 1 || !strings.Contains(perRequest[0].Title, "1 per request over 100 requests") {
		t.Errorf("findings %+v: want 1 goroutine per request of 100", perRequest)
	}
}

// TestRun_goroutineGrowth_serverConnections grows the goroutines of
// net/http's connections, as a load that opens connections as it goes
// does: within the connections the load opened they are the load's, not a
// leak; beyond them, or with no load known, they are a finding whose fix
// is about connections.
func TestRun_goroutineGrowth_serverConnections(t *testing.T) {
	wait := []fn{{"runtime.gopark", "/go/src/runtime/proc.go", 435}, {"internal/poll.runtime_pollWait", "/go/src/runtime/netpoll.go", 351},
		{"internal/poll.(*FD).Read", "/go/src/internal/poll/fd_unix.go", 165}}
	serve := fn{"net/http.(*conn).serve", "/go/src/net/http/server.go", 2102}
	// Reading a request; or idle between two, peeking for the next
	// (net/http does so before it reads one, since Go 1.12).
	for name, conn := range map[string][]fn{
		"reading a request":     append(slices.Clone(wait), httpRead, serve),
		"idle between requests": append(slices.Clone(wait), fn{"bufio.(*Reader).Peek", "/go/src/bufio/bufio.go", 152}, serve),
	} {
		t.Run(name, func(t *testing.T) { goroutineGrowthOfConnections(t, conn) })
	}

	// A handler waiting on a backend is not the connection's goroutine,
	// however many connections the load opened.
	backend := append(slices.Clone(wait), fn{"net.(*conn).Read", "/go/src/net/net.go", 194}, handler,
		fn{"net/http.serverHandler.ServeHTTP", "/go/src/net/http/server.go", 3340}, serve)
	rep := Run(Input{Run: &result.Run{Load: &result.Load{Completed: 5000, Opened: 14}}, Goroutines: growingGoroutines(backend)})
	if got := findingsWith(rep.Findings, "leak.goroutine-growth"); len(got) != 1 || strings.Contains(got[0].Fix, "IdleTimeout") {
		t.Errorf("findings %+v: want the handler's goroutines found, not taken for idle connections", got)
	}
}

// growingGoroutines is five goroutine profiles, two seconds apart, of
// 2, 5, 8, 11 and 14 goroutines at stack.
func growingGoroutines(stack []fn) []Profile { return goroutinesGrowingBy(stack, 3) }

// goroutinesGrowingBy is five goroutine profiles, two seconds apart, of
// 2 goroutines at stack and step more in each.
func goroutinesGrowingBy(stack []fn, step int64) []Profile {
	var gs []Profile
	for i := range int64(5) {
		at := t0.Add(time.Duration(i) * 2 * time.Second)
		p := countProfile([]string{"goroutine"}, at, 0, []countSample{{values: []int64{2 + step*i}, stack: stack}})
		gs = append(gs, Profile{Name: fmt.Sprintf("goroutine-%d", i), Time: at, Profile: p})
	}
	return gs
}

func goroutineGrowthOfConnections(t *testing.T, conn []fn) {
	// 2 → 50: 48 more, of which up to otherClientConnections may be
	// the collector's and other clients'.
	gs := goroutinesGrowingBy(conn, 12)
	tests := []struct {
		name    string
		load    *result.Load
		finding bool
	}{
		{"within the connections the load opened", &result.Load{Completed: 5000, Opened: 48}, false},
		{"within the closed model's connections", &result.Load{Completed: 5000, Connections: 48}, false},
		{"within them and the collector's own", &result.Load{Completed: 5000, Opened: 48 - otherClientConnections}, false},
		{"beyond them", &result.Load{Completed: 5000, Opened: 4}, true},
		{"no load known", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Run(Input{Run: &result.Run{Load: tt.load}, Goroutines: gs})
			got := findingsWith(rep.Findings, "leak.goroutine-growth")
			if !tt.finding {
				if len(got) != 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "one per open client connection (the load's") {
					t.Errorf("findings %+v, notes %q: want a note that the connections are the load's", got, rep.Notes)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Fix, "IdleTimeout") {
				t.Errorf("findings %+v: want one whose fix is about the server's idle connections", got)
			}
		})
	}
}

// allocRun builds a run whose window allocated the given bytes and
// objects at each site over seconds, with requests completed.
func allocRun(seconds float64, requests uint64, sites map[fn][2]int64) Input {
	start := newHeap(t0, 512)
	end := newHeap(t0.Add(time.Duration(seconds*float64(time.Second))), 512)
	start.sample([4]int64{1, 1, 0, 0}, httpRead)
	end.sample([4]int64{1, 1, 0, 0}, httpRead)
	for f, v := range sites {
		start.sample([4]int64{0, 0, 0, 0}, f, handler)
		end.sample([4]int64{v[1], v[0], 0, 0}, f, handler)
	}
	run := &result.Run{
		Window:     result.Window{DurationSeconds: seconds},
		Load:       &result.Load{Completed: requests},
		PerRequest: &result.PerRequest{Requests: requests},
		MemStats:   result.MemStats{GCCPUFraction: 0.2, GCCPUFractionScope: "window"},
		Target:     result.Target{Env: map[string]string{"GOMAXPROCS": "4"}},
	}
	return Input{Run: run, Heap: []Profile{{Name: "start", Time: t0, Profile: start.build()}, {Name: "end", Time: t0.Add(time.Duration(seconds * float64(time.Second))), Profile: end.build()}}}
}

func TestRun_hotSpotSeverityIsAbsolute(t *testing.T) {
	tests := []struct {
		name  string
		sites map[fn][2]int64 // bytes, objects over 10 s
		at    fn
		want  string
	}{
		// 40 MiB/s: medium by the byte rate, whatever its share.
		{"heavy site", map[fn][2]int64{cacheAdd: {400 << 20, 100_000}}, cacheAdd, "medium"},
		// 30 % of a tiny rate: 3 KiB/s, 10 objects/s.
		{"large share of a tiny rate", map[fn][2]int64{cacheAdd: {30 << 10, 100}, lruInsert: {70 << 10, 200}}, cacheAdd, "info"},
		// 2 M objects/s: high by the object rate.
		{"many small objects", map[fn][2]int64{cacheAdd: {20 << 20, 20_000_000}}, cacheAdd, "high"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := allocRun(10, 1000, tt.sites)
			in.Run.MemStats.GCCPUFraction = 0.001
			in.All = true // info hot spots too
			var got *result.Finding
			for _, f := range Run(in).Findings {
				if f.ID == "alloc.hot-spot" && f.Function == tt.at.name {
					got = &f
				}
			}
			if got == nil {
				t.Fatalf("no hot spot at %s", tt.at.name)
			}
			if got.Severity != tt.want {
				t.Errorf("severity %s, want %s; evidence %v", got.Severity, tt.want, got.Evidence)
			}
		})
	}
}

func TestRun_hotSpotEvidence(t *testing.T) {
	in := allocRun(10, 1000, map[fn][2]int64{cacheAdd: {100 << 20, 50_000}, lruInsert: {300 << 20, 50_000}})
	var f result.Finding
	for _, g := range Run(in).Findings {
		if g.ID == "alloc.hot-spot" && g.Function == cacheAdd.name {
			f = g
		}
	}
	// 100 MiB of 400 MiB (+1 B) in 10 s over 1000 requests; GC takes
	// 20 % of 4 cores, a quarter of it for this site.
	want := map[string]float64{
		"bytes_per_second":    10 << 20,
		"objects_per_second":  5000,
		"bytes_per_request":   (100 << 20) / 1000.0,
		"objects_per_request": 50,
		"gc_cores_estimate":   0.25 * 0.2 * 4,
	}
	for k, v := range want {
		if math.Abs(f.Evidence[k]-v) > v*1e-6 {
			t.Errorf("%s = %g, want %g", k, f.Evidence[k], v)
		}
	}
	// 0.2 cores of GC: medium, though 10 MiB/s alone is low.
	if f.Severity != "medium" {
		t.Errorf("severity %s, want medium", f.Severity)
	}
}

func TestRun_contention(t *testing.T) {
	unlock := []fn{{"sync.(*Mutex).Unlock", "/go/src/sync/mutex.go", 223}, {"example.com/svc/kv.(*Store).Get", "/src/svc/kv/kv.go", 61}, handler}
	counter := []fn{{"sync.(*Mutex).Unlock", "/go/src/sync/mutex.go", 223}, {"example.com/svc/kv.(*stats).count", "/src/svc/kv/stats.go", 12}}
	quiet := []fn{{"sync.(*Mutex).Unlock", "/go/src/sync/mutex.go", 223}, {"example.com/svc/kv.(*Store).Len", "/src/svc/kv/kv.go", 80}}
	p := countProfile([]string{"contentions", "delay"}, t0, 10*time.Second, []countSample{
		{values: []int64{5000, 3e9}, stack: unlock},  // 300 ms/s
		{values: []int64{100, 50e6}, stack: counter}, // 5 ms/s
		{values: []int64{1, 1000}, stack: quiet},     // 0.1 µs/s
	})
	rep := Run(Input{Contention: []Profile{{Name: "mutex.pb.gz", Time: t0, Profile: p}}})
	got := findingsWith(rep.Findings, "contention.lock")
	if len(got) != 2 {
		t.Fatalf("contention findings %+v, want two", got)
	}
	if got[0].Line != 61 || got[0].Severity != "medium" || math.Abs(got[0].Evidence["delay_seconds_per_second"]-0.3) > 1e-9 {
		t.Errorf("first finding %+v, want kv.go:61 at 300 ms/s, medium", got[0])
	}
	if got[1].Line != 12 || got[1].Severity != "low" || !strings.Contains(got[1].Fix, "sync/atomic") {
		t.Errorf("second finding %+v, want the counter at low with an atomics fix", got[1])
	}
}

func TestRun_patternsFromStacksAndSource(t *testing.T) {
	encode := []fn{{"encoding/json.mapEncoder.encode", "/go/src/encoding/json/encode.go", 784},
		{"encoding/json.(*Encoder).Encode", "/go/src/encoding/json/stream.go", 210},
		{"example.com/svc/api.writeJSON", "/src/svc/api/json.go", 30}, handler}
	gz := []fn{{"compress/flate.NewWriter", "/go/src/compress/flate/deflate.go", 666},
		{"compress/gzip.(*Writer).Write", "/go/src/compress/gzip/gzip.go", 191},
		{"example.com/svc/api.compress", "/src/svc/api/gz.go", 12}}
	re := []fn{{"regexp.compile", "/go/src/regexp/regexp.go", 180}, {"regexp.MustCompile", "/go/src/regexp/regexp.go", 313},
		{"example.com/svc/api.valid", "/src/svc/api/valid.go", 7}}
	conv := fn{"example.com/svc/api.(*Server).key", "/src/svc/api/key.go", 5}
	sprintf := []fn{{"fmt.Sprintf", "/go/src/fmt/print.go", 239}, {"example.com/svc/api.name", "/src/svc/api/name.go", 3}}
	big := fn{"example.com/svc/api.newQueue", "/src/svc/api/queue.go", 9}
	in := allocRun(10, 1000, nil)
	end := newHeap(t0.Add(10*time.Second), 512)
	end.sample([4]int64{1, 1, 0, 0}, httpRead)
	end.sample([4]int64{20_000, 4 << 20}, encode...)
	end.sample([4]int64{100, 40 << 20}, gz...)
	end.sample([4]int64{5000, 2 << 20}, re...)
	end.sample([4]int64{30_000, 1 << 20}, conv, handler)
	end.sample([4]int64{10_000, 1 << 20}, sprintf...)
	end.sampleWithSize(1<<20, [4]int64{10, 10 << 20}, big, handler)
	in.Heap[1].Profile = end.build()
	in.Source = mapSource{
		{file: "/src/svc/api/key.go", line: 5}:   `	k := []byte(id)`,
		{file: "/src/svc/api/name.go", line: 3}:  `	return fmt.Sprintf("%d", n)`,
		{file: "/src/svc/api/queue.go", line: 9}: `	q := make(chan *job, 1<<17)`,
	}
	rep := Run(in)
	for id, line := range map[string]int64{
		"pattern.json-per-call":           30,
		"pattern.per-call-compressor":     12,
		"pattern.regexp-per-call":         7,
		"pattern.string-bytes-conversion": 5,
		"pattern.sprintf-conversion":      3,
		"pattern.large-pointer-alloc":     9,
	} {
		got := findingsWith(rep.Findings, id)
		if len(got) != 1 || got[0].Line != line {
			t.Errorf("%s findings %+v, want one at line %d", id, got, line)
		}
	}
}

func TestRun_patternsNeedTheSourceOrAFrame(t *testing.T) {
	// Without the source, a line that converts looks like any other.
	in := allocRun(10, 1000, map[fn][2]int64{cacheAdd: {1 << 20, 30_000}})
	if got := findingsWith(Run(in).Findings, "pattern.string-bytes-conversion"); len(got) != 0 {
		t.Errorf("conversion findings without the source or a CPU frame: %+v", got)
	}
	// The CPU profile shows the conversion under the line.
	in.CPU = countProfile([]string{"samples", "cpu"}, t0, 10*time.Second, []countSample{
		{values: []int64{30, 300e6}, stack: []fn{{"runtime.mallocgc", "/go/src/runtime/malloc.go", 1000},
			{"runtime.stringtoslicebyte", "/go/src/runtime/string.go", 180}, cacheAdd, handler}},
		{values: []int64{70, 700e6}, stack: []fn{httpRead}},
	})
	got := findingsWith(Run(in).Findings, "pattern.string-bytes-conversion")
	if len(got) != 1 || got[0].Line != cacheAdd.line || math.Abs(got[0].Evidence["cpu_share"]-0.3) > 1e-9 {
		t.Errorf("conversion findings %+v, want one at the cache line with 30%% of CPU", got)
	}
	// A conversion inside the standard library is nothing the service's
	// author can change: no finding there.
	readLine := fn{"net/textproto.(*Reader).ReadLine", "/go/src/net/textproto/reader.go", 45}
	in.CPU = countProfile([]string{"samples", "cpu"}, t0, 10*time.Second, []countSample{
		{values: []int64{30, 300e6}, stack: []fn{{"runtime.slicebytetostring", "/go/src/runtime/string.go", 100}, readLine, httpRead}},
		{values: []int64{70, 700e6}, stack: []fn{httpRead}},
	})
	if got := findingsWith(Run(in).Findings, "pattern.string-bytes-conversion"); len(got) != 0 {
		t.Errorf("conversion findings %+v inside net/textproto, want none", got)
	}
}

func TestSort_severityThenConfidence(t *testing.T) {
	fs := []result.Finding{
		{ID: "b", Severity: "low", Confidence: 0.9},
		{ID: "a", Severity: "high", Confidence: 0.5},
		{ID: "c", Severity: "medium", Confidence: 0.5},
		{ID: "d", Severity: "medium", Confidence: 0.8},
		{ID: "e", Severity: "info", Confidence: 1},
	}
	Sort(fs)
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	if got := strings.Join(ids, ""); got != "adcbe" {
		t.Errorf("order %s, want adcbe", got)
	}
	if !AtLeast(fs, Medium) || AtLeast(fs[3:], Medium) {
		t.Error("AtLeast(Medium) is wrong")
	}
	for _, tt := range []struct {
		min  Severity
		want int
	}{{High, 1}, {Medium, 3}, {Low, 4}, {Info, 5}} {
		if got := CountAtLeast(fs, tt.min); got != tt.want {
			t.Errorf("CountAtLeast(%s) = %d, want %d", tt.min, got, tt.want)
		}
	}
}

type fakeEscapes map[fn][]string

func (f fakeEscapes) At(file string, line int) []string { return f[fn{file: file, line: int64(line)}] }

func TestRun_attachesEscapeAnalysis(t *testing.T) {
	in := allocRun(10, 1000, map[fn][2]int64{cacheAdd: {400 << 20, 100_000}})
	in.Escapes = fakeEscapes{{file: cacheAdd.file, line: cacheAdd.line}: {"b escapes to heap: flow: ~r0 = b"}}
	var got []string
	for _, f := range Run(in).Findings {
		if f.ID == "alloc.hot-spot" && f.Line == cacheAdd.line {
			got = f.Escape
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "escapes to heap") {
		t.Errorf("escape notes %q, want the compiler's explanation", got)
	}
}

// BenchmarkRun diagnoses a run of 8 heap snapshots with a few hundred
// sites each, the work every profile run does once.
func BenchmarkRun(b *testing.B) {
	inuse := map[fn]func(int) int64{}
	for i := range 300 {
		f := fn{fmt.Sprintf("example.com/svc/p%d.F", i), fmt.Sprintf("/src/svc/p%d/f.go", i), int64(i + 1)}
		inuse[f] = func(j int) int64 { return int64(i*1000 + j*(i%7)*4096) }
	}
	in := Input{Heap: heapSeriesOf(8, inuse)}
	b.ReportAllocs()
	for b.Loop() {
		Run(in)
	}
}

// TestRun_growthThatStopsIsNotALeak: bare snapshots (no live heap) of a
// pool filling to its working set — three, the fewest a user might take,
// and six — are bounded growth at the site, at most low, with the
// plateau; the same rise that goes on to the end is a leak.
func TestRun_growthThatStopsIsNotALeak(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		inuse func(i int) int64
		leak  bool
	}{
		{"three snapshots, the last flat", 3, func(i int) int64 { return []int64{1 << 20, 9 << 20, 9<<20 + 4096}[i] }, false},
		{"six snapshots, full after two", 6, func(i int) int64 { return min(int64(i), 2) * 4 << 20 }, false},
		{"six snapshots, rising to the end", 6, func(i int) int64 { return int64(i) * 4 << 20 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Run(Input{Heap: heapSeriesOf(tt.n, map[fn]func(int) int64{warm: tt.inuse})})
			leaks := findingsWith(rep.Findings, "leak.inuse-growth")
			bounded := findingsWith(rep.Findings, "growth.bounded")
			if tt.leak {
				if len(leaks) != 1 || len(bounded) != 0 {
					t.Errorf("leaks %d, bounded %d: want the leak alone", len(leaks), len(bounded))
				}
				return
			}
			if len(leaks) != 0 || len(bounded) != 1 {
				t.Fatalf("leaks %+v, bounded %+v: want bounded growth, no leak; notes %v", leaks, bounded, rep.Notes)
			}
			f := bounded[0]
			plateau := float64(tt.inuse(tt.n - 1))
			if f.Severity != "low" || f.Function != warm.name || f.Evidence["plateau_bytes"] != plateau || !strings.Contains(f.Title, "not a leak") {
				t.Errorf("bounded growth %s at %s, plateau %v (want %v): %q", f.Severity, f.Function, f.Evidence["plateau_bytes"], plateau, f.Title)
			}
		})
	}
}
