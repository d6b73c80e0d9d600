package flame

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/goldenfile"
	"github.com/heapscope/heapscope/internal/pprofx"
)

// TestBuild_Golden pins the trees and folded stacks of the checked-in
// profiles. Run with -update after regenerating them.
func TestBuild_Golden(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		opts    Options
	}{
		{name: "heap-before-alloc_space", profile: "heap-before.pb.gz", opts: Options{Sample: "alloc_space"}},
		{name: "heap-before-all-types", profile: "heap-before.pb.gz", opts: Options{AllTypes: true, MinShare: 0.01}},
		{name: "heap-after-inuse_space", profile: "heap-after.pb.gz", opts: Options{Sample: "inuse_space", Focus: regexp.MustCompile(`^main\.`)}},
		{name: "cpu", profile: "cpu.pb.gz", opts: Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := build(t, loadStacks(t, tt.profile), tt.opts)
			checkSums(t, tree)
			goldenfile.Check(t, "testdata/tree-"+tt.name+".golden", []byte(dumpTree(tree)))
			var buf bytes.Buffer
			if err := WriteFolded(&buf, tree, ""); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, "testdata/folded-"+tt.name+".golden", buf.Bytes())
		})
	}
}

func TestBuild_FrameSums(t *testing.T) {
	for _, name := range []string{"heap-before.pb.gz", "heap-after.pb.gz", "cpu.pb.gz"} {
		s := loadStacks(t, name)
		for _, opts := range []Options{
			{},
			{AllTypes: true},
			{AllTypes: true, MinShare: 0.02},
			{MinShare: 0.001},
			{Ignore: regexp.MustCompile(`json`)},
			{Focus: regexp.MustCompile(`^runtime\.`), MinShare: 0.05},
		} {
			tree := build(t, s, opts)
			checkSums(t, tree)
			typ, _ := s.SampleIndex(opts.Sample)
			if opts.Focus == nil && opts.Ignore == nil {
				if got, want := tree.Total(0, tree.Default), s.Total(typ); got != want {
					t.Errorf("%s %+v: root total %d, want the profile's %d", name, opts, got, want)
				}
			}
			if opts.MinShare == 0 {
				for n := range tree.Nodes {
					for c := range tree.Types {
						if tree.Elided(n, c) != 0 {
							t.Fatalf("%s: node %d elided %d without pruning", name, n, tree.Elided(n, c))
						}
					}
				}
			}
		}
	}
}

// synthetic is a profile with the shapes Build must handle: inlining,
// several lines of one function on one path, recursion, a location
// without lines, a sample without a stack, and kinds of code.
func synthetic() *profile.Profile {
	fn := func(id uint64, name, file string) *profile.Function {
		return &profile.Function{ID: id, Name: name, Filename: file}
	}
	fMain := fn(1, "main.main", "main.go")
	fHandle := fn(2, "github.com/acme/app/internal/server.(*S).handle", "internal/server/s.go")
	fSmall := fn(3, "github.com/acme/app/internal/server.small", "internal/server/s.go")
	fJSON := fn(4, "encoding/json.Marshal", "encoding/json/encode.go")
	fMalloc := fn(5, "runtime.mallocgc", "runtime/malloc.go")
	fRec := fn(6, "main.rec", "main.go")
	fDep := fn(7, "github.com/other/lib.Do", "lib.go")
	loc := func(id uint64, lines ...profile.Line) *profile.Location {
		return &profile.Location{ID: id, Address: 0x1000 + id, Line: lines}
	}
	main := loc(1, profile.Line{Function: fMain, Line: 10})
	handle20 := loc(2, profile.Line{Function: fHandle, Line: 20})
	handle21 := loc(3, profile.Line{Function: fHandle, Line: 21})
	// small inlined into handle at line 22.
	smallInHandle := loc(4, profile.Line{Function: fSmall, Line: 5}, profile.Line{Function: fHandle, Line: 22})
	json := loc(5, profile.Line{Function: fJSON, Line: 100})
	malloc := loc(6, profile.Line{Function: fMalloc, Line: 1})
	rec := loc(7, profile.Line{Function: fRec, Line: 30})
	bare := loc(8)
	dep := loc(9, profile.Line{Function: fDep, Line: 3})
	s := func(v int64, locs ...*profile.Location) *profile.Sample {
		return &profile.Sample{Location: locs, Value: []int64{v, v * 10}}
	}
	return &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		DefaultSampleType: "alloc_space",
		Sample: []*profile.Sample{
			s(5, json, handle20, main),
			s(3, malloc, json, handle21, main), // handle at another line: the same frame
			s(2, smallInHandle, main),
			s(1, handle20, main), // self of handle
			s(4, rec, rec, rec, main),
			s(1, bare, main),
			s(2),
			s(6, dep, main),
			s(0, json, main), // zero in every type: left out
		},
		Location: []*profile.Location{main, handle20, handle21, smallInHandle, json, malloc, rec, bare, dep},
		Function: []*profile.Function{fMain, fHandle, fSmall, fJSON, fMalloc, fRec, fDep},
	}
}

