package diagnose

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/result"
)

// recordedProfiles reads the recorded profiles of one kind (heap,
// goroutine) of testdata/recorded/name, oldest first.
func recordedProfiles(t *testing.T, name, kind string) []Profile {
	t.Helper()
	return readProfiles(t, filepath.Join("testdata", "recorded", name, kind+"-*.pb.gz"), kind == "heap")
}

// TestRun_oneFindingAtTheUsersCall diagnoses a real service whose handler
// calls http.Get and never closes the body: the connections' read and
// write goroutines and their buffers grow inside net/http, where no frame
// of the service is. The verdict is one finding, at the handler's line,
// with the misuse's fix and the four symptoms.
func TestRun_oneFindingAtTheUsersCall(t *testing.T) {
	rep := Run(Input{Heap: recordedProfiles(t, "body-not-closed", "heap"), Goroutines: recordedProfiles(t, "body-not-closed", "goroutine")})
	var serious []result.Finding
	for _, f := range rep.Findings {
		if SeverityOf(f) >= Low {
			serious = append(serious, f)
		}
	}
	if len(serious) != 1 {
		t.Fatalf("%d findings of low or above, want 1 for the one cause:%s", len(serious), titles(serious))
	}
	f := serious[0]
	if f.Function != "main.callUpstream" || filepath.Base(f.File) != "main.go" || f.Line != 40 {
		t.Errorf("finding at %s %s:%d, want the handler's http.Get at main.callUpstream main.go:40", f.Function, f.File, f.Line)
	}
	if f.Severity != "high" || !strings.HasPrefix(f.Fix, "In main.callUpstream (misusesvc/main.go:40): close every response body") {
		t.Errorf("severity %s, fix %q: want high, the fix at the service's line", f.Severity, f.Fix)
	}
	if !strings.HasPrefix(f.Cause, "leak/http-response-body-not-closed at main.callUpstream") {
		t.Errorf("cause %q: want the misuse at the handler's line", f.Cause)
	}
	var sites []string
	for _, s := range f.Symptoms {
		sites = append(sites, s.ID+" "+s.Title)
	}
	joined := strings.Join(sites, "\n")
	if len(f.Symptoms) != 4 || !strings.Contains(f.Title+joined, "persistConn).writeLoop") ||
		!strings.Contains(joined, "bufio.NewWriterSize") || !strings.Contains(joined, "bufio.NewReaderSize") ||
		!strings.Contains(joined, "alloc.hot-spot allocation hot spot at main.callUpstream") {
		t.Errorf("symptoms:\n%s\nwant the other connection goroutine, the two buffers and the allocations at the call", joined)
	}
}

func titles(fs []result.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n  " + f.Severity + " " + f.ID + " " + f.Title)
	}
	return b.String()
}

