package pprofx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

// input is one profile given to a Merger in the tests.
type input struct {
	name string
	data []byte
}

// pprofMerge merges the inputs with profile.Merge and returns its result
// as written and read back by the profile package, the form in which
// the Merger's output is compared with it.
func pprofMerge(t testing.TB, inputs []input) *profile.Profile {
	t.Helper()
	var ps []*profile.Profile
	for _, in := range inputs {
		p, err := Parse(in.data, DefaultMaxDecompressed)
		if err != nil {
			t.Fatalf("parse %s: %v", in.name, err)
		}
		ps = append(ps, p)
	}
	merged, err := profile.Merge(ps)
	if err != nil {
		t.Fatalf("profile.Merge: %v", err)
	}
	return roundTrip(t, merged)
}

func roundTrip(t testing.TB, p *profile.Profile) *profile.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// merge merges the inputs with a Merger and returns its profile as
// profile.Parse reads it.
func merge(t testing.TB, inputs []input) (*Merger, *profile.Profile) {
	t.Helper()
	m := NewMerger(MergeOptions{})
	for _, in := range inputs {
		if err := m.Add(in.name, bytes.NewReader(in.data)); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	return m, written(t, m)
}

func written(t testing.TB, m *Merger) *profile.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := m.WriteProfile(&buf); err != nil {
		t.Fatalf("WriteProfile: %v", err)
	}
	if !isGzip(buf.Bytes()) {
		t.Fatal("WriteProfile's output is not gzipped")
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("parse the merged profile: %v", err)
	}
	return p
}

