package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/pprof/profile"
)

// alloc is one allocation site of a synthetic heap profile: objects and
// bytes allocated at file:line in function, called from the benchmark.
type alloc struct {
	function, file string
	line           int64
	objects, bytes int64
}

// heapProfile builds a profile as go test -memprofile writes them: the
// four heap sample types, alloc_space the default.
func heapProfile(allocs ...alloc) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		DefaultSampleType: "alloc_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            1,
	}
	runN := &profile.Function{ID: 1, Name: "testing.(*B).runN", Filename: "/usr/local/go/src/testing/benchmark.go"}
	caller := &profile.Function{ID: 2, Name: "example.com/p.BenchmarkProcess", Filename: "/src/p/p_test.go"}
	p.Function = append(p.Function, runN, caller)
	// The benchmark function, inlined into runN for the sake of the test.
	callerLoc := &profile.Location{ID: 1, Line: []profile.Line{{Function: caller, Line: 20}, {Function: runN, Line: 219}}}
	p.Location = append(p.Location, callerLoc)
	funcs := map[string]*profile.Function{}
	for _, a := range allocs {
		f := funcs[a.function+a.file]
		if f == nil {
			f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: a.function, Filename: a.file}
			funcs[a.function+a.file] = f
			p.Function = append(p.Function, f)
		}
		loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f, Line: a.line}}}
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{
			Location: []*profile.Location{loc, callerLoc},
			Value:    []int64{a.objects, a.bytes, 0, 0},
		})
	}
	return p
}