func TestOneFindingPerUserLine(t *testing.T) {
	app := appCode{mainModule: "example.com/svc"}
	at := func(id, sev, cause, function string, line int64) result.Finding {
		return result.Finding{ID: id, Severity: sev, Cause: cause, Function: function, File: "/src/svc/main.go", Line: line,
			Title: id + " " + function, Evidence: map[string]float64{}}
	}
	placedBy := func(f result.Finding, samples float64, held bool) result.Finding {
		f.Evidence = map[string]float64{"site_samples": samples}
		if held {
			f.Evidence["held_sites"] = 1
		}
		return f
	}
	tests := []struct {
		name string
		in   []result.Finding
		want []string // id, severity and symptom count of each finding kept, in order
	}{
		{"one misuse at one line", []result.Finding{
			at("leak.goroutine-growth", "high", "http-response-body-not-closed", "main.fetch", 12),
			at("leak.inuse-growth", "high", "http-response-body-not-closed", "main.fetch", 12),
			at("leak.inuse-growth", "low", "http-response-body-not-closed", "main.fetch", 12),
		}, []string{"leak.inuse-growth high 2"}},
		{"worst severity leads", []result.Finding{
			at("leak.inuse-growth", "low", "", "main.fetch", 12),
			at("leak.goroutine-growth", "medium", "", "main.fetch", 12),
		}, []string{"leak.goroutine-growth medium 1"}},
		{"two lines, two causes", []result.Finding{
			at("leak.inuse-growth", "high", "", "main.fetch", 12),
			at("leak.inuse-growth", "high", "", "main.store", 30),
		}, []string{"leak.inuse-growth high 0", "leak.inuse-growth high 0"}},
		{"one line, two misuses", []result.Finding{
			at("leak.inuse-growth", "high", "context-timeout-never-cancelled", "main.fetch", 12),
			at("leak.goroutine-growth", "high", "http-response-body-not-closed", "main.fetch", 12),
		}, []string{"leak.inuse-growth high 0", "leak.goroutine-growth high 0"}},
		{"one misuse, two lines of one function", []result.Finding{
			at("leak.goroutine-growth", "high", "sql-db-per-request", "main.countStock", 608),
			at("leak.inuse-growth", "high", "sql-db-per-request", "main.countStock", 614),
		}, []string{"leak.inuse-growth high 1"}},
		{"a hot spot at a folded symptom's line", []result.Finding{
			at("leak.inuse-growth", "high", "sql-db-per-request", "main.countStock", 608),
			at("leak.inuse-growth", "high", "sql-db-per-request", "main.countStock", 614),
			at("alloc.hot-spot", "medium", "", "main.countStock", 614),
		}, []string{"leak.inuse-growth high 2"}},
		{"one misuse in two functions", []result.Finding{
			at("leak.inuse-growth", "high", "sql-db-per-request", "main.countStock", 608),
			at("leak.inuse-growth", "high", "sql-db-per-request", "main.listStock", 640),
		}, []string{"leak.inuse-growth high 0", "leak.inuse-growth high 0"}},
		{"a library's site is not merged", []result.Finding{
			at("leak.inuse-growth", "high", "", "bufio.NewWriterSize", 599),
			at("leak.inuse-growth", "high", "", "bufio.NewReaderSize", 57),
		}, []string{"leak.inuse-growth high 0", "leak.inuse-growth high 0"}},
		{"a leak one sample places in the misuse's parent function is its symptom", []result.Finding{
			at("leak.goroutine-growth", "medium", "channel-send-never-received", "main.lookup.func1", 329),
			placedBy(at("leak.inuse-growth", "high", "", "main.lookup", 327), 1, false),
		}, []string{"leak.goroutine-growth high 1"}},
		{"a leak few samples place at the misuse's line is its symptom", []result.Finding{
			at("leak.goroutine-growth", "high", "singleflight-call-hangs", "main.refresh.func5.1", 288),
			placedBy(at("leak.inuse-growth", "high", "", "main.refresh.func5.1", 288), 3, false),
		}, []string{"leak.goroutine-growth high 1"}},
		{"a weakly placed leak beside a folded misuse finding goes to its lead", []result.Finding{
			at("leak.inuse-growth", "medium", "channel-send-never-received", "main.lookup.func1", 330),
			at("leak.goroutine-growth", "high", "channel-send-never-received", "main.lookup.func1", 329),
			placedBy(at("leak.inuse-growth", "high", "", "main.lookup", 327), 1, false),
		}, []string{"leak.goroutine-growth high 2"}},
		{"a leak samples place surely beside a misuse stays apart", []result.Finding{
			at("leak.goroutine-growth", "high", "channel-send-never-received", "main.lookup.func1", 329),
			placedBy(at("leak.inuse-growth", "high", "", "main.lookup", 327), 4, false),
		}, []string{"leak.goroutine-growth high 0", "leak.inuse-growth high 0"}},
		{"a holder named beside a misuse stays apart", []result.Finding{
			at("leak.goroutine-growth", "high", "channel-send-never-received", "main.lookup.func1", 329),
			placedBy(at("leak.inuse-growth", "high", "", "main.lookup", 327), 1, true),
		}, []string{"leak.goroutine-growth high 0", "leak.inuse-growth high 0"}},
		{"a weakly placed leak in another function stays apart", []result.Finding{
			at("leak.goroutine-growth", "high", "channel-send-never-received", "main.lookup.func1", 329),
			placedBy(at("leak.inuse-growth", "high", "", "main.lookupAll", 340), 1, false),
		}, []string{"leak.goroutine-growth high 0", "leak.inuse-growth high 0"}},
		{"a hot spot at a leak's line is its symptom; info stays apart", []result.Finding{
			at("alloc.hot-spot", "medium", "", "main.fetch", 12),
			at("leak.inuse-growth", "info", "", "main.fetch", 12),
			at("leak.inuse-growth", "medium", "", "main.fetch", 12),
		}, []string{"leak.inuse-growth info 0", "leak.inuse-growth medium 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range oneFindingPerUserLine(tt.in, app) {
				got = append(got, f.ID+" "+f.Severity+" "+strconv.Itoa(len(f.Symptoms)))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("kept %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWithKnown(t *testing.T) {
	leak := result.Finding{ID: "leak.inuse-growth", Severity: "high", Title: "a map that only grows at main.store", Cause: "leak at main.store (main.go:30)", Fix: "bound the map"}
	window := []result.Finding{
		{ID: "leak.inuse-growth", Severity: "medium", Title: "inuse grows at main.store", Cause: "leak at main.store (main.go:30)"},
		{ID: "gc.pressure", Severity: "medium", Title: "GC runs 30 times a second", Cause: "gc.pressure"},
	}
	got := WithKnown(window, []result.Finding{leak})
	if len(got) != 2 || got[0].Title != leak.Title || got[0].Fix != "bound the map" || got[0].Severity != "high" {
		t.Fatalf("findings %+v: want the known leak first, with its fix, then the GC", got)
	}
	if len(got[0].Symptoms) != 1 || !strings.HasPrefix(got[0].Symptoms[0].Title, "in this window: inuse grows") {
		t.Errorf("symptoms %+v: want the window's finding of the same cause", got[0].Symptoms)
	}
	// A known cause this window does not show still leads.
	got = WithKnown(window[1:], []result.Finding{leak})
	if len(got) != 2 || got[0].Cause != leak.Cause || len(got[0].Symptoms) != 0 {
		t.Errorf("findings %+v: want the known leak, then the window's GC finding", got)
	}
	if got := WithKnown(window, nil); len(got) != 2 || got[0].Title != window[0].Title {
		t.Errorf("without history: %+v, want the window's findings as they were", got)
	}
}

// TestRun_recordedMisuses diagnoses profiles recorded from real services
// making a catalogued misuse, as bare profiles are diagnosed: the one
// finding of medium or above names the misuse at the service's line.
// They are the fast, recorded subset of the end-to-end misuse cases
// (cmd/heapscope's TestProfile_MisusesOnRealRuns and
// TestProfile_ModuleMisusesOnRealRuns): a change to the catalogue's
// matching that loses one fails here, without a service to run.
func TestRun_recordedMisuses(t *testing.T) {
	tests := []struct {
		misuse   string
		function string
		line     int64
	}{
		// Goroutines parked in the service's own code.
		{"cond-waiter-never-woken", "main.(*quote).await", 530},
		// Goroutines database/sql started, placed at the service's
		// BeginTx by the heap profile's stacks.
		{"sql-tx-never-ended", "main.reserveStock", 624},
		// A module's generic function, named in the profile with its
		// shapes.
		{"expirable-lru-per-call", "main.main.func1", 223},
		// Goroutines started by a go statement straight into the module
		// (no frame of the service's calls it): the service's function
		// it calls back.
		{"singleflight-call-hangs", "main.main.refreshInBackground.func5.1", 288},
	}
	for _, tt := range tests {
		t.Run(tt.misuse, func(t *testing.T) {
			rep := Run(Input{Heap: recordedProfiles(t, tt.misuse, "heap"), Goroutines: recordedProfiles(t, tt.misuse, "goroutine")})
			serious := atLeast(rep.Findings, Medium)
			if len(serious) != 1 {
				t.Fatalf("%d findings of medium or above, want 1 for the one cause:%s", len(serious), titles(serious))
			}
			f := serious[0]
			if !strings.HasPrefix(f.Cause, "leak/"+tt.misuse+" at ") || f.Function != tt.function || f.Line != tt.line {
				t.Errorf("finding %q at %s:%d (%s), want %s at %s:%d", f.Cause, f.Function, f.Line, f.Title, tt.misuse, tt.function, tt.line)
			}
		})
	}
}

func TestKeptBelow(t *testing.T) {
	const file = "/src/svc/limits.go"
	at := site{"main.(*limiterBook).limiter", file, 40}
	tests := []struct {
		name  string
		lines map[int64]string
		want  int64 // the insert's line, 0 for none
	}{
		{"the next line keeps it", map[int64]string{40: "\t\tl = rate.NewLimiter(10, 20)", 41: "\t\tb.byClient[client] = l // remember it"}, 41},
		{"a declaration, an error check, then the insert", map[int64]string{
			40: "\tc, err := ristretto.NewCache[string, string](cfg)", 41: "\tif err != nil {", 42: "\t\treturn err", 43: "\tcaches[name] = c"}, 43},
		{"another variable is inserted", map[int64]string{40: "\t\tl = rate.NewLimiter(10, 20)", 41: "\t\tb.byClient[client] = other"}, 0},
		{"the insert is too far", map[int64]string{40: "\tl := newLimiter()", 41: "\tlog()", 42: "\tlog()", 43: "\tlog()", 44: "\tm[k] = l"}, 0},
		{"the line is no assignment", map[int64]string{40: "\tlimiters[client] = rate.NewLimiter(10, 20)", 41: "\tm[k] = l"}, 0},
		{"no source", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := mapSource{}
			for n, text := range tt.lines {
				src[fn{file: file, line: n}] = text
			}
			d := &diagnosis{in: Input{Source: src}}
			into, _, ok := d.keptBelow(at)
			if got := into.line; ok != (tt.want > 0) || got != tt.want {
				t.Errorf("keptBelow = line %d (%v), want %d", got, ok, tt.want)
			}
		})
	}
}