// dumpProfile prints everything a profile holds, ids included, one
// element a line, labels in key order.
func dumpProfile(p *profile.Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "types")
	for _, st := range p.SampleType {
		fmt.Fprintf(&b, " %s/%s", st.Type, st.Unit)
	}
	fmt.Fprintf(&b, "\ndefault %q period %v %d time %d duration %d\n", p.DefaultSampleType, p.PeriodType, p.Period, p.TimeNanos, p.DurationNanos)
	fmt.Fprintf(&b, "drop %q keep %q doc %q comments %q\n", p.DropFrames, p.KeepFrames, p.DocURL, p.Comments)
	for _, s := range p.Sample {
		fmt.Fprintf(&b, "sample %v [", s.Value)
		for _, l := range s.Location {
			fmt.Fprintf(&b, " %d", l.ID)
		}
		fmt.Fprintf(&b, " ]")
		for _, k := range sortedKeys(s.Label) {
			fmt.Fprintf(&b, " %s=%q", k, s.Label[k])
		}
		for _, k := range sortedKeys(s.NumLabel) {
			fmt.Fprintf(&b, " %s=%v%q", k, s.NumLabel[k], s.NumUnit[k])
		}
		b.WriteByte('\n')
	}
	for _, l := range p.Location {
		var mapping uint64
		if l.Mapping != nil {
			mapping = l.Mapping.ID
		}
		fmt.Fprintf(&b, "loc %d mapping %d %#x folded %v", l.ID, mapping, l.Address, l.IsFolded)
		for _, ln := range l.Line {
			fmt.Fprintf(&b, " %d:%d:%d", ln.Function.ID, ln.Line, ln.Column)
		}
		b.WriteByte('\n')
	}
	for _, f := range p.Function {
		fmt.Fprintf(&b, "func %d %q %q %q %d\n", f.ID, f.Name, f.SystemName, f.Filename, f.StartLine)
	}
	for _, m := range p.Mapping {
		fmt.Fprintf(&b, "mapping %d %#x-%#x %#x %q %q %v %v %v %v\n", m.ID, m.Start, m.Limit, m.Offset, m.File, m.BuildID,
			m.HasFunctions, m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// functionTotals sums each sample type by function, flat (the leaf's
// innermost function) and cumulative (every function of the stack once).
func functionTotals(p *profile.Profile) map[string][]int64 {
	out := map[string][]int64{}
	addTo := func(key string, vals []int64) {
		sums := out[key]
		if sums == nil {
			sums = make([]int64, len(vals))
			out[key] = sums
		}
		for i, v := range vals {
			sums[i] += v
		}
	}
	for _, s := range p.Sample {
		addTo("total", s.Value)
		seen := map[string]bool{}
		for i, l := range s.Location {
			for j, ln := range l.Line {
				if i == 0 && j == 0 {
					addTo("flat "+ln.Function.Name, s.Value)
				}
				if !seen[ln.Function.Name] {
					seen[ln.Function.Name] = true
					addTo("cum "+ln.Function.Name, s.Value)
				}
			}
		}
	}
	return out
}

// testInputs returns named sets of profiles to merge: real ones written by
// the Go runtime (the checked-in heap profiles, and this process's own of
// every kind), and made-up ones for what the runtime never writes.
func testInputs(t *testing.T) map[string][]input {
	t.Helper()
	start := input{"heap-start.pb.gz", readTestdata(t, "heap-start.pb.gz")}
	end := input{"heap-end.pb.gz", readTestdata(t, "heap-end.pb.gz")}
	cases := map[string][]input{
		"one heap profile":               {end},
		"heap start and end":             {start, end},
		"heap end, start, end, plain":    {end, start, {"heap-end.pb", gunzipBytes(t, end.data)}},
		"hand-encoded twice and gzipped": {{"hand", handEncoded()}, {"hand.gz", gzipBytes(t, handEncoded())}},
		"legacy text": {
			{"a.txt", []byte("heap profile: 1: 16 [1: 16] @ heap/1048576\n1: 16 [1: 16] @ 0x1 0x2\n")},
			{"b.txt", []byte("heap profile: 2: 48 [2: 48] @ heap/1048576\n2: 48 [2: 48] @ 0x1 0x3\n")},
		},
		"labeled goroutines": {
			{"g5", goroutinesWithLabels(t, 5)},
			{"g30", goroutinesWithLabels(t, 30)},
			{"g1", goroutinesWithLabels(t, 1)},
		},
	}
	for _, kind := range []string{"heap", "allocs", "goroutine", "threadcreate", "block", "mutex"} {
		var ins []input
		for i := range 3 {
			runtime.GC()
			var buf bytes.Buffer
			if err := pprof.Lookup(kind).WriteTo(&buf, 0); err != nil {
				t.Fatal(err)
			}
			ins = append(ins, input{fmt.Sprintf("%s-%d", kind, i), buf.Bytes()})
		}
		cases["runtime "+kind] = ins
	}

	// Headers that differ: times, durations, periods, comments, default
	// types, documentation links.
	header := func(name string, edit func(p *profile.Profile)) input {
		p := loadProfile(t, "heap-start.pb.gz")
		edit(p)
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return input{name, buf.Bytes()}
	}
	cases["headers"] = []input{
		header("h1", func(p *profile.Profile) {
			p.TimeNanos, p.DurationNanos, p.Period = 2000, 10, 512
			p.Comments = []string{"first", "shared"}
			p.DropFrames = "runtime\\..*"
		}),
		header("h2", func(p *profile.Profile) {
			p.TimeNanos, p.DurationNanos, p.Period = 1000, 20, 4096
			p.Comments = []string{"shared", "second"}
			p.DefaultSampleType, p.DocURL = "inuse_space", "https://example.com/doc"
		}),
		header("h3", func(p *profile.Profile) {
			p.TimeNanos, p.DurationNanos, p.Period = 0, 30, 1024
			p.KeepFrames = "main\\..*"
		}),
	}

	// Values that cancel out: Merge drops the zero samples and compacts
	// its tables, from the first mapping on.
	negated := func(in input) input {
		p, err := Parse(in.data, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.Scale(-1)
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return input{"-" + in.name, buf.Bytes()}
	}
	cases["end minus start"] = []input{end, negated(start)}
	cases["end minus end"] = []input{end, negated(end)}
	cases["goroutines minus some"] = []input{cases["labeled goroutines"][1], negated(cases["labeled goroutines"][0])}
	return cases
}

func TestMerger_MatchesProfileMerge(t *testing.T) {
	for name, inputs := range testInputs(t) {
		t.Run(name, func(t *testing.T) {
			want := pprofMerge(t, inputs)
			m, got := merge(t, inputs)
			if m.Len() != len(inputs) {
				t.Errorf("Len = %d, want %d", m.Len(), len(inputs))
			}
			// What the task needs first: the same totals per sample type
			// and per function.
			wantTotals, gotTotals := functionTotals(want), functionTotals(got)
			for k, w := range wantTotals {
				if g := gotTotals[k]; !slices.Equal(g, w) {
					t.Errorf("%s: %v, want %v", k, g, w)
				}
			}
			if len(gotTotals) != len(wantTotals) {
				t.Errorf("%d function totals, want %d", len(gotTotals), len(wantTotals))
			}
			// Then the whole profile, ids and order included.
			if g, w := dumpProfile(got), dumpProfile(want); g != w {
				t.Errorf("merged profile differs from profile.Merge's:\n%s", lineDiff(w, g))
			}
		})
	}
}

// lineDiff lists the first lines where two dumps differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n want %s\n  got %s\n", i+1, wl, gl)
			shown++
		}
	}
	fmt.Fprintf(&b, "(%d lines wanted, %d got)", len(w), len(g))
	return b.String()
}

