package pyroscope

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// wantTypes are the sample types (type/unit) each pushed series must
// decode to.
var wantTypes = map[string][]string{
	NameCPU:       {"samples/count", "cpu/nanoseconds"},
	NameMemory:    {"alloc_objects/count", "alloc_space/bytes", "inuse_objects/count", "inuse_space/bytes"},
	NameGoroutine: {"goroutine/count"},
	NameMutex:     {"contentions/count", "delay/nanoseconds"},
	NameBlock:     {"contentions/count", "delay/nanoseconds"},
}

var uuidForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestBuild_RealCapture(t *testing.T) {
	dir := realCapture(t)
	meta := Meta{Target: "http://127.0.0.1:6060/debug/pprof/", Kind: "run", ID: "runs/x/capture",
		Labels: map[string]string{"instance": "127.0.0.1:6060", "group": "api", "service_name": "api"}}
	c, warnings, err := Read(dir, meta)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Read: %v %q", err, warnings)
	}
	req, warnings, err := Build(c)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Build: %v %q", err, warnings)
	}
	var names []string
	ids := map[string]bool{}
	for _, s := range req.Series {
		name := seriesName(s)
		names = append(names, name)
		if value(s.Labels, LabelServiceName) != "api" || value(s.Labels, LabelDelta) != "false" || value(s.Labels, LabelKind) != "run" {
			t.Errorf("%s: labels %s", name, pairs(s.Labels))
		}
		if len(s.Samples) != 1 {
			t.Fatalf("%s: %d samples, want 1", name, len(s.Samples))
		}
		id := s.Samples[0].ID
		if !uuidForm.MatchString(id) || ids[id] {
			t.Errorf("%s: ID %q is not a fresh version 5 UUID", name, id)
		}
		ids[id] = true
		p, err := pprofx.Parse(s.Samples[0].RawProfile, maxProfile)
		if err != nil {
			t.Fatalf("%s: the raw profile does not decode: %v", name, err)
		}
		if got := typesOf(p); !slices.Equal(got, wantTypes[name]) {
			t.Errorf("%s: sample types %v, want %v", name, got, wantTypes[name])
		}
		if len(p.Sample) == 0 {
			t.Errorf("%s: no samples", name)
		}
	}
	if want := []string{NameCPU, NameMemory, NameGoroutine, NameMutex, NameBlock}; !slices.Equal(names, want) {
		t.Fatalf("series %v, want %v", names, want)
	}

	// Memory: the window's allocations, the last snapshot's live heap.
	var heaps []Profile
	for _, p := range c.Profiles {
		if p.Kind == "heap" {
			heaps = append(heaps, p)
		}
	}
	if len(heaps) != 2 {
		t.Fatalf("%d heap snapshots read, want the first and the last", len(heaps))
	}
	first, last := mustParse(t, heaps[0].Data), mustParse(t, heaps[1].Data)
	if heaps[0].Time.After(heaps[1].Time) {
		first, last = last, first
	}
	mem := mustParse(t, req.Series[1].Samples[0].RawProfile)
	if got, want := total(mem, pprofx.InuseSpace), total(last, pprofx.InuseSpace); got != want {
		t.Errorf("memory inuse_space %d, want the last snapshot's %d", got, want)
	}
	if got, want := total(mem, pprofx.AllocSpace), total(last, pprofx.AllocSpace)-total(first, pprofx.AllocSpace); got < want || got == 0 {
		// ≥: a stack whose count went down (it cannot, in one process)
		// would be clamped to 0 rather than subtracted.
		t.Errorf("memory alloc_space %d, want the window's %d", got, want)
	}
	if total(mem, pprofx.AllocSpace) >= total(last, pprofx.AllocSpace) {
		t.Errorf("memory alloc_space %d is the process's lifetime total", total(mem, pprofx.AllocSpace))
	}
	if mem.TimeNanos != last.TimeNanos || mem.DurationNanos != last.TimeNanos-first.TimeNanos {
		t.Errorf("memory time %d+%d, want the last snapshot's time %d over the window %d",
			mem.TimeNanos, mem.DurationNanos, last.TimeNanos, last.TimeNanos-first.TimeNanos)
	}

	// The same capture builds the same push.
	again, _, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again.Series {
		if again.Series[i].Samples[0].ID != req.Series[i].Samples[0].ID {
			t.Errorf("%s: ID changed between two builds", names[i])
		}
	}
}

func TestBuild_MemoryIsTheWindow(t *testing.T) {
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	end := start.Add(30 * time.Second)
	// Values are alloc_objects, alloc_space, inuse_objects, inuse_space.
	first := heapProfile(t, start, map[string][4]int64{
		"main.keep": {10, 1000, 5, 500},
		"main.gone": {2, 200, 2, 200},
	})
	last := heapProfile(t, end, map[string][4]int64{
		"main.keep": {15, 1500, 3, 300}, // allocated 5 more, 2 freed
		"main.gone": {2, 200, 0, 0},     // freed, nothing new: no sample
		"main.new":  {4, 400, 4, 400},
	})
	tests := []struct {
		name  string
		heaps []Profile
		types []string
		want  map[string][]int64
	}{
		{"two snapshots", []Profile{{Kind: "heap", Path: "b", Time: end, Data: last}, {Kind: "heap", Path: "a", Time: start, Data: first}},
			wantTypes[NameMemory], map[string][]int64{"main.keep": {5, 500, 3, 300}, "main.new": {4, 400, 4, 400}}},
		{"one snapshot: its live heap alone", []Profile{{Kind: "heap", Path: "b", Time: end, Data: last}},
			[]string{"inuse_objects/count", "inuse_space/bytes"}, map[string][]int64{"main.keep": {3, 300}, "main.new": {4, 400}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, warnings, err := Build(Capture{Meta: Meta{Target: "http://h:1/debug/pprof/"}, Profiles: tt.heaps})
			if err != nil || len(warnings) > 0 || len(req.Series) != 1 || seriesName(req.Series[0]) != NameMemory {
				t.Fatalf("Build: %v %q %v", err, warnings, req)
			}
			p := mustParse(t, req.Series[0].Samples[0].RawProfile)
			if got := typesOf(p); !slices.Equal(got, tt.types) {
				t.Errorf("sample types %v, want %v", got, tt.types)
			}
			got := map[string][]int64{}
			for _, s := range p.Sample {
				got[s.Location[0].Line[0].Function.Name] = s.Value
			}
			if len(got) != len(tt.want) {
				t.Errorf("samples %v, want %v", got, tt.want)
			}
			for fn, v := range tt.want {
				if !slices.Equal(got[fn], v) {
					t.Errorf("%s: %v, want %v", fn, got[fn], v)
				}
			}
		})
	}
}

