package pprofx

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

func TestTop(t *testing.T) {
	sites := loadSites(t)
	p := loadProfile(t, "heap-end.pb.gz")
	tab, err := Top(p, TopOptions{Sample: AllocSpace})
	if err != nil {
		t.Fatalf("Top: %v", err)
	}
	if tab.SampleType != AllocSpace || tab.Unit != "bytes" {
		t.Errorf("table of %s/%s, want alloc_space/bytes", tab.SampleType, tab.Unit)
	}
	if want := sumValues(t, p, AllocSpace); tab.Total != want {
		t.Errorf("Total = %d, want %d", tab.Total, want)
	}

	// MemProfileRate was 1 in the generator: the figures are exact.
	for name, want := range map[string]genSite{"burst": sites.Burst, "warmup": sites.Warmup, "inlined": sites.Inlined} {
		s, ok := findSite(tab, want.Function, want.File, want.Line)
		if !ok {
			t.Errorf("%s site %s %s:%d not in the table", name, want.Function, want.File, want.Line)
			continue
		}
		if s.Flat != want.Bytes {
			t.Errorf("%s site flat = %d, want %d", name, s.Flat, want.Bytes)
		}
	}
	if got := tab.Sites[0]; got.Function != sites.Burst.Function || got.Line != sites.Burst.Line {
		t.Errorf("top site is %s:%d, want the burst %s:%d", got.Function, got.Line, sites.Burst.Function, sites.Burst.Line)
	}
	in, _ := findSite(tab, sites.Inlined.Function, sites.Inlined.File, sites.Inlined.Line)
	if want := []string{sites.Inlined.Function, sites.Inlined.Caller}; !slices.Equal(in.Inlined, want) {
		t.Errorf("inlined site chain %v, want %v", in.Inlined, want)
	}
	if b, _ := findSite(tab, sites.Burst.Function, sites.Burst.File, sites.Burst.Line); b.Inlined != nil {
		t.Errorf("burst site (not inlined) has chain %v", b.Inlined)
	}

	var flatShares float64
	var flats int64
	for i, s := range tab.Sites {
		if s.Flat > s.Cum {
			t.Errorf("site %s:%d flat %d > cum %d", s.Function, s.Line, s.Flat, s.Cum)
		}
		if s.Cum > tab.Total {
			t.Errorf("site %s:%d cum %d > total %d", s.Function, s.Line, s.Cum, tab.Total)
		}
		if i > 0 && compareSites(tab.Sites[i-1], s, false) > 0 {
			t.Errorf("sites %d and %d out of order: %+v, %+v", i-1, i, tab.Sites[i-1], s)
		}
		flatShares += s.FlatShare
		flats += s.Flat
	}
	if math.Abs(flatShares-1) > 1e-9 {
		t.Errorf("flat shares sum to %v, want 1", flatShares)
	}
	if flats != tab.Total {
		t.Errorf("flats sum to %d, want total %d", flats, tab.Total)
	}
}

