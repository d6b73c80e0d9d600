package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/goldenfile"
	"github.com/heapscope/heapscope/internal/result"
)

// leakyRun is a run of a leaking cache service under load, with numbers of
// the size such a run gives.
func leakyRun() *result.Run {
	start := time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)
	end := start.Add(20 * time.Second)
	return &result.Run{
		SchemaVersion: result.SchemaVersion,
		Status:        result.StatusComplete,
		Heapscope:     result.Tool{Version: "v0.1.0", GoVersion: "go1.26.8"},
		Target: result.Target{
			URL: "http://127.0.0.1:6060", PprofURL: "http://127.0.0.1:6060/debug/pprof/",
			PID: 4242, Local: true, GoVersion: "go1.26.8", MainModule: "example.com/cache",
			Env: map[string]string{"GOGC": "100", "GOMEMLIMIT": "512MiB"}, UptimeSeconds: 31.5,
		},
		Window: result.Window{Start: start, End: end, DurationSeconds: 20, ForcedGCs: 3},
		MemStats: result.MemStats{
			AllocBytes: 48 << 20, TotalAllocBytes: 900 << 20, SysBytes: 80 << 20, HeapSysBytes: 64 << 20,
			HeapInuseBytes: 50 << 20, HeapIdleBytes: 14 << 20, HeapReleasedBytes: 6 << 20, HeapObjects: 310000,
			StackInuseBytes: 512 << 10, NextGCBytes: 96 << 20, NumGC: 41,
			AllocatedBytes: 412 << 20, AllocatedBytesPerSecond: 20.6 * (1 << 20), Mallocs: 1_200_000, MallocsPerSecond: 60000,
			GCCycles: 12, GCForcedCycles: 2, GCCyclesPerSecond: 0.5,
			GCPauseP50Seconds: 45e-6, GCPauseP99Seconds: 180e-6, GCPauseMaxSeconds: 210e-6, GCPausesCovered: 12,
			GCCPUFraction: 0.021, GCCPUFractionScope: "window",
		},
		RSS: result.RSS{
			Source: "proc", RSSBytes: 71 << 20, HWMBytes: 75 << 20,
			GoHeapMappings: &result.HeapMappings{Count: 1, SizeBytes: 64 << 20, RSSBytes: 57 << 20, CommittedBytes: 58 << 20, Consistent: true},
			Cgroup:         &result.Cgroup{Version: 2, Path: "/app.slice", LimitBytes: 256 << 20, UsageBytes: 90 << 20},
		},
		Load: &result.Load{
			Method: "GET", URL: "http://127.0.0.1:6060/process?id=user-{rand:100000}", RequestedRate: 500,
			Requests: 10000, Completed: 10000, AchievedRate: 499.8,
			StatusCodes:    map[string]uint64{"200": 10000},
			LatencySeconds: result.Latency{Min: 90e-6, Mean: 400e-6, P50: 310e-6, P90: 700e-6, P99: 2.1e-3, P999: 4e-3, Max: 6e-3},
		},
		PerRequest: &result.PerRequest{Requests: 10000, BytesPerRequest: 43100, ObjectsPerRequest: 118, MemStatsBytesPerRequest: ptr(43200.0), MemStatsObjectsPerRequest: ptr(120.0)},
		HeapGrowth: &result.HeapGrowth{
			Snapshots: []result.HeapSnapshot{
				{Time: start, OffsetSeconds: 0, InuseBytes: 12 << 20, InuseObjects: 90000, Profile: "profiles/heap-000.pb.gz"},
				{Time: start.Add(10 * time.Second), OffsetSeconds: 10, InuseBytes: 30 << 20, InuseObjects: 200000, Profile: "profiles/heap-001.pb.gz"},
				{Time: end, OffsetSeconds: 20, InuseBytes: 48 << 20, InuseObjects: 310000, Profile: "profiles/heap-002.pb.gz"},
			},
			SlopeBytesPerMinute: 108 << 20, R2: 1, GrowthBytes: 36 << 20,
		},
		Top: []result.TopTable{
			{SampleType: "alloc_space", Unit: "bytes", Semantics: "allocations delta over the window 10:15:00.000Z–10:15:20.000Z (20s)",
				Profile: "profiles/allocs-delta.pb.gz", Total: 412 << 20, Sites: []result.Site{
					{Function: "example.com/cache.(*Worker).Process", File: "/src/cache/worker.go", Line: 42, Flat: 170 << 20, FlatShare: 0.4126, Cum: 170 << 20, CumShare: 0.4126},
					{Function: "example.com/cache.(*Worker).Process", File: "/src/cache/worker.go", Line: 41, Flat: 90 << 20, FlatShare: 0.2184, Cum: 90 << 20, CumShare: 0.2184},
					{Function: "net/http.(*conn).readRequest", File: "/usr/local/go/src/net/http/server.go", Line: 1100, Flat: 60 << 20, FlatShare: 0.1456, Cum: 80 << 20, CumShare: 0.1942},
					{Function: "bufio.NewReaderSize", File: "/usr/local/go/src/bufio/bufio.go", Line: 57, Flat: 20 << 20, FlatShare: 0.0485, Cum: 20 << 20, CumShare: 0.0485,
						Inlined: []string{"bufio.NewReaderSize", "net/http.newBufioReader"}},
				}},
			{SampleType: "inuse_space", Unit: "bytes", Semantics: "in use as of the GC forced at 10:15:20.000Z (a snapshot, not a delta)",
				Profile: "profiles/heap-002.pb.gz", Total: 48 << 20, Sites: []result.Site{
					{Function: "example.com/cache.(*Worker).Process", File: "/src/cache/worker.go", Line: 42, Flat: 40 << 20, FlatShare: 0.8333, Cum: 40 << 20, CumShare: 0.8333},
				}},
		},
		Findings: []result.Finding{},
		Profiles: []result.Profile{
			{Kind: "heap", Path: "profiles/heap-000.pb.gz", Semantics: "heap snapshot as of the GC forced at 10:15:00.000Z (window start)", Time: start},
			{Kind: "allocs-delta", Path: "profiles/allocs-delta.pb.gz", Semantics: "allocations over the window", Time: start},
		},
		Files: result.RunDirectory{Report: "report.md", MemStats: "memstats.json", Load: "load.json"},
	}
}