func TestBuild_Synthetic(t *testing.T) {
	tree := build(t, stacksOf(t, synthetic()), Options{AllTypes: true, Module: "github.com/acme/app"})
	checkSums(t, tree)
	want := `types: alloc_objects/count alloc_space/bytes*
root total=[24 240] self=[2 20]
 main.main main.go:10 [application] total=[22 220] self=[0 0]
  0x1008 ? [unknown] total=[1 10] self=[1 10]
  github.com/acme/app/internal/server.(*S).handle internal/server/s.go:20 (+2 lines) [application] total=[11 110] self=[1 10]
   encoding/json.Marshal encoding/json/encode.go:100 [standard library] total=[8 80] self=[5 50]
    runtime.mallocgc runtime/malloc.go:1 [runtime] total=[3 30] self=[3 30]
   github.com/acme/app/internal/server.small internal/server/s.go:5 [application] total=[2 20] self=[2 20]
  github.com/other/lib.Do lib.go:3 [dependency] total=[6 60] self=[6 60]
  main.rec main.go:30 [application] total=[4 40] self=[0 0]
   main.rec main.go:30 [application] total=[4 40] self=[0 0]
    main.rec main.go:30 [application] total=[4 40] self=[4 40]
`
	if got := dumpTree(tree); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	// handle at lines 20 (5+1), 21 (3) and 22 (2): line 20 carries most.
	for n := range tree.Nodes {
		if strings.HasSuffix(tree.Name(n), "handle") && (tree.Nodes[n].Line != 20 || tree.Nodes[n].Lines != 3) {
			t.Errorf("handle frame at line %d with %d lines, want 20 and 3", tree.Nodes[n].Line, tree.Nodes[n].Lines)
		}
	}
	if got, want := tree.Path(6), []string{"main.main", "github.com/acme/app/internal/server.(*S).handle", "github.com/acme/app/internal/server.small"}; !slices.Equal(got, want) {
		t.Errorf("Path(6) = %v, want %v", got, want)
	}
}