func TestTop_options(t *testing.T) {
	p := loadProfile(t, "heap-end.pb.gz")
	all, err := Top(p, TopOptions{Sample: AllocObjects})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		opts  TopOptions
		check func(t *testing.T, tab Table)
	}{
		{name: "N caps the sites", opts: TopOptions{Sample: AllocObjects, N: 5}, check: func(t *testing.T, tab Table) {
			if !reflect.DeepEqual(tab.Sites, all.Sites[:5]) {
				t.Errorf("N=5 gives %v, want the first 5 of all", tab.Sites)
			}
		}},
		{name: "N above the sites", opts: TopOptions{Sample: AllocObjects, N: 1 << 20}, check: func(t *testing.T, tab Table) {
			if len(tab.Sites) != len(all.Sites) {
				t.Errorf("%d sites, want %d", len(tab.Sites), len(all.Sites))
			}
		}},
		{name: "negative N is all", opts: TopOptions{Sample: AllocObjects, N: -1}, check: func(t *testing.T, tab Table) {
			if len(tab.Sites) != len(all.Sites) {
				t.Errorf("%d sites, want %d", len(tab.Sites), len(all.Sites))
			}
		}},
		{name: "default sample is inuse_space", opts: TopOptions{}, check: func(t *testing.T, tab Table) {
			if tab.SampleType != InuseSpace {
				t.Errorf("sample type %s, want %s", tab.SampleType, InuseSpace)
			}
		}},
		{name: "by cum", opts: TopOptions{Sample: AllocObjects, SortByCum: true}, check: func(t *testing.T, tab Table) {
			if len(tab.Sites) != len(all.Sites) {
				t.Errorf("%d sites, want %d", len(tab.Sites), len(all.Sites))
			}
			for i := 1; i < len(tab.Sites); i++ {
				if compareSites(tab.Sites[i-1], tab.Sites[i], true) > 0 {
					t.Fatalf("sites %d and %d out of cum order", i-1, i)
				}
			}
			var maxCum int64
			for _, s := range all.Sites {
				maxCum = max(maxCum, s.Cum)
			}
			if tab.Sites[0].Cum != maxCum {
				t.Errorf("first site by cum %s has %d, want the largest cum %d", tab.Sites[0].Function, tab.Sites[0].Cum, maxCum)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := Top(p, tt.opts)
			if err != nil {
				t.Fatalf("Top: %v", err)
			}
			tt.check(t, tab)
		})
	}
}

// TestTop_matchesReference compares Top with a plain reimplementation on
// every sample type of the real profiles and their delta.
func TestTop_matchesReference(t *testing.T) {
	start := loadProfile(t, "heap-start.pb.gz")
	end := loadProfile(t, "heap-end.pb.gz")
	delta, err := AllocDelta(start, end)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*profile.Profile{"start": start, "end": end, "delta": delta} {
		for _, sample := range Types(p) {
			t.Run(name+"/"+sample, func(t *testing.T) {
				got, err := Top(p, TopOptions{Sample: sample})
				if err != nil {
					t.Fatal(err)
				}
				want := referenceTop(p, sample)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Top differs from the reference:\n got %d sites, total %d\nwant %d sites, total %d", len(got.Sites), got.Total, len(want.Sites), want.Total)
					for i := range min(len(got.Sites), len(want.Sites)) {
						if !reflect.DeepEqual(got.Sites[i], want.Sites[i]) {
							t.Errorf("first difference at %d:\n got %+v\nwant %+v", i, got.Sites[i], want.Sites[i])
							break
						}
					}
				}
			})
		}
	}
}

// referenceTop is Top written the obvious way, to check the fast one.
func referenceTop(p *profile.Profile, sample string) Table {
	idx, _ := SampleIndex(p, sample)
	type key struct {
		fn, file string
		line     int64
	}
	frameKey := func(l *profile.Location, ln profile.Line) key {
		return key{ln.Function.Name, ln.Function.Filename, ln.Line}
	}
	flat := map[key]int64{}
	cum := map[key]int64{}
	type chainInfo struct {
		chain []string
		flat  int64
	}
	leafFlat := map[*profile.Location]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
		if v == 0 {
			continue
		}
		leaf := s.Location[0]
		flat[frameKey(leaf, leaf.Line[0])] += v
		leafFlat[leaf] += v
		seen := map[key]bool{}
		for _, l := range s.Location {
			for _, ln := range l.Line {
				k := frameKey(l, ln)
				if !seen[k] {
					seen[k] = true
					cum[k] += v
				}
			}
		}
	}
	chains := map[key]chainInfo{}
	for _, l := range p.Location { // profile order, as Top visits first-seen order
		if len(l.Line) < 2 || leafFlat[l] == 0 {
			continue
		}
		k := frameKey(l, l.Line[0])
		if c, ok := chains[k]; ok && c.flat >= leafFlat[l] {
			continue
		}
		var chain []string
		for _, ln := range l.Line {
			chain = append(chain, ln.Function.Name)
		}
		chains[k] = chainInfo{chain, leafFlat[l]}
	}
	var sites []Site
	for k, c := range cum {
		if flat[k] == 0 && c == 0 {
			continue
		}
		s := Site{Function: k.fn, File: k.file, Line: k.line, Flat: flat[k], Cum: c, Inlined: chains[k].chain}
		if total != 0 {
			s.FlatShare = float64(s.Flat) / float64(total)
			s.CumShare = float64(s.Cum) / float64(total)
		}
		sites = append(sites, s)
	}
	slices.SortFunc(sites, func(a, b Site) int { return compareSites(a, b, false) })
	st := p.SampleType[idx]
	return Table{SampleType: st.Type, Unit: st.Unit, Total: total, Sites: sites}
}

