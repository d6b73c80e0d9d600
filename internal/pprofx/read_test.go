package pprofx

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime/pprof"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/pprof/profile"
)

// testProfiles returns every profile checked in under the testdata of the
// internal packages, and profiles the running process writes itself (in
// the runtime's field order), by name.
func testProfiles(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	paths, err := filepath.Glob(filepath.Join("..", "*", "testdata", "*.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no test profiles found")
	}
	for _, p := range paths {
		data := readFile(t, p)
		out[filepath.ToSlash(p)] = data
		out[filepath.ToSlash(p)+" (uncompressed)"] = gunzipBytes(t, data)
	}
	for _, name := range []string{"heap", "allocs", "goroutine", "threadcreate", "block", "mutex"} {
		var buf bytes.Buffer
		if err := pprof.Lookup(name).WriteTo(&buf, 0); err != nil {
			t.Fatal(err)
		}
		out["runtime "+name] = buf.Bytes()
	}
	out["hand-encoded"] = handEncoded()
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// handEncoded is a profile in the runtime's order (samples first, strings
// last) using what profile.Write never writes: unpacked repeated fields,
// labels, comments and unknown fields of every wire type.
func handEncoded() []byte {
	var e pbuf
	sample := func(locs []uint64, vals []int64, packed bool) {
		var m pbuf
		if packed {
			var ids pbuf
			for _, l := range locs {
				ids.varint(l)
			}
			m.bytes(1, ids)
		} else {
			for _, l := range locs {
				m.uint(1, l)
			}
		}
		for _, v := range vals {
			m.uint(2, uint64(v))
		}
		var label pbuf
		label.uint(1, 7) // key "span"
		label.uint(2, 8) // str "a"
		m.bytes(3, label)
		var num pbuf
		num.uint(1, 9)  // key "bytes"
		num.uint(3, 64) // num
		num.uint(4, 1)  // unit "count"
		m.bytes(3, num)
		m.uint(99, 5)
		e.bytes(2, m)
	}
	sample([]uint64{3, 2, 1}, []int64{1, 100}, true)
	sample([]uint64{3, 2, 1}, []int64{2, 50}, false) // same stack, merged
	sample([]uint64{4, 1}, []int64{1, -30}, false)
	sample(nil, []int64{0, 7}, true)
	loc := func(id uint64, addr uint64, lines ...[2]uint64) {
		var m pbuf
		m.uint(1, id)
		m.uint(3, addr)
		for _, ln := range lines {
			var l pbuf
			l.uint(1, ln[0])
			l.uint(2, ln[1])
			l.uint(3, 4) // column
			m.bytes(4, l)
		}
		e.bytes(4, m)
	}
	loc(1, 0x1000, [2]uint64{1, 10})
	loc(2, 0x2000, [2]uint64{2, 20}, [2]uint64{3, 30}) // inlined
	loc(3, 0x3000, [2]uint64{1, 11})
	loc(4, 0x4000)
	fn := func(id, name, file uint64) {
		var m pbuf
		m.uint(1, id)
		m.uint(2, name)
		m.uint(3, name)
		m.uint(4, file)
		m.uint(5, 1)
		e.bytes(5, m)
	}
	fn(1, 3, 6)
	fn(2, 4, 6)
	fn(3, 5, 6)
	var mapping pbuf
	mapping.uint(1, 1)
	mapping.uint(5, 6)
	e.bytes(3, mapping)
	for _, vt := range [][2]uint64{{1, 9}, {2, 10}} {
		var m pbuf
		m.uint(1, vt[0])
		m.uint(2, vt[1])
		e.bytes(1, m)
	}
	var period pbuf
	period.uint(1, 2)
	period.uint(2, 10)
	e.bytes(11, period)
	e.uint(12, 512)
	e.uint(9, 1700000000)
	e.uint(10, 5e9)
	e.uint(13, 7)
	e.uint(14, 2)
	e.fixed64(100)
	e.fixed32(101)
	for _, s := range []string{"", "objects", "space", "main.a", "main.b", "main.c", "a.go", "span", "a", "bytes", "count"} {
		e.bytes(6, pbuf(s))
	}
	return e
}

// pbuf is a minimal protobuf encoder for test input.
type pbuf []byte

func (b *pbuf) varint(v uint64) {
	for v >= 0x80 {
		*b = append(*b, byte(v)|0x80)
		v >>= 7
	}
	*b = append(*b, byte(v))
}

func (b *pbuf) uint(field int, v uint64) {
	b.varint(uint64(field) << 3)
	b.varint(v)
}

func (b *pbuf) bytes(field int, data pbuf) {
	b.varint(uint64(field)<<3 | 2)
	b.varint(uint64(len(data)))
	*b = append(*b, data...)
}

func (b *pbuf) fixed64(field int) {
	b.varint(uint64(field)<<3 | 1)
	*b = append(*b, 1, 2, 3, 4, 5, 6, 7, 8)
}

func (b *pbuf) fixed32(field int) {
	b.varint(uint64(field)<<3 | 5)
	*b = append(*b, 1, 2, 3, 4)
}

// dumpStacks renders s in full, for comparison with readable diffs.
func dumpStacks(s *Stacks) string {
	var b strings.Builder
	fmt.Fprintf(&b, "types %v default %q period %v %d time %d duration %d\n",
		s.SampleTypes, s.DefaultSampleType, s.PeriodType, s.Period, s.TimeNanos, s.DurationNanos)
	for i, t := range s.SampleTypes {
		fmt.Fprintf(&b, "total %s %d\n", t.Type, s.Total(i))
	}
	for i, f := range s.Functions {
		fmt.Fprintf(&b, "func %d %+v\n", i, f)
	}
	for i, l := range s.Locations {
		fmt.Fprintf(&b, "loc %d %#x %v\n", i, l.Address, l.Lines)
	}
	for i := range s.Len() {
		fmt.Fprintf(&b, "stack %v %v\n", s.Stack(i), s.Values(i))
	}
	return b.String()
}

func TestReadStacks_MatchesParse(t *testing.T) {
	for name, data := range testProfiles(t) {
		t.Run(name, func(t *testing.T) {
			p, err := Parse(data, DefaultMaxDecompressed)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want, err := StacksOf(p)
			if err != nil {
				t.Fatalf("StacksOf: %v", err)
			}
			got, err := ReadStacks(bytes.NewReader(data), ReadOptions{})
			if err != nil {
				t.Fatalf("ReadStacks: %v", err)
			}
			if g, w := dumpStacks(got), dumpStacks(want); g != w {
				t.Fatalf("ReadStacks differs from StacksOf(Parse):\n got: %s\nwant: %s", g, w)
			}
			// Identical totals and top tables against the parsed profile
			// itself, for every sample type and both orders.
			for i, st := range p.SampleType {
				if got, want := got.Total(i), sumValues(t, p, st.Type); got != want {
					t.Errorf("total of %s = %d, want %d", st.Type, got, want)
				}
				for _, cum := range []bool{false, true} {
					opts := TopOptions{Sample: st.Type, SortByCum: cum}
					gotTab, err := got.Top(opts)
					if err != nil {
						t.Fatal(err)
					}
					if !cum && symbolized(p) && !reflect.DeepEqual(sitesByKey(gotTab), sitesByKey(referenceTop(p, st.Type))) {
						t.Errorf("top of %s differs from the reference", st.Type)
					}
					wantTab, err := Top(p, opts)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(gotTab, wantTab) {
						t.Errorf("top of %s (cum %v) differs from Top of the parsed profile", st.Type, cum)
					}
				}
			}
		})
	}
}

// symbolized reports whether every sample has a stack and every location
// a line, as referenceTop needs.
func symbolized(p *profile.Profile) bool {
	for _, s := range p.Sample {
		if len(s.Location) == 0 {
			return false
		}
	}
	for _, l := range p.Location {
		if len(l.Line) == 0 {
			return false
		}
	}
	return true
}

// sitesByKey indexes a table's sites, for comparisons that do not depend
// on the order of ties.
func sitesByKey(tab Table) map[string]Site {
	m := make(map[string]Site, len(tab.Sites))
	for _, s := range tab.Sites {
		s.Inlined = nil
		m[fmt.Sprintf("%s %s:%d", s.Function, s.File, s.Line)] = s
	}
	return m
}

func TestReadStacks_ReaderShapes(t *testing.T) {
	gz := readTestdata(t, "heap-end.pb.gz")
	want, err := ReadStacks(bytes.NewReader(gz), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{name: "compressed", data: gz},
		{name: "uncompressed", data: gunzipBytes(t, gz)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadStacks(iotest.OneByteReader(bytes.NewReader(tt.data)), ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if dumpStacks(got) != dumpStacks(want) {
				t.Error("stacks read a byte at a time differ from those read at once")
			}
			_, err = ReadStacks(iotest.TimeoutReader(bytes.NewReader(tt.data)), ReadOptions{})
			if !errors.Is(err, iotest.ErrTimeout) {
				t.Errorf("reader error %v, want it passed on", err)
			}
		})
	}
}

func TestReadStacks_Errors(t *testing.T) {
	heap := readTestdata(t, "heap-end.pb.gz")
	raw := gunzipBytes(t, heap)
	var unknownLoc, noTypes, mismatch, zeroLoc, badString, badFunction pbuf
	{
		var s pbuf
		s.uint(1, 42)
		s.uint(2, 1)
		unknownLoc.bytes(2, s)
		var vt pbuf
		vt.uint(1, 0)
		unknownLoc.bytes(1, vt)
		unknownLoc.bytes(6, pbuf(""))
	}
	{
		var s pbuf
		s.uint(2, 1)
		noTypes.bytes(2, s)
		noTypes.bytes(6, pbuf(""))
	}
	{
		var s1, s2, vt pbuf
		s1.uint(2, 1)
		s2.uint(2, 1)
		s2.uint(2, 2)
		mismatch.bytes(2, s1)
		mismatch.bytes(2, s2)
		vt.uint(1, 0)
		mismatch.bytes(1, vt)
		mismatch.bytes(6, pbuf(""))
	}
	{
		var l pbuf
		l.uint(3, 1)
		zeroLoc.bytes(4, l)
		zeroLoc.bytes(6, pbuf(""))
	}
	{
		var f pbuf
		f.uint(1, 1)
		f.uint(2, 5)
		badString.bytes(5, f)
		badString.bytes(6, pbuf(""))
	}
	{
		var l, ln pbuf
		l.uint(1, 1)
		ln.uint(1, 9)
		l.bytes(4, ln)
		badFunction.bytes(4, l)
		badFunction.bytes(6, pbuf(""))
	}
	tests := []struct {
		name    string
		data    []byte
		opts    ReadOptions
		wantErr string
		notProf bool
	}{
		{name: "empty", data: nil, wantErr: "empty input", notProf: true},
		{name: "html", data: []byte("<!doctype html><title>login</title>"), wantErr: "HTML", notProf: true},
		{name: "text", data: []byte("this is not a profile"), wantErr: `looks like text starting "this is not a profile"`, notProf: true},
		{name: "gzip in gzip", data: gzipBytes(t, heap), wantErr: "gzip inside gzip", notProf: true},
		{name: "empty gzip", data: gzipBytes(t, nil), wantErr: "empty after decompression", notProf: true},
		{name: "truncated gzip", data: heap[:len(heap)/2], wantErr: "decompress profile: gzip stream is truncated"},
		{name: "truncated protobuf", data: raw[:len(raw)-3], notProf: true},
		{name: "too large", data: heap, opts: ReadOptions{MaxDecompressed: 1000}, wantErr: "more than 1000 bytes"},
		{name: "unknown location", data: unknownLoc, notProf: true},
		{name: "samples without sample types", data: noTypes, notProf: true},
		{name: "value count mismatch", data: mismatch, notProf: true},
		{name: "location id 0", data: zeroLoc, notProf: true},
		{name: "string index out of range", data: badString, notProf: true},
		{name: "line of an unknown function", data: badFunction, notProf: true},
		{name: "totals beyond int64", data: overflowing(t, math.MaxInt64, math.MaxInt64), wantErr: "beyond the range of int64"},
		{name: "one value of MinInt64", data: overflowing(t, math.MinInt64), wantErr: "beyond the range of int64"},
		{name: "magnitudes beyond int64 that would cancel out", data: overflowing(t, math.MaxInt64, -math.MaxInt64), wantErr: "beyond the range of int64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ReadStacks(bytes.NewReader(tt.data), tt.opts)
			if err == nil {
				t.Fatalf("ReadStacks succeeded with %d stacks, want an error", s.Len())
			}
			if s != nil {
				t.Error("stacks returned with an error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			}
			if got := errors.Is(err, ErrNotProfile); got != tt.notProf {
				t.Errorf("errors.Is(ErrNotProfile) = %v, want %v (error %v)", got, tt.notProf, err)
			}
			if _, perr := Parse(tt.data, tt.opts.MaxDecompressed); perr == nil && tt.opts.MaxDecompressed == 0 {
				t.Errorf("Parse accepts what ReadStacks refuses: %v", err)
			}
		})
	}
}

// addProfileSeeds adds the seeds the fuzzers of profile readers share: a
// small hand-encoded profile, whole, cut short and gzipped, and a real
// threadcreate profile, which it returns (gzipped, as served).
func addProfileSeeds(f *testing.F) []byte {
	hand := handEncoded()
	f.Add(hand)
	for _, n := range []int{1, 2, 16, 100, len(hand) - 1} {
		f.Add(hand[:n])
	}
	f.Add(gzipBytes(f, hand))
	var tc bytes.Buffer
	if err := pprof.Lookup("threadcreate").WriteTo(&tc, 0); err != nil {
		f.Fatal(err)
	}
	f.Add(tc.Bytes())
	return tc.Bytes()
}

func FuzzReadStacks(f *testing.F) {
	// Small seeds: the fuzzer minimises every new input it finds, and
	// minimising one grown from a large profile takes minutes. The large
	// profiles are checked by TestReadStacks_MatchesParse.
	tc := addProfileSeeds(f)
	f.Add(gunzipBytes(f, tc))
	f.Add([]byte("heap profile: 1: 16 [1: 16] @ heap/1048576\n1: 16 [1: 16] @ 0x1 0x2\n"))
	f.Add([]byte("--- contention:\ncycles/second=2000000000\n1000 10 @ 0x1 0x2\n"))
	f.Add(overflowing(f, math.MaxInt64/2, math.MaxInt64/2, 1))
	f.Add(overflowing(f, math.MaxInt64/2, math.MaxInt64/2+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 4 << 20
		p, perr := Parse(data, limit)
		s, err := ReadStacks(bytes.NewReader(data), ReadOptions{MaxDecompressed: limit})
		if (err == nil) != (s != nil) {
			t.Fatalf("ReadStacks returned stacks %v and error %v", s != nil, err)
		}
		if perr != nil {
			if err == nil {
				t.Fatalf("ReadStacks accepts input Parse refuses (%v)", perr)
			}
			return
		}
		if err != nil {
			t.Fatalf("ReadStacks refuses input Parse accepts: %v", err)
		}
		want, err := StacksOf(p)
		if err != nil {
			t.Fatalf("StacksOf: %v", err)
		}
		if dumpStacks(s) != dumpStacks(want) {
			t.Fatalf("ReadStacks differs from StacksOf(Parse)")
		}
		checkNoNegativeTotals(t, s)
	})
}

// checkNoNegativeTotals fails when a profile of non-negative values gets
// a negative total, flat or cumulative value from Top, or a value above
// its total: what a sum that wrapped around would print.
func checkNoNegativeTotals(t *testing.T, s *Stacks) {
	t.Helper()
	for i := range s.Len() {
		for _, v := range s.Values(i) {
			if v < 0 {
				return // a difference profile: negative values are its data
			}
		}
	}
	for _, st := range s.SampleTypes {
		tab, err := s.Top(TopOptions{Sample: st.Type})
		if err != nil {
			t.Fatalf("Top(%s): %v", st.Type, err)
		}
		if tab.Total < 0 {
			t.Fatalf("Top(%s): total %d of non-negative values", st.Type, tab.Total)
		}
		for _, site := range tab.Sites {
			if site.Flat < 0 || site.Cum < 0 || site.Flat > tab.Total || site.Cum > tab.Total {
				t.Fatalf("Top(%s): site %s flat %d cum %d outside [0, total %d]", st.Type, site.Function, site.Flat, site.Cum, tab.Total)
			}
		}
	}
}

// overflowing encodes a profile of one sample type with one sample per
// value, each at a stack of its own.
func overflowing(t testing.TB, values ...int64) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "main.big", Filename: "big.go"}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}},
		Function:   []*profile.Function{fn},
	}
	for i, v := range values {
		loc := &profile.Location{ID: uint64(i + 1), Address: uint64(0x1000 + i), Line: []profile.Line{{Function: fn, Line: int64(i + 1)}}}
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{v}})
	}
	var buf bytes.Buffer
	if err := p.WriteUncompressed(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func BenchmarkReadStacks(b *testing.B) {
	data := readTestdata(b, "heap-end.pb.gz")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadStacks(bytes.NewReader(data), ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTop_readStacks is what heapscope top does: decode and rank.
func BenchmarkTop_readStacks(b *testing.B) {
	data := readTestdata(b, "heap-end.pb.gz")
	b.ReportAllocs()
	for b.Loop() {
		s, err := ReadStacks(bytes.NewReader(data), ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Top(TopOptions{Sample: AllocSpace, N: 20}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTop_parse is the same through profile.Parse.
func BenchmarkTop_parse(b *testing.B) {
	data := readTestdata(b, "heap-end.pb.gz")
	b.ReportAllocs()
	for b.Loop() {
		p, err := Parse(data, DefaultMaxDecompressed)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Top(p, TopOptions{Sample: AllocSpace, N: 20}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadStacks_Unmerged: keeping every sample as a stack of its own
// changes the count of stacks, not a total or a site's figures.
func TestReadStacks_Unmerged(t *testing.T) {
	data := readTestdata(t, "heap-end.pb.gz")
	merged, err := ReadStacks(bytes.NewReader(data), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unmerged, err := ReadStacks(bytes.NewReader(data), ReadOptions{Unmerged: true})
	if err != nil {
		t.Fatal(err)
	}
	p := loadProfile(t, "heap-end.pb.gz")
	if unmerged.Len() != len(p.Sample) || merged.Len() > unmerged.Len() {
		t.Errorf("%d stacks unmerged, %d merged, %d samples: want one stack per sample unmerged", unmerged.Len(), merged.Len(), len(p.Sample))
	}
	for i, st := range merged.SampleTypes {
		if merged.Total(i) != unmerged.Total(i) {
			t.Errorf("%s total %d merged, %d unmerged", st.Type, merged.Total(i), unmerged.Total(i))
		}
		a, err1 := merged.Top(TopOptions{Sample: st.Type})
		b, err2 := unmerged.Top(TopOptions{Sample: st.Type})
		if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: Top differs merged and unmerged (%v, %v)", st.Type, err1, err2)
		}
	}
}

// TestStacks_Profile: a heap profile rebuilt from its stacks, read
// sample by sample, ranks as the parsed one does and carries the
// runtime's object sizes.
func TestStacks_Profile(t *testing.T) {
	data := readTestdata(t, "heap-end.pb.gz")
	s, err := ReadStacks(bytes.NewReader(data), ReadOptions{Unmerged: true})
	if err != nil {
		t.Fatal(err)
	}
	p := loadProfile(t, "heap-end.pb.gz")
	rebuilt := s.Profile()
	if err := rebuilt.CheckValid(); err != nil {
		t.Fatalf("rebuilt profile is not valid: %v", err)
	}
	if len(rebuilt.Sample) != len(p.Sample) {
		t.Fatalf("%d samples rebuilt, want %d", len(rebuilt.Sample), len(p.Sample))
	}
	for i, smp := range p.Sample {
		if want := smp.NumLabel["bytes"]; len(want) == 1 && !reflect.DeepEqual(rebuilt.Sample[i].NumLabel["bytes"], want) {
			t.Fatalf("sample %d: bytes label %v, want %v", i, rebuilt.Sample[i].NumLabel["bytes"], want)
		}
	}
	for _, st := range p.SampleType {
		a, err1 := Top(p, TopOptions{Sample: st.Type})
		b, err2 := Top(rebuilt, TopOptions{Sample: st.Type})
		if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: Top of the rebuilt profile differs (%v, %v)", st.Type, err1, err2)
		}
	}
}