// remoteIdleRun is a partial run of a remote service with no load, no RSS
// and no GC in the window.
func remoteIdleRun() *result.Run {
	r := leakyRun()
	r.Status = result.StatusPartial
	r.Failures = []result.Failure{{Step: "cpu profile", Error: "fetch CPU profile: the target is already being CPU-profiled"}}
	r.Warnings = []string{"top cpu: no samples"}
	r.Target = result.Target{URL: "https://svc.example:8443", PprofURL: "https://svc.example:8443/debug/pprof/"}
	r.Load, r.PerRequest = nil, nil
	r.RSS = result.RSS{Source: "unknown", Note: "the target is not on this machine and serves no process_resident_memory_bytes on /metrics"}
	r.MemStats.GCCycles, r.MemStats.GCForcedCycles, r.MemStats.GCPausesCovered = 0, 0, 0
	r.MemStats.AllocatedBytes, r.MemStats.Mallocs = 0, 0
	r.MemStats.GCCPUFractionScope = "lifetime"
	return r
}

// closedLoadRun is the leaky run under the closed model: connections, no
// asked rate.
func closedLoadRun() *result.Run {
	r := leakyRun()
	l := *r.Load
	l.Model, l.RequestedRate, l.Connections = "closed", 0, 16
	r.Load = &l
	return r
}

// diagnosedRun is the leaky run with findings of every severity and a note
// on a check that could not run.
func diagnosedRun() *result.Run {
	r := leakyRun()
	r.Findings = []result.Finding{
		{ID: "leak.inuse-growth", Severity: "high", Title: "inuse_space grows 108 MiB/min at cache.(*Worker).Process (cache/worker.go:42)",
			Function: "example.com/cache.(*Worker).Process", File: "/src/cache/worker.go", Line: 42,
			Evidence: map[string]float64{"slope_bytes_per_minute": 108 << 20, "r2": 1},
			Fix:      "memory allocated here stays reachable and keeps growing: bound it; the growing stack is cache.(*Worker).Process", Confidence: 0.9},
		{ID: "pattern.unbounded-map", Severity: "high", Title: "a map that only grows at cache.(*Worker).Process (cache/worker.go:42)",
			Function: "example.com/cache.(*Worker).Process", File: "/src/cache/worker.go", Line: 42,
			Evidence: map[string]float64{"r2": 1}, Fix: "bound the map", Confidence: 0.6},
		{ID: "pattern.append-growth", Severity: "low", Title: "append growing a slice without capacity at cache.(*Worker).Process (cache/worker.go:41)",
			Evidence: map[string]float64{"bytes_per_request": 9000}, Fix: "preallocate. Or reuse the slice", Confidence: 0.8},
		{ID: "alloc.hot-spot", Severity: "info", Title: "allocation hot spot at http.(*conn).readRequest (http/server.go:1100)", Evidence: map[string]float64{}, Confidence: 0.3},
		{ID: "rss.breakdown", Severity: "info", Title: "RSS 71 MiB (proc)", Evidence: map[string]float64{}, Confidence: 0.8},
	}
	r.DiagnosisNotes = []string{"goroutine leak check: 1 goroutine profile(s), it needs at least 3 of one process"}
	r.HiddenHotSpots = 9
	r.Window.ProfilerAllocatedBytes = 30 << 20
	return r
}