// compareSites orders sites as Top documents.
func compareSites(a, b Site, byCum bool) int {
	ka, kb := a.Flat, b.Flat
	if byCum {
		ka, kb = a.Cum, b.Cum
	}
	switch {
	case ka != kb:
		if ka > kb {
			return -1
		}
		return 1
	case a.Function != b.Function:
		return strings.Compare(a.Function, b.Function)
	case a.File != b.File:
		return strings.Compare(a.File, b.File)
	case a.Line < b.Line:
		return -1
	case a.Line > b.Line:
		return 1
	}
	return 0
}

func TestTop_synthetic(t *testing.T) {
	fMain := &profile.Function{ID: 1, Name: "main.main", Filename: "main.go"}
	fRec := &profile.Function{ID: 2, Name: "main.rec", Filename: "rec.go"}
	fSmall := &profile.Function{ID: 3, Name: "main.small", Filename: "small.go"}
	fA := &profile.Function{ID: 4, Name: "main.a", Filename: "a.go"}
	fB := &profile.Function{ID: 5, Name: "main.b", Filename: "b.go"}
	loc := func(id uint64, lines ...profile.Line) *profile.Location {
		return &profile.Location{ID: id, Address: 0x1000 + id, Line: lines}
	}
	main := loc(1, profile.Line{Function: fMain, Line: 5})
	rec := loc(2, profile.Line{Function: fRec, Line: 7})
	// main.small line 3 inlined into main.a and, elsewhere, into main.b.
	smallInA := loc(3, profile.Line{Function: fSmall, Line: 3}, profile.Line{Function: fA, Line: 11})
	smallInB := loc(4, profile.Line{Function: fSmall, Line: 3}, profile.Line{Function: fB, Line: 22})
	bare := loc(5)
	// Sparse IDs and a location missing from p.Location take the slow path.
	sparse := loc(1<<40, profile.Line{Function: fB, Line: 99})
	stray := loc(2, profile.Line{Function: fA, Line: 12}) // same ID as rec

	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{rec, rec, rec, main}, Value: []int64{100}}, // recursion
			{Location: []*profile.Location{smallInA, main}, Value: []int64{10}},
			{Location: []*profile.Location{smallInB, main}, Value: []int64{30}},
			{Location: []*profile.Location{bare, main}, Value: []int64{4}},
			{Location: nil, Value: []int64{2}},
			{Location: []*profile.Location{sparse, main}, Value: []int64{8}},
			{Location: []*profile.Location{stray, rec, main}, Value: []int64{16}},
			{Location: []*profile.Location{rec, main}, Value: []int64{0}},
		},
		Location: []*profile.Location{main, rec, smallInA, smallInB, bare, sparse},
		Function: []*profile.Function{fMain, fRec, fSmall, fA, fB},
	}
	tab, err := Top(p, TopOptions{})
	if err != nil {
		t.Fatalf("Top: %v", err)
	}
	const total = 170
	share := func(v int64) float64 { return float64(v) / total }
	site := func(fn, file string, line, flat, cum int64, inlined ...string) Site {
		return Site{Function: fn, File: file, Line: line, Flat: flat, Cum: cum, FlatShare: share(flat), CumShare: share(cum), Inlined: inlined}
	}
	want := Table{SampleType: "alloc_space", Unit: "bytes", Total: total, Sites: []Site{
		site("main.rec", "rec.go", 7, 100, 116),
		site("main.small", "small.go", 3, 40, 40, "main.small", "main.b"),
		site("main.a", "a.go", 12, 16, 16),
		site("main.b", "b.go", 99, 8, 8),
		site("0x1005", "", 0, 4, 4),
		site(NoStack, "", 0, 2, 2),
		site("main.a", "a.go", 11, 0, 10),
		site("main.b", "b.go", 22, 0, 30),
		site("main.main", "main.go", 5, 0, 168),
	}}
	if !reflect.DeepEqual(tab, want) {
		got, _ := json.MarshalIndent(tab, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("Top =\n%s\nwant\n%s", got, exp)
	}

	byCum, err := Top(p, TopOptions{SortByCum: true, N: 3})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range byCum.Sites {
		names = append(names, s.Function)
	}
	if want := []string{"main.main", "main.rec", "main.small"}; !slices.Equal(names, want) {
		t.Errorf("by cum: %v, want %v", names, want)
	}
}

