package pprofx

import (
	"testing"

	"github.com/google/pprof/profile"
)

func TestWithoutProfiler(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	app, served, gz := fn(1, "main.handle"), fn(2, "net/http/pprof.handler.ServeHTTP"), fn(3, "compress/flate.NewWriter")
	build := fn(4, "runtime/pprof.(*profileBuilder).build")
	loc := func(id uint64, fns ...*profile.Function) *profile.Location {
		l := &profile.Location{ID: id}
		for _, f := range fns {
			l.Line = append(l.Line, profile.Line{Function: f})
		}
		return l
	}
	lApp, lServed, lGz := loc(1, app), loc(2, served), loc(3, gz)
	lInlined := loc(4, gz, build) // flate inlined into the profile builder
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}},
		Function:   []*profile.Function{app, served, gz, build},
		Location:   []*profile.Location{lApp, lServed, lGz, lInlined},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lApp}, Value: []int64{100}},
			{Location: []*profile.Location{lGz, lServed}, Value: []int64{40}},
			{Location: []*profile.Location{lInlined, lApp}, Value: []int64{7}},
			{Location: []*profile.Location{lGz, lApp}, Value: []int64{3}},
		},
	}
	got, dropped := WithoutProfiler(p)
	if len(got.Sample) != 2 || got.Sample[0].Value[0] != 100 || got.Sample[1].Value[0] != 3 {
		t.Errorf("kept samples %v, want the application's 100 and 3", got.Sample)
	}
	if dropped[0] != 47 {
		t.Errorf("dropped %d, want 47 (served profile and inlined builder)", dropped[0])
	}
	if len(p.Sample) != 4 {
		t.Errorf("input modified: %d samples", len(p.Sample))
	}
}

func TestWithoutProfiler_RealProfileKeepsApplication(t *testing.T) {
	p := loadProfile(t, "heap-end.pb.gz")
	got, dropped := WithoutProfiler(p)
	var before, after int64
	si := indexOf(p, "alloc_space")
	for _, s := range p.Sample {
		before += s.Value[si]
	}
	for _, s := range got.Sample {
		after += s.Value[si]
	}
	if after+dropped[si] != before {
		t.Errorf("kept %d + dropped %d != total %d", after, dropped[si], before)
	}
	if after == 0 {
		t.Error("everything was dropped")
	}
}

func BenchmarkWithoutProfiler(b *testing.B) {
	p := loadProfile(b, "heap-end.pb.gz")
	b.ReportAllocs()
	for b.Loop() {
		WithoutProfiler(p)
	}
}