// TestMerger_OrderDoesNotChangeTotals merges the same profiles in two
// orders: the ids differ, the totals must not.
func TestMerger_OrderDoesNotChangeTotals(t *testing.T) {
	start := input{"start", readTestdata(t, "heap-start.pb.gz")}
	end := input{"end", readTestdata(t, "heap-end.pb.gz")}
	_, a := merge(t, []input{start, end, start})
	_, b := merge(t, []input{end, start, start})
	ta, tb := functionTotals(a), functionTotals(b)
	if len(ta) != len(tb) {
		t.Fatalf("%d and %d function totals", len(ta), len(tb))
	}
	for k, v := range ta {
		if !slices.Equal(tb[k], v) {
			t.Errorf("%s: %v in one order, %v in the other", k, v, tb[k])
		}
	}
}

// TestMerger_Add_errors gives a Merger a bad input between good ones:
// the error names the input and says why, and the aggregate is that of
// the good inputs alone.
func TestMerger_Add_errors(t *testing.T) {
	end := readTestdata(t, "heap-end.pb.gz")
	raw := gunzipBytes(t, end)
	var goroutines bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&goroutines, 0); err != nil {
		t.Fatal(err)
	}
	otherPeriod := func() []byte {
		p := loadProfile(t, "heap-end.pb.gz")
		p.PeriodType = &profile.ValueType{Type: "space", Unit: "kilobytes"}
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}()
	// 16 MiB of zeros gzip to 16 KB; as a protobuf they are a run of
	// empty fields, so only the size limit stops them.
	bomb := gzipBytes(t, make([]byte, 16<<20))
	// One sample repeated: little protobuf, costly to decode.
	repeated := repeatSample(t, raw, nil, 1<<20)

	tests := []struct {
		name   string
		opts   MergeOptions
		before [][]byte // merged first, fine
		bad    []byte
		want   []string // in the error's text
		is     error
		as     any
	}{
		{name: "truncated gzip", before: [][]byte{end}, bad: end[:len(end)/2],
			want: []string{"merge profile 1 (bad.pb.gz)", "gzip stream is truncated"}},
		{name: "truncated protobuf", before: [][]byte{end}, bad: raw[:len(raw)-7],
			want: []string{"merge profile 1 (bad.pb.gz)", "not a pprof profile"}, is: ErrNotProfile},
		{name: "HTML", bad: []byte("<!DOCTYPE html><html>404</html>"),
			want: []string{"merge profile 0 (bad.pb.gz)", "HTML"}, is: ErrNotProfile},
		{name: "empty", before: [][]byte{end}, bad: nil,
			want: []string{"merge profile 1", "empty input"}, is: ErrNotProfile},
		{name: "gzip bomb", opts: MergeOptions{MaxDecompressed: 1 << 20}, before: [][]byte{end}, bad: bomb,
			want: []string{"merge profile 1 (bad.pb.gz)", "decompresses to more than 1048576 bytes"}, as: new(*TooLargeError)},
		{name: "costly to decode", opts: MergeOptions{MaxDecoded: 4 << 20}, before: [][]byte{end}, bad: repeated,
			want: []string{"merge profile 1 (bad.pb.gz)", "memory to decode"}, as: new(*TooLargeError)},
		{name: "other sample types", before: [][]byte{end, end}, bad: goroutines.Bytes(),
			want: []string{"merge profile 2 (bad.pb.gz)", "sample types goroutine/count", "profile 0 (good-0.pb.gz) has alloc_objects/count, alloc_space/bytes"},
			is:   ErrIncompatible},
		{name: "other period type", before: [][]byte{end}, bad: otherPeriod,
			want: []string{"merge profile 1 (bad.pb.gz)", "period type space/kilobytes", "has space/bytes"}, is: ErrIncompatible},
		{name: "overflow across profiles", before: [][]byte{overflowing(t, math.MaxInt64/4)}, bad: overflowing(t, math.MaxInt64-math.MaxInt64/4+1),
			want: []string{"merge profile 1 (bad.pb.gz)", "beyond the range of int64"}, is: ErrOverflow},
		{name: "overflow within a profile", bad: overflowing(t, math.MaxInt64, 1),
			want: []string{"merge profile 0 (bad.pb.gz)", "beyond the range of int64"}, is: ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMerger(tt.opts)
			var good []input
			for i, data := range tt.before {
				in := input{fmt.Sprintf("good-%d.pb.gz", i), data}
				if err := m.Add(in.name, bytes.NewReader(in.data)); err != nil {
					t.Fatalf("Add %s: %v", in.name, err)
				}
				good = append(good, in)
			}
			err := m.Add("bad.pb.gz", bytes.NewReader(tt.bad))
			if err == nil {
				t.Fatal("Add accepted the bad input")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.Index != len(tt.before) || ie.Name != "bad.pb.gz" {
				t.Errorf("error %v is not an *InputError for input %d", err, len(tt.before))
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Errorf("error %v is not a %T", err, tt.as)
			}
			if len(good) == 0 {
				if err := m.WriteProfile(&bytes.Buffer{}); err == nil {
					t.Error("WriteProfile wrote a profile of no input")
				}
				return
			}
			// The failed input changed nothing: one more good input, and
			// the result is the merge of the good ones.
			good = append(good, good[0])
			if err := m.Add("last", bytes.NewReader(good[0].data)); err != nil {
				t.Fatalf("Add after the error: %v", err)
			}
			if g, w := dumpProfile(written(t, m)), dumpProfile(pprofMerge(t, good)); g != w {
				t.Errorf("the failed input changed the aggregate:\n%s", lineDiff(w, g))
			}
		})
	}
}