func TestTop_edgeCases(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "main.f", Filename: "f.go"}
	l := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 1}}}
	types := []*profile.ValueType{{Type: "objects", Unit: "count"}, {Type: "space", Unit: "bytes"}}
	tests := []struct {
		name    string
		p       *profile.Profile
		opts    TopOptions
		want    Table
		wantErr string
	}{
		{name: "nil profile", p: nil, wantErr: "top: nil profile"},
		{name: "unknown sample", p: &profile.Profile{SampleType: types}, opts: TopOptions{Sample: "cpu"}, wantErr: `sample type "cpu" not in profile; it has objects, space`},
		{name: "no samples", p: &profile.Profile{SampleType: types}, want: Table{SampleType: "space", Unit: "bytes", Sites: []Site{}}},
		{name: "short sample", p: &profile.Profile{SampleType: types, Sample: []*profile.Sample{{Location: []*profile.Location{l}, Value: []int64{1}}}}, wantErr: "top: sample 0 has 1 values, want 2"},
		{name: "zero total", p: &profile.Profile{SampleType: types, Location: []*profile.Location{l}, Sample: []*profile.Sample{
			{Location: []*profile.Location{l}, Value: []int64{1, 5}},
			{Location: []*profile.Location{l}, Value: []int64{1, -5}},
		}}, opts: TopOptions{Sample: "objects"}, want: Table{SampleType: "objects", Unit: "count", Total: 2, Sites: []Site{
			{Function: "main.f", File: "f.go", Line: 1, Flat: 2, Cum: 2, FlatShare: 1, CumShare: 1},
		}}},
		{name: "values cancel out", p: &profile.Profile{SampleType: types, Location: []*profile.Location{l}, Sample: []*profile.Sample{
			{Location: []*profile.Location{l}, Value: []int64{1, 5}},
			{Location: []*profile.Location{l}, Value: []int64{1, -5}},
		}}, want: Table{SampleType: "space", Unit: "bytes", Total: 0, Sites: []Site{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Top(tt.p, tt.opts)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Top error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Top: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Top = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestTop_golden pins the table of the checked-in end profile. Run with
// -update after regenerating the profiles.
func TestTop_golden(t *testing.T) {
	p := loadProfile(t, "heap-end.pb.gz")
	for _, sample := range []string{AllocSpace, InuseSpace} {
		t.Run(sample, func(t *testing.T) {
			tab, err := Top(p, TopOptions{Sample: sample, N: 15})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(tab, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			goldenfile.Check(t, filepath.Join("testdata", "top-heap-end-"+sample+".golden.json"), got)
		})
	}
}

func BenchmarkTop(b *testing.B) {
	p := loadProfile(b, "heap-end.pb.gz")
	b.Logf("%d samples, %d locations", len(p.Sample), len(p.Location))
	for _, opts := range []TopOptions{{Sample: AllocSpace}, {Sample: AllocSpace, N: 20}} {
		name := "all"
		if opts.N > 0 {
			name = "n20"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Top(p, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	data := readTestdata(b, "heap-end.pb.gz")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, DefaultMaxDecompressed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTop_reference measures the plain reimplementation, for
// comparison with BenchmarkTop.
func BenchmarkTop_reference(b *testing.B) {
	p := loadProfile(b, "heap-end.pb.gz")
	b.ReportAllocs()
	for b.Loop() {
		referenceTop(p, AllocSpace)
	}
}