// infoOnlyRun has nothing but info findings: the summary lists a few.
func infoOnlyRun() *result.Run {
	r := diagnosedRun()
	r.Findings = r.Findings[3:]
	r.DiagnosisNotes = nil
	return r
}

func TestSummary_Golden(t *testing.T) {
	tests := []struct {
		name string
		run  *result.Run
		dir  string
	}{
		{"leaky", leakyRun(), "heapscope-runs/127.0.0.1_6060-20261122T101500Z"},
		{"remote-idle", remoteIdleRun(), "runs/svc"},
		{"closed-load", closedLoadRun(), "runs/closed"},
		{"diagnosed", diagnosedRun(), "runs/diagnosed"},
		{"info-only", infoOnlyRun(), "runs/info"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Summary(&buf, tt.run, tt.dir); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, "testdata/"+"summary-"+tt.name+".txt", buf.Bytes())
		})
	}
}

func TestSummary_LeadsWithTheHeaviestSites(t *testing.T) {
	var buf bytes.Buffer
	if err := Summary(&buf, leakyRun(), "out/run"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"cache.(*Worker).Process", "worker.go:42", "41.3%", "12.0 MiB → 30.0 MiB → 48.0 MiB", "out/run/report.md"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// Three sites per table, not the fourth.
	if strings.Contains(out, "bufio.NewReaderSize") {
		t.Errorf("summary shows more than 3 allocation sites:\n%s", out)
	}
}

func TestMarkdown_Golden(t *testing.T) {
	for name, r := range map[string]*result.Run{"leaky": leakyRun(), "remote-idle": remoteIdleRun()} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Markdown(&buf, r); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, "testdata/"+"report-"+name+".md", buf.Bytes())
		})
	}
}

func TestTop_Golden(t *testing.T) {
	tab := leakyRun().Top[0]
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON} {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, f, Top{Table: tab}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, "testdata/"+"top."+string(f), buf.Bytes())
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestLoadLine_CountsWhatWasSent(t *testing.T) {
	tests := []struct {
		name string
		load result.Load
		want []string
		not  []string
	}{
		{
			name: "all answered",
			load: result.Load{Method: "GET", URL: "http://127.0.0.1:1/", Model: "open", RequestedRate: 500, AchievedRate: 500, Requests: 1000, Completed: 1000},
			want: []string{"1000 requests sent at 500/s (asked 500/s), 0 errors"},
			not:  []string{"answered"},
		},
		{
			name: "target lost halfway",
			load: result.Load{Method: "GET", URL: "http://127.0.0.1:1/", Model: "open", RequestedRate: 500, AchievedRate: 500, Requests: 1000, Completed: 498, Errors: 502},
			want: []string{"1000 requests sent", "498 answered, 502 errors"},
		},
		{
			name: "held back by the bound",
			load: result.Load{Method: "GET", URL: "http://127.0.0.1:1/", Model: "open", RequestedRate: 100, AchievedRate: 4, Requests: 20, Errors: 20,
				Dropped: 480, MaxInFlight: 20, Lag: &result.LoadLag{FellBehind: true, HeldBack: "max_in_flight"}},
			want: []string{"20 requests sent", "0 answered, 20 errors", "480 not sent (20 in flight, the bound)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadLine(&result.Run{Load: &tt.load})
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("load line %q does not say %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("load line %q says %q", got, n)
				}
			}
		})
	}
}