func TestMerger_noInput(t *testing.T) {
	m := NewMerger(MergeOptions{})
	for name, write := range map[string]func() error{
		"WriteProfile": func() error { return m.WriteProfile(&bytes.Buffer{}) },
		"WriteFolded":  func() error { return m.WriteFolded(&bytes.Buffer{}, 0) },
	} {
		if err := write(); err == nil || !strings.Contains(err.Error(), "no profiles to merge") {
			t.Errorf("%s with no input: error %v, want no profiles to merge", name, err)
		}
	}
	if _, err := m.SampleIndex(""); err == nil {
		t.Error("SampleIndex with no input: no error")
	}
}

// TestMerger_WriteFolded_golden pins the folded stacks of the
// hand-encoded profile merged with itself: inlined frames, a location
// without lines, a sample without a stack, and samples that differ by
// labels alone, which folded stacks add up. Run with -update to rewrite
// the golden files. (Real profiles are checked against the profile
// itself by TestMerger_WriteFolded, and against flame.WriteFolded in
// internal/flame.)
func TestMerger_WriteFolded_golden(t *testing.T) {
	m, _ := merge(t, testInputs(t)["hand-encoded twice and gzipped"])
	for _, sample := range []string{"objects", "space"} {
		t.Run(sample, func(t *testing.T) {
			i, err := m.SampleIndex(sample)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := m.WriteFolded(&buf, i); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "merge-hand-encoded-"+sample+".golden.folded"), buf.Bytes())
		})
	}
}

