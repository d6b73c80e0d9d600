package pprofx

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func TestAllocDelta(t *testing.T) {
	sites := loadSites(t)
	start := loadProfile(t, "heap-start.pb.gz")
	end := loadProfile(t, "heap-end.pb.gz")
	startBytes := encode(t, start)
	endBytes := encode(t, end)

	d, err := AllocDelta(start, end)
	if err != nil {
		t.Fatalf("AllocDelta: %v", err)
	}

	if !bytes.Equal(encode(t, start), startBytes) || !bytes.Equal(encode(t, end), endBytes) {
		t.Error("AllocDelta modified its inputs")
	}
	if got, want := Types(d), []string{AllocObjects, AllocSpace}; !slices.Equal(got, want) {
		t.Errorf("sample types %v, want %v", got, want)
	}
	if d.TimeNanos != start.TimeNanos {
		t.Errorf("TimeNanos = %d, want start's %d", d.TimeNanos, start.TimeNanos)
	}
	if want := end.TimeNanos - start.TimeNanos; d.DurationNanos != want || want <= 0 {
		t.Errorf("DurationNanos = %d, want %d (> 0)", d.DurationNanos, want)
	}
	if err := d.CheckValid(); err != nil {
		t.Errorf("delta is not a valid profile: %v", err)
	}
	for i, s := range d.Sample {
		if len(s.Value) != 2 {
			t.Fatalf("sample %d has %d values, want 2", i, len(s.Value))
		}
		if s.Value[0] == 0 && s.Value[1] == 0 {
			t.Errorf("sample %d is zero in both values", i)
		}
	}

	for _, sample := range []string{AllocSpace, AllocObjects} {
		tab, err := Top(d, TopOptions{Sample: sample})
		if err != nil {
			t.Fatalf("Top(%s): %v", sample, err)
		}
		want := sites.Burst.Bytes
		if sample == AllocObjects {
			want = sites.Burst.Objects
		}
		// MemProfileRate was 1: the burst is recorded exactly.
		b, ok := findSite(tab, sites.Burst.Function, sites.Burst.File, sites.Burst.Line)
		if !ok || b.Flat != want {
			t.Errorf("%s: burst site %s:%d flat = %d (found %v), want %d", sample, sites.Burst.File, sites.Burst.Line, b.Flat, ok, want)
		}
		if sample == AllocSpace && tab.Sites[0].Function != sites.Burst.Function {
			t.Errorf("%s: top site is %s, want the burst %s", sample, tab.Sites[0].Function, sites.Burst.Function)
		}
		for _, before := range []genSite{sites.Warmup, sites.Inlined} {
			if s, ok := findSite(tab, before.Function, before.File, before.Line); ok {
				t.Errorf("%s: allocation made before the window shows in the delta: %+v", sample, s)
			}
		}
	}

	// The whole delta is what end has more than start.
	for _, sample := range []string{AllocSpace, AllocObjects} {
		if got, want := sumValues(t, d, sample), sumValues(t, end, sample)-sumValues(t, start, sample); got != want {
			t.Errorf("%s: delta sums to %d, want end - start = %d", sample, got, want)
		}
	}
}

func TestAllocDelta_selfIsEmpty(t *testing.T) {
	p := loadProfile(t, "heap-end.pb.gz")
	d, err := AllocDelta(p, p)
	if err != nil {
		t.Fatalf("AllocDelta: %v", err)
	}
	if len(d.Sample) != 0 {
		t.Errorf("delta of a profile with itself has %d samples, want 0", len(d.Sample))
	}
	if d.DurationNanos != 0 {
		t.Errorf("DurationNanos = %d, want 0", d.DurationNanos)
	}
}