func TestBuild_Options(t *testing.T) {
	s := stacksOf(t, synthetic())
	names := func(tree *Tree) []string {
		var out []string
		for n := 1; n < len(tree.Nodes); n++ {
			out = append(out, ShortName(tree.Name(n)))
		}
		return out
	}
	tests := []struct {
		name      string
		opts      Options
		wantNames []string
		wantTotal int64 // of the root, first type
		wantTypes []string
	}{
		{name: "default sample only", opts: Options{}, wantTypes: []string{"alloc_space"}, wantTotal: 240,
			wantNames: []string{"main.main", "0x1008", "server.(*S).handle", "json.Marshal", "runtime.mallocgc", "server.small", "lib.Do", "main.rec", "main.rec", "main.rec"}},
		{name: "sample picked", opts: Options{Sample: "alloc_objects"}, wantTypes: []string{"alloc_objects"}, wantTotal: 24,
			wantNames: []string{"main.main", "0x1008", "server.(*S).handle", "json.Marshal", "runtime.mallocgc", "server.small", "lib.Do", "main.rec", "main.rec", "main.rec"}},
		{name: "focus keeps matching samples", opts: Options{Focus: regexp.MustCompile(`json`)}, wantTypes: []string{"alloc_space"}, wantTotal: 80,
			wantNames: []string{"main.main", "server.(*S).handle", "json.Marshal", "runtime.mallocgc"}},
		{name: "focus on a file's path", opts: Options{Focus: regexp.MustCompile(`json/encode\.go`)}, wantTypes: []string{"alloc_space"}, wantTotal: 80,
			wantNames: []string{"main.main", "server.(*S).handle", "json.Marshal", "runtime.mallocgc"}},
		{name: "ignore drops matching samples", opts: Options{Ignore: regexp.MustCompile(`handle|rec`)}, wantTypes: []string{"alloc_space"}, wantTotal: 90,
			wantNames: []string{"main.main", "0x1008", "lib.Do"}},
		{name: "min share prunes", opts: Options{MinShare: 0.1}, wantTypes: []string{"alloc_space"}, wantTotal: 240,
			wantNames: []string{"main.main", "server.(*S).handle", "json.Marshal", "runtime.mallocgc", "lib.Do", "main.rec", "main.rec", "main.rec"}},
		{name: "all types", opts: Options{AllTypes: true}, wantTypes: []string{"alloc_objects", "alloc_space"}, wantTotal: 24,
			wantNames: []string{"main.main", "0x1008", "server.(*S).handle", "json.Marshal", "runtime.mallocgc", "server.small", "lib.Do", "main.rec", "main.rec", "main.rec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := build(t, s, tt.opts)
			checkSums(t, tree)
			if got := names(tree); !slices.Equal(got, tt.wantNames) {
				t.Errorf("frames %v, want %v", got, tt.wantNames)
			}
			if got := tree.Total(0, 0); got != tt.wantTotal {
				t.Errorf("root total %d, want %d", got, tt.wantTotal)
			}
			var types []string
			for _, st := range tree.Types {
				types = append(types, st.Name)
			}
			if !slices.Equal(types, tt.wantTypes) {
				t.Errorf("types %v, want %v", types, tt.wantTypes)
			}
		})
	}
}