// TestMerger_WriteFolded checks the folded lines against the merged
// profile: every line's value is the sum of the samples whose frames have
// its names, lines sum to the total, and the format holds.
func TestMerger_WriteFolded(t *testing.T) {
	inputs := testInputs(t)
	for _, name := range []string{"heap start and end", "labeled goroutines", "hand-encoded twice and gzipped", "end minus start"} {
		t.Run(name, func(t *testing.T) {
			m, p := merge(t, inputs[name])
			for i, st := range p.SampleType {
				var buf bytes.Buffer
				if err := m.WriteFolded(&buf, i); err != nil {
					t.Fatal(err)
				}
				want := map[string]int64{}
				for _, s := range p.Sample {
					var frames []string
					for j := len(s.Location) - 1; j >= 0; j-- {
						l := s.Location[j]
						if len(l.Line) == 0 {
							frames = append(frames, fmt.Sprintf("0x%x", l.Address))
						}
						for k := len(l.Line) - 1; k >= 0; k-- {
							frames = append(frames, l.Line[k].Function.Name)
						}
					}
					if len(frames) == 0 {
						frames = []string{"[no stack]"}
					}
					want[strings.Join(frames, ";")] += s.Value[i]
				}
				for k, v := range want {
					if v == 0 {
						delete(want, k)
					}
				}
				got := map[string]int64{}
				lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
				if buf.Len() == 0 {
					lines = nil
				}
				if !slices.IsSorted(lines) {
					t.Errorf("%s: lines are not sorted", st.Type)
				}
				for _, line := range lines {
					// The value follows the last space: names may hold spaces.
					sp := strings.LastIndexByte(line, ' ')
					path, value := line[:max(sp, 0)], line[sp+1:]
					var v int64
					if _, err := fmt.Sscan(value, &v); sp <= 0 || err != nil {
						t.Fatalf("%s: malformed line %q", st.Type, line)
					}
					if _, dup := got[path]; dup {
						t.Errorf("%s: stack %q twice", st.Type, path)
					}
					got[path] = v
				}
				if len(got) != len(want) {
					t.Errorf("%s: %d lines, want %d", st.Type, len(got), len(want))
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s: %q = %d, want %d", st.Type, k, got[k], v)
					}
				}
			}
			if err := m.WriteFolded(&bytes.Buffer{}, len(p.SampleType)); err == nil {
				t.Error("WriteFolded accepted a sample index out of range")
			}
		})
	}
}