func TestAllocDelta_errors(t *testing.T) {
	heap := loadProfile(t, "heap-start.pb.gz")
	later := loadProfile(t, "heap-end.pb.gz")
	cpu := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
	}
	twoColumn := heap.Copy()
	twoColumn.SampleType = twoColumn.SampleType[:2]
	for _, s := range twoColumn.Sample {
		s.Value = s.Value[:2]
	}
	noPeriod := heap.Copy()
	noPeriod.PeriodType = nil
	otherUnit := heap.Copy()
	otherUnit.SampleType[1] = &profile.ValueType{Type: AllocSpace, Unit: "kilobytes"}

	tests := []struct {
		name       string
		start, end *profile.Profile
		want       string
	}{
		{name: "nil", start: nil, end: heap, want: "compute allocation delta: nil profile"},
		{name: "start not heap", start: cpu, end: heap, want: "compute allocation delta: start profile: not a heap profile: sample types are samples/count, cpu/nanoseconds, want alloc_objects and alloc_space"},
		{name: "end not heap", start: heap, end: cpu, want: "end profile: not a heap profile"},
		{name: "different sample types", start: heap, end: twoColumn, want: "incompatible sample types"},
		{name: "different units", start: heap, end: otherUnit, want: "incompatible sample types"},
		{name: "missing period type", start: heap, end: noPeriod, want: "incompatible period types space/bytes and none"},
		{name: "swapped", start: later, end: heap, want: "is older than start profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := AllocDelta(tt.start, tt.end)
			if err == nil {
				t.Fatalf("AllocDelta succeeded with %d samples, want an error", len(d.Sample))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestAllocDelta_synthetic checks the arithmetic on a hand-built pair:
// columns in an unusual order, a site that only grew in inuse, and one
// that stopped allocating.
func TestAllocDelta_synthetic(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "main.f", Filename: "f.go"}
	locA := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 10}}}
	locB := &profile.Location{ID: 2, Line: []profile.Line{{Function: fn, Line: 20}}}
	build := func(time int64, a, b []int64) *profile.Profile {
		return &profile.Profile{
			SampleType: []*profile.ValueType{
				{Type: InuseSpace, Unit: "bytes"}, {Type: AllocSpace, Unit: "bytes"},
				{Type: InuseObjects, Unit: "count"}, {Type: AllocObjects, Unit: "count"},
			},
			PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
			Period:     512 * 1024,
			TimeNanos:  time,
			Sample: []*profile.Sample{
				{Location: []*profile.Location{locA}, Value: a},
				{Location: []*profile.Location{locB}, Value: b},
			},
			Location: []*profile.Location{locA, locB},
			Function: []*profile.Function{fn},
		}
	}
	start := build(1e9, []int64{100, 1000, 1, 10}, []int64{0, 500, 0, 5})
	end := build(3e9, []int64{900, 4000, 9, 40}, []int64{64, 500, 1, 5})

	d, err := AllocDelta(start, end)
	if err != nil {
		t.Fatalf("AllocDelta: %v", err)
	}
	if d.DurationNanos != 2e9 || d.TimeNanos != 1e9 {
		t.Errorf("TimeNanos, DurationNanos = %d, %d, want 1e9, 2e9", d.TimeNanos, d.DurationNanos)
	}
	if d.DefaultSampleType != AllocSpace {
		t.Errorf("DefaultSampleType = %q, want %q", d.DefaultSampleType, AllocSpace)
	}
	if len(d.Sample) != 1 {
		t.Fatalf("delta has %d samples, want 1 (line 20 allocated nothing)", len(d.Sample))
	}
	s := d.Sample[0]
	if got := s.Location[0].Line[0].Line; got != 10 {
		t.Errorf("sample at line %d, want 10", got)
	}
	if want := []int64{30, 3000}; !slices.Equal(s.Value, want) {
		t.Errorf("values %v, want %v (alloc_objects, alloc_space)", s.Value, want)
	}
	if start.Sample[0].Value[1] != 1000 || len(start.SampleType) != 4 {
		t.Error("AllocDelta modified start")
	}
}

func encode(t *testing.T, p *profile.Profile) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := p.WriteUncompressed(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
