package flame

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/pprofx"
)

func TestFormatOf(t *testing.T) {
	tests := []struct {
		name     string
		format   Format
		ok       bool
		minShare float64
	}{
		{name: "out/graph.svg", format: FormatSVG, ok: true, minShare: 0.0001},
		{name: "graph.HTML", format: FormatHTML, ok: true, minShare: 0.00001},
		{name: "stacks.folded", format: FormatFolded, ok: true, minShare: 0},
		{name: "graph.png"},
		{name: "graph"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := FormatOf(tt.name)
			if f != tt.format || ok != tt.ok {
				t.Fatalf("FormatOf = %q, %v; want %q, %v", f, ok, tt.format, tt.ok)
			}
			if ok && f.DefaultMinShare() != tt.minShare {
				t.Errorf("DefaultMinShare = %v, want %v", f.DefaultMinShare(), tt.minShare)
			}
		})
	}
}

func TestParseShare(t *testing.T) {
	for in, want := range map[string]float64{"0.1%": 0.001, "0.001": 0.001, "0": 0, " 5 % ": 0.05} {
		if got, err := ParseShare(in); err != nil || got != want {
			t.Errorf("ParseShare(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "100%", "-1%", "1.5", "NaN"} {
		if _, err := ParseShare(in); err == nil {
			t.Errorf("ParseShare(%q) succeeded", in)
		}
	}
}

func TestNewInput(t *testing.T) {
	heap := loadStacks(t, "heap-before.pb.gz")
	empty := stacksOf(t, &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
	})
	fn := &profile.Function{ID: 1, Name: "main.f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	zero := stacksOf(t, &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{0}}},
		Location:   []*profile.Location{loc},
		Function:   []*profile.Function{fn},
	})
	tests := []struct {
		name    string
		s       *pprofx.Stacks
		sample  string
		wantErr string
	}{
		{name: "heap.pb.gz", s: heap, sample: "alloc_space"},
		{name: "heap.pb.gz", s: heap, sample: "cpu", wantErr: `profile heap.pb.gz: sample type "cpu" not in profile`},
		{name: "empty.pb.gz", s: empty, wantErr: "profile empty.pb.gz is empty: it has no samples"},
		{name: "zero.pb.gz", s: zero, wantErr: "profile zero.pb.gz is empty: every sample's samples is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.sample, func(t *testing.T) {
			in, err := NewInput(tt.name, tt.s, tt.sample)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || in.Name != tt.name || in.Stacks != tt.s {
				t.Fatalf("NewInput = %+v, %v", in, err)
			}
		})
	}
}