func TestAttribute(t *testing.T) {
	const oldRoot, newRoot = "/tmp/base/tree", "/home/dev/repo"
	// The change inserts two lines above Process's allocation, doubles it
	// and adds a second one; the standard library's site is unchanged.
	oldSrc := "package p\n\n" + strings.Repeat("\n", 7) + "\tb := make([]byte, n)\n"
	newSrc := "package p\n\n" + strings.Repeat("\n", 9) + "\tb := make([]byte, n)\n\n\tc := make([]byte, 32)\n"
	std := alloc{"bytes.growSlice", "/usr/local/go/src/bytes/buffer.go", 249, 50, 6400}
	old := Profiled{
		Profile: heapProfile(alloc{"example.com/p.Process", oldRoot + "/p/p.go", 10, 100, 1600}, std),
		Iters:   100, Root: oldRoot, Source: fstest.MapFS{"p/p.go": {Data: []byte(oldSrc)}},
	}
	new := Profiled{
		Profile: heapProfile(
			alloc{"example.com/p.Process", newRoot + "/p/p.go", 12, 100, 3200},
			alloc{"example.com/p.Process", newRoot + "/p/p.go", 14, 100, 3200},
			std),
		Iters: 100, Root: newRoot, Source: fstest.MapFS{"p/p.go": {Data: []byte(newSrc)}},
	}

	t.Run("lines matched by text", func(t *testing.T) {
		sites, err := Attribute(old, new, AttributeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []SiteDelta{
			{Function: "example.com/p.Process", File: "p/p.go", Line: 14, NewBytes: 32, NewObjects: 1},
			{Function: "example.com/p.Process", File: "p/p.go", Line: 12, OldLine: 10, OldBytes: 16, NewBytes: 32, OldObjects: 1, NewObjects: 1},
		}
		if !slices.Equal(sites, want) {
			t.Errorf("sites:\n%+v\nwant:\n%+v", sites, want)
		}
		if got := sites[1].Location(); got != "p/p.go:12 (was 10)" {
			t.Errorf("Location() = %q", got)
		}
	})
	t.Run("lines matched by number without sources", func(t *testing.T) {
		o, n := old, new
		o.Source, n.Source = nil, nil
		sites, err := Attribute(o, n, AttributeOptions{N: 10})
		if err != nil {
			t.Fatal(err)
		}
		want := []SiteDelta{
			{Function: "example.com/p.Process", File: "p/p.go", Line: 12, NewBytes: 32, NewObjects: 1},
			{Function: "example.com/p.Process", File: "p/p.go", Line: 14, NewBytes: 32, NewObjects: 1},
			{Function: "example.com/p.Process", File: "p/p.go", Line: 10, OldBytes: 16, OldObjects: 1},
		}
		if !slices.Equal(sites, want) {
			t.Errorf("sites:\n%+v\nwant:\n%+v", sites, want)
		}
	})
	t.Run("by objects and capped", func(t *testing.T) {
		o := old
		o.Profile = heapProfile(alloc{"example.com/p.Process", oldRoot + "/p/p.go", 10, 100, 1600}, alloc{"example.com/p.Small", oldRoot + "/p/q.go", 3, 100, 800})
		n := new
		n.Profile = heapProfile(alloc{"example.com/p.Process", newRoot + "/p/p.go", 12, 100, 6400}, alloc{"example.com/p.Small", newRoot + "/p/q.go", 3, 400, 3200})
		sites, err := Attribute(o, n, AttributeOptions{N: 1, ByObjects: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(sites) != 1 || sites[0].Function != "example.com/p.Small" || sites[0].NewObjects != 4 {
			t.Errorf("sites %+v, want Small alone, with 4 objects per op", sites)
		}
	})
	t.Run("focus on the benchmark", func(t *testing.T) {
		// A one-off allocation outside the benchmark, in the new binary
		// only: flag parsing, with no benchmark frame on its stack.
		n := new
		n.Profile = heapProfile(alloc{"example.com/p.Process", newRoot + "/p/p.go", 12, 100, 1600}, std)
		flagFn := &profile.Function{ID: 100, Name: "flag.(*FlagSet).Var", Filename: "/usr/local/go/src/flag/flag.go"}
		flagLoc := &profile.Location{ID: 100, Line: []profile.Line{{Function: flagFn, Line: 1036}}}
		n.Profile.Function = append(n.Profile.Function, flagFn)
		n.Profile.Location = append(n.Profile.Location, flagLoc)
		n.Profile.Sample = append(n.Profile.Sample, &profile.Sample{Location: []*profile.Location{flagLoc}, Value: []int64{10, 1792, 0, 0}})
		if err := n.Profile.CheckValid(); err != nil {
			t.Fatal(err)
		}
		all, err := Attribute(old, n, AttributeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 || all[0].Function != "flag.(*FlagSet).Var" {
			t.Errorf("without focus: %+v, want the one-off allocation alone", all)
		}
		focused, err := Attribute(old, n, AttributeOptions{Focus: BenchmarkFocus()})
		if err != nil {
			t.Fatal(err)
		}
		if len(focused) != 0 {
			t.Errorf("with focus: %+v, want nothing: Process allocates the same on both sides", focused)
		}
	})
	t.Run("no iterations", func(t *testing.T) {
		o := old
		o.Iters = 0
		if _, err := Attribute(o, new, AttributeOptions{}); err == nil || !strings.Contains(err.Error(), "iteration counts") {
			t.Errorf("error %v, want one about the iteration counts", err)
		}
	})
}

// profileBytes is a profile as go test -memprofile writes it to its file.
func profileBytes(t testing.TB, p *profile.Profile) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBenchmarkFocus(t *testing.T) {
	re := BenchmarkFocus()
	for name, want := range map[string]bool{
		"testing.(*B).runN":              true,
		"testing.(*B).RunParallel.func1": true,
		"testing.(*B).RunParallel":       true,
		"testing.(*B).run1":              false,
		"testing.(*B).run1.func1":        false,
		"testing.(*B).runNow":            false,
		"flag.(*FlagSet).Var":            false,
		"example.com/testing.(*B).runN":  false,
	} {
		if got := re.MatchString(name); got != want {
			t.Errorf("BenchmarkFocus matches %s = %v, want %v", name, got, want)
		}
	}
}