// TestMerger_MemoryDependsOnStacks merges one profile many times: the
// aggregate holds its distinct samples once, so the live heap after the
// merge does not grow with the number of profiles.
func TestMerger_MemoryDependsOnStacks(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's allocations blur the heap figures")
	}
	data := readTestdata(t, "heap-end.pb.gz")
	live := func(n int) uint64 {
		m := NewMerger(MergeOptions{})
		for i := range n {
			if err := m.Add(fmt.Sprint(i), bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(m)
		return ms.HeapAlloc
	}
	live(1) // warm up
	one, many := live(1), live(100)
	if many > one+one/2+1<<20 {
		t.Errorf("live heap after 100 profiles %d bytes, after 1 %d: it grows with the number of profiles", many, one)
	}
}

// TestMerger_concurrentMergers runs independent Mergers at once, for the
// race detector (each Merger is used by one goroutine).
func TestMerger_concurrentMergers(t *testing.T) {
	data := readTestdata(t, "heap-start.pb.gz")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			m := NewMerger(MergeOptions{})
			for range 3 {
				if err := m.Add("start", bytes.NewReader(data)); err != nil {
					t.Error(err)
					return
				}
			}
			if err := m.WriteProfile(&bytes.Buffer{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestFoldedFrame(t *testing.T) {
	for name, want := range map[string]string{
		"main.main":                    "main.main",
		"a;b\nc\rd":                    "a:b c d",
		"pkg.F[go.shape.struct { x }]": "pkg.F[go.shape.struct { x }]",
	} {
		if got := FoldedFrame(name); got != want {
			t.Errorf("FoldedFrame(%q) = %q, want %q", name, got, want)
		}
	}
}

// FuzzMergerAdd gives a Merger arbitrary input: it must not panic, must
// accept what Parse accepts (within the same limits), and must merge it,
// with itself too, as profile.Merge does.
func FuzzMergerAdd(f *testing.F) {
	addProfileSeeds(f)
	f.Add(gzipBytes(f, make([]byte, 1<<20)))
	f.Add([]byte("heap profile: 1: 16 [1: 16] @ heap/1048576\n1: 16 [1: 16] @ 0x1 0x2\n"))
	f.Add(overflowing(f, math.MaxInt64/2+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 4 << 20
		m := NewMerger(MergeOptions{MaxDecompressed: limit})
		err := m.Add("fuzz", bytes.NewReader(data))
		p, perr := Parse(data, limit)
		var ie *InputError
		if err != nil && (!errors.As(err, &ie) || ie.Index != 0 || ie.Name != "fuzz") {
			t.Fatalf("error %v does not name the input", err)
		}
		if perr != nil {
			if err == nil {
				t.Fatalf("Merger accepts input Parse refuses (%v)", perr)
			}
			return
		}
		if err != nil {
			if errors.As(err, new(*TooLargeError)) {
				return // estimated sample by sample, not as Parse estimates
			}
			t.Fatalf("Merger refuses input Parse accepts: %v", err)
		}
		for i := range p.SampleType {
			if err := m.WriteFolded(io.Discard, i); err != nil {
				t.Fatalf("WriteFolded: %v", err)
			}
		}
		inputs := []*profile.Profile{p}
		if err := m.Add("again", bytes.NewReader(data)); err == nil {
			inputs = append(inputs, p)
		} else if !errors.Is(err, ErrOverflow) {
			t.Fatalf("Add of the same input again: %v", err)
		}
		merged, err := profile.Merge(inputs)
		if err != nil {
			t.Fatalf("profile.Merge: %v", err)
		}
		if g, w := dumpProfile(written(t, m)), dumpProfile(roundTrip(t, merged)); g != w {
			t.Fatalf("merged profile differs from profile.Merge's:\n%s", lineDiff(w, g))
		}
	})
}

// BenchmarkMerger merges 32 real heap profiles of one process (the two
// checked in, in turn) and writes the result: the cost per profile, and
// allocations that do not grow with the profiles' samples (the decoder's
// buffers and tables are reused from one profile to the next).
// bench/merge-vs-pprof.sh measures larger profiles against go tool pprof.
func BenchmarkMerger(b *testing.B) {
	inputs := [][]byte{readTestdata(b, "heap-start.pb.gz"), readTestdata(b, "heap-end.pb.gz")}
	const n = 32
	b.ReportAllocs()
	for b.Loop() {
		m := NewMerger(MergeOptions{})
		for i := range n {
			if err := m.Add("", bytes.NewReader(inputs[i%2])); err != nil {
				b.Fatal(err)
			}
		}
		if err := m.WriteProfile(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/profile")
}

func BenchmarkMerger_WriteFolded(b *testing.B) {
	m := NewMerger(MergeOptions{})
	for _, name := range []string{"heap-start.pb.gz", "heap-end.pb.gz"} {
		if err := m.Add(name, bytes.NewReader(readTestdata(b, name))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.WriteFolded(io.Discard, 1); err != nil {
			b.Fatal(err)
		}
	}
}