func TestDraw(t *testing.T) {
	input := func(name string) Input {
		in, err := NewInput("testdata/"+name, loadStacks(t, name), "")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	before, after, cpu := input("heap-before.pb.gz"), input("heap-after.pb.gz"), input("cpu.pb.gz")
	tests := []struct {
		name    string
		base    *Input
		opts    DrawOptions
		summary string
		want    []string // in the output
	}{
		{
			name:    "svg",
			opts:    DrawOptions{Format: FormatSVG, Options: Options{Sample: "alloc_space"}},
			summary: " frames of alloc_space",
			want:    []string{"<svg", "Flame graph of heap-after.pb.gz"},
		},
		{
			name:    "html has every sample type",
			opts:    DrawOptions{Format: FormatHTML, Title: "mine"},
			summary: " frames of inuse_space",
			want:    []string{"<title>mine</title>", `"name":"profile"`, `"name":"alloc_objects"`, `"name":"inuse_space"`},
		},
		{
			name:    "differential svg",
			base:    &before,
			opts:    DrawOptions{Format: FormatSVG, Diff: DiffOptions{By: ByShare}},
			summary: " frames of inuse_space, coloured by share change",
			want:    []string{"Differential flame graph of heap-after.pb.gz against heap-before.pb.gz", "before ", "coloured by share change"},
		},
		{
			name:    "differential html",
			base:    &before,
			opts:    DrawOptions{Format: FormatHTML},
			summary: " frames of inuse_space, coloured by absolute change",
			want:    []string{`"name":"changes"`, `"name":"vanished"`, `"vanished":true`},
		},
		{
			name:    "differential folded",
			base:    &before,
			opts:    DrawOptions{Format: FormatFolded, Options: Options{MinShare: 0.5}},
			summary: "base and new values of inuse_space",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Draw(after, tt.base, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if s := g.Summary(); !strings.HasSuffix(s, tt.summary) {
				t.Errorf("Summary %q, want it to end in %q", s, tt.summary)
			}
			var out bytes.Buffer
			if err := g.Write(&out); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q", want)
				}
			}
			var vanished bytes.Buffer
			err = g.WriteVanished(&vanished)
			if diff := tt.base != nil && tt.opts.Format != FormatFolded; diff != (err == nil) {
				t.Errorf("WriteVanished: %v, for a differential graph: %v", err, diff)
			}
			if err == nil && !strings.Contains(vanished.String(), "frames that vanished") {
				t.Error("the vanished view lacks its subtitle")
			}
		})
	}

	// Folded differential output is unpruned, whatever the minimum share:
	// each profile's values add up to its total.
	g, err := Draw(after, &before, DrawOptions{Format: FormatFolded, Options: Options{MinShare: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := g.Write(&out); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WriteFoldedDiff(&want, build(t, before.Stacks, Options{}), build(t, after.Stacks, Options{}), ""); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("folded differential output:\n%s\nwant:\n%s", out.String(), want.String())
	}

	if _, err := Draw(after, &cpu, DrawOptions{Format: FormatSVG}); err == nil ||
		!strings.Contains(err.Error(), "base profile testdata/cpu.pb.gz is of another kind: its sample types are samples/count, cpu/nanoseconds") {
		t.Errorf("a base of another kind: error %v", err)
	}
}

func TestDrawOptions_Validate(t *testing.T) {
	tests := []struct {
		name         string
		opts         DrawOptions
		differential bool
		field        string // "" for valid options
		want         string
	}{
		{"plain", DrawOptions{Normalize: NormalizeNone}, false, "", ""},
		{"differential by requests", DrawOptions{Normalize: NormalizeRequests, Requests: 10, BaseRequests: 5}, true, "", ""},
		{"differential by duration", DrawOptions{Normalize: NormalizeDuration}, true, "", ""},
		{"normalize without a base", DrawOptions{Normalize: NormalizeDuration}, false, "Normalize", "Normalize needs Base"},
		{"requests without a base", DrawOptions{Requests: 3}, false, "Requests", "Requests needs Base"},
		{"base requests without a base", DrawOptions{BaseRequests: 3}, false, "BaseRequests", "BaseRequests needs Base"},
		{"requests missing", DrawOptions{Normalize: NormalizeRequests, Requests: 1}, true, "Normalize", "Normalize requests needs Requests N and BaseRequests N, both above 0"},
		{"unknown normalisation", DrawOptions{Normalize: "bogus"}, true, "Normalize", `Normalize "bogus": want none, duration or requests`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate(tt.differential)
			var oe *option.Error
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.field != "" && (!errors.As(err, &oe) || oe.Field != tt.field || err.Error() != tt.want):
				t.Errorf("Validate() = %v, want the %s error %q", err, tt.field, tt.want)
			}
		})
	}
}

// TestDraw_normalize checks the scales a differential graph divides its
// profiles' values by.
func TestDraw_normalize(t *testing.T) {
	input := func(name string) Input {
		in, err := NewInput("testdata/"+name, loadStacks(t, name), "")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	before, after, cpu := input("heap-before.pb.gz"), input("heap-after.pb.gz"), input("cpu.pb.gz")
	g, err := Draw(after, &before, DrawOptions{Format: FormatSVG, Normalize: NormalizeRequests, Requests: 10, BaseRequests: 5})
	if err != nil {
		t.Fatal(err)
	}
	if d := g.tree.Diff; d.Scale != 10 || d.BaseScale != 5 || d.PerUnit != "request" {
		t.Errorf("by requests: scales %v and %v per %q, want 10 and 5 per request", d.Scale, d.BaseScale, d.PerUnit)
	}
	g, err = Draw(cpu, &cpu, DrawOptions{Format: FormatSVG, Normalize: NormalizeDuration})
	if err != nil {
		t.Fatal(err)
	}
	if d, s := g.tree.Diff, float64(cpu.Stacks.DurationNanos)/1e9; d.Scale != s || d.BaseScale != s || d.PerUnit != "s" || s <= 0 {
		t.Errorf("by duration: scales %v and %v per %q, want the profile's %vs", d.Scale, d.BaseScale, d.PerUnit, s)
	}
	_, err = Draw(after, &before, DrawOptions{Format: FormatSVG, Normalize: NormalizeDuration})
	var oe *option.Error
	if !errors.As(err, &oe) || oe.Field != "Normalize" || !strings.Contains(err.Error(), "testdata/heap-after.pb.gz does not say how long it covers") {
		t.Errorf("by the duration of heap profiles: %v, want an error saying they do not have one", err)
	}
}