func TestBuild_Errors(t *testing.T) {
	s := stacksOf(t, synthetic())
	tests := []struct {
		name    string
		s       *pprofx.Stacks
		opts    Options
		wantErr string
	}{
		{name: "no stacks", s: nil, wantErr: "no profile"},
		{name: "unknown sample", s: s, opts: Options{Sample: "cpu"}, wantErr: `sample type "cpu" not in profile; it has alloc_objects, alloc_space`},
		{name: "negative share", s: s, opts: Options{MinShare: -0.1}, wantErr: "not in [0, 1)"},
		{name: "share of one", s: s, opts: Options{MinShare: 1}, wantErr: "not in [0, 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.s, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestBuild_focusMatchingNothing: a focus that matches no function is an
// error that names the functions closest to it, not an empty graph.
func TestBuild_focusMatchingNothing(t *testing.T) {
	_, err := Build(stacksOf(t, synthetic()), Options{Focus: regexp.MustCompile(`jsonn`)})
	var nm *NoMatchError
	if !errors.As(err, &nm) || len(nm.Closest) == 0 || nm.Closest[0] != "json.Marshal" || !strings.Contains(err.Error(), `focus "jsonn" matches no function`) {
		t.Errorf("error %v, want a NoMatchError naming json.Marshal first", err)
	}
}

func TestTree_Prune(t *testing.T) {
	s := loadStacks(t, "heap-before.pb.gz")
	full := build(t, s, Options{AllTypes: true})
	for _, share := range []float64{0, 0.001, 0.01, 0.2} {
		pruned, err := full.Prune(share)
		if err != nil {
			t.Fatal(err)
		}
		checkSums(t, pruned)
		// Pruning after the build gives the tree a pruning build gives.
		if got, want := dumpTree(pruned), dumpTree(build(t, s, Options{AllTypes: true, MinShare: share})); got != want {
			t.Errorf("Prune(%v) differs from Build with MinShare %v", share, share)
		}
	}
	if _, err := full.Prune(1.5); err == nil {
		t.Error("Prune(1.5) succeeded")
	}
}

func TestTree_TypeIndex(t *testing.T) {
	tree := build(t, stacksOf(t, synthetic()), Options{AllTypes: true})
	if i, err := tree.TypeIndex(""); err != nil || i != 1 {
		t.Errorf("TypeIndex(\"\") = %d, %v; want the default, 1", i, err)
	}
	if i, err := tree.TypeIndex("alloc_objects"); err != nil || i != 0 {
		t.Errorf("TypeIndex(alloc_objects) = %d, %v; want 0", i, err)
	}
	if _, err := tree.TypeIndex("cpu"); err == nil || !strings.Contains(err.Error(), "it has alloc_objects, alloc_space") {
		t.Errorf("TypeIndex(cpu) error %v, want it to list the types", err)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name, module string
		want         Kind
	}{
		{name: "main.main", want: KindApp},
		{name: "main.(*server).handle.func1", want: KindApp},
		{name: "runtime.mallocgc", want: KindRuntime},
		{name: "internal/runtime/maps.(*Map).putSlotSmall", want: KindRuntime},
		{name: "runtime/pprof.writeHeap", want: KindStd},
		{name: "encoding/json.Marshal", want: KindStd},
		{name: "fmt.Sprintf", want: KindStd},
		{name: "vendor/golang.org/x/net/http2/hpack.(*Decoder).Write", want: KindStd},
		{name: "github.com/acme/app/internal/x.F", want: KindApp},
		{name: "github.com/acme/app/internal/x.F", module: "github.com/acme/app", want: KindApp},
		{name: "github.com/acme/app.F", module: "github.com/acme/app", want: KindApp},
		{name: "github.com/acme/apple.F", module: "github.com/acme/app", want: KindDependency},
		{name: "golang.org/x/sync/errgroup.(*Group).Go", module: "github.com/acme/app", want: KindDependency},
		{name: "slices.SortFunc[go.shape.[]github.com/acme/app.T]", module: "github.com/acme/app", want: KindStd},
		{name: "0x4a5b6c", want: KindUnknown},
	}
	for _, tt := range tests {
		if got := classify(tt.name, tt.module); got != tt.want {
			t.Errorf("classify(%q, %q) = %s, want %s", tt.name, tt.module, got, tt.want)
		}
	}
}

func TestShortName(t *testing.T) {
	tests := map[string]string{
		"main.main": "main.main",
		"github.com/heapscope/heapscope/internal/run.(*collector).addTop": "run.(*collector).addTop",
		"gopkg.in/yaml.v3.(*decoder).unmarshal":                           "yaml.v3.(*decoder).unmarshal",
		"slices.SortFunc[go.shape.[]github.com/acme/app.T]":               "slices.SortFunc[go.shape.[]github.com/acme/app.T]",
		"net/http.(*conn).serve":                                          "http.(*conn).serve",
	}
	for in, want := range tests {
		if got := ShortName(in); got != want {
			t.Errorf("ShortName(%q) = %q, want %q", in, got, want)
		}
	}
}

// bigStacks is a synthetic profile of n samples of 20 to 60 frames drawn
// from a few hundred functions, with skewed choices near the root like a
// service's, for the benchmarks.
func bigStacks(tb testing.TB, n int) *pprofx.Stacks {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	const nfn = 300
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}}}
	for i := range nfn {
		f := &profile.Function{ID: uint64(i + 1), Name: "github.com/acme/app/pkg" + string(rune('a'+i%26)) + ".F" + strings.Repeat("x", i%7) + string(rune('A'+i/26)), Filename: "f.go"}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: f, Line: int64(i)}}})
	}
	for range n {
		depth := 20 + rng.IntN(41)
		locs := make([]*profile.Location, depth)
		for d := range depth {
			var i int
			if d < 6 {
				i = int(rng.ExpFloat64()*3) % nfn
			} else {
				i = rng.IntN(nfn)
			}
			locs[depth-1-d] = p.Location[i]
		}
		v := int64(1 + rng.IntN(100))
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{v, v * 64}})
	}
	return stacksOf(tb, p)
}

func BenchmarkBuild(b *testing.B) {
	small := loadStacks(b, "heap-before.pb.gz")
	big := bigStacks(b, 50000)
	for _, bc := range []struct {
		name string
		s    *pprofx.Stacks
		opts Options
	}{
		{name: "small", s: small, opts: Options{AllTypes: true}},
		{name: "50k-stacks", s: big, opts: Options{}},
		{name: "50k-stacks-svg", s: big, opts: Options{MinShare: 0.0001}},
		{name: "50k-stacks-all-types", s: big, opts: Options{AllTypes: true, MinShare: 0.00001}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var nodes int
			for b.Loop() {
				tree, err := Build(bc.s, bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				nodes = len(tree.Nodes)
			}
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}