func TestBuild_LeavesOutWhatIsNotItsKind(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	heap := heapProfile(t, at, map[string][4]int64{"main.f": {1, 10, 1, 10}})
	meta := Meta{Target: "http://h:1/debug/pprof/"}
	tests := []struct {
		name     string
		profiles []Profile
		series   []string
		warning  string
		err      string
	}{
		{"a heap profile filed as cpu",
			[]Profile{{Kind: "cpu", Path: "profiles/cpu.pb.gz", Data: heap}, {Kind: "heap", Path: "profiles/heap-000.pb.gz", Data: heap}},
			[]string{NameMemory}, "process_cpu not pushed: profiles/cpu.pb.gz: no cpu samples", ""},
		{"not a profile",
			[]Profile{{Kind: "goroutine", Path: "profiles/goroutine.pb.gz", Data: []byte("goroutine 1 [running]:\n")}, {Kind: "heap", Data: heap}},
			[]string{NameMemory}, "goroutine not pushed: profiles/goroutine.pb.gz: not a pprof profile", ""},
		{"kinds heapscope does not push",
			[]Profile{{Kind: "trace", Data: []byte("go 1.26 trace")}, {Kind: "allocs-delta", Data: heap}},
			nil, "", "build push: the capture has no profile to push"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, warnings, err := Build(Capture{Meta: meta, Profiles: tt.profiles})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range req.Series {
				names = append(names, seriesName(s))
			}
			if !slices.Equal(names, tt.series) {
				t.Errorf("series %v, want %v", names, tt.series)
			}
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], tt.warning) {
				t.Errorf("warnings %q, want one starting %q", warnings, tt.warning)
			}
		})
	}
}

func TestRead_MissingProfileIsAWarning(t *testing.T) {
	dir := copyDir(t, realCapture(t))
	if err := os.Remove(filepath.Join(dir, "profiles", "cpu.pb.gz")); err != nil {
		t.Fatal(err)
	}
	c, warnings, err := Read(dir, Meta{Target: "http://h:1/debug/pprof/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || warnings[0] != "profiles/cpu.pb.gz: listed in result.json but missing; not pushed" {
		t.Errorf("warnings %q", warnings)
	}
	for _, p := range c.Profiles {
		if p.Kind == "cpu" {
			t.Error("a missing CPU profile was read")
		}
	}
	if _, _, err := Read(t.TempDir(), Meta{}); err == nil || !strings.Contains(err.Error(), "not a (finished) heapscope run") {
		t.Errorf("Read of a directory without a run: %v", err)
	}
}

func TestSelect_PicksTheSnapshotsAPushNeeds(t *testing.T) {
	dir := realCapture(t)
	c, _, err := Read(dir, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.Profiles {
		got = append(got, p.Kind+" "+p.Path)
	}
	// The first and last of three heap snapshots; the last of the
	// goroutine profiles taken with them.
	want := []string{"heap profiles/heap-000.pb.gz", "heap profiles/heap-002.pb.gz", "goroutine profiles/goroutine-002.pb.gz",
		"cpu profiles/cpu.pb.gz", "block profiles/block.pb.gz", "mutex profiles/mutex.pb.gz"}
	if !slices.Equal(got, want) {
		t.Errorf("selected\n  %q\nwant\n  %q", got, want)
	}
}

// heapProfile makes a gzipped heap profile with one single-frame sample
// per function.
func heapProfile(t *testing.T, at time.Time, samples map[string][4]int64) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:     512 << 10,
		TimeNanos:  at.UnixNano(),
	}
	names := make([]string, 0, len(samples))
	for name := range samples {
		names = append(names, name)
	}
	slices.Sort(names)
	for i, name := range names {
		fn := &profile.Function{ID: uint64(i + 1), Name: name, SystemName: name, Filename: "main.go"}
		loc := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: fn, Line: int64(10 + i)}}}
		p.Function, p.Location = append(p.Function, fn), append(p.Location, loc)
		v := samples[name]
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: v[:]})
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustParse(t *testing.T, data []byte) *profile.Profile {
	t.Helper()
	p, err := pprofx.Parse(data, maxProfile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func typesOf(p *profile.Profile) []string {
	var out []string
	for _, st := range p.SampleType {
		out = append(out, st.Type+"/"+st.Unit)
	}
	return out
}

func total(p *profile.Profile, sampleType string) int64 {
	i := index(p, sampleType)
	var n int64
	for _, s := range p.Sample {
		n += s.Value[i]
	}
	return n
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), filepath.Base(from))
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	return to
}
