package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		formats []Format
		want    Format
		wantErr string
	}{
		{in: "text", want: FormatText},
		{in: "json", want: FormatJSON},
		{in: "markdown", want: FormatMarkdown},
		{in: "md", want: FormatMarkdown},
		{in: "html", wantErr: `--format "html": give text, json or markdown`},
		{in: "", wantErr: `--format "": give text, json or markdown`},
		{in: "json", formats: []Format{FormatText, FormatJSON}, want: FormatJSON},
		{in: "markdown", formats: []Format{FormatText, FormatJSON}, wantErr: `--format "markdown": give text or json`},
		{in: "md", formats: []Format{FormatText, FormatJSON}, wantErr: `--format "md": give text or json`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFormat(tt.in, tt.formats...)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("ParseFormat(%q, %v) = %q, %v; want the error %q", tt.in, tt.formats, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseFormat(%q, %v) = %q, %v; want %q", tt.in, tt.formats, got, err, tt.want)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	tests := []struct {
		name    string
		formats []Format
		want    Format
		wantErr string
	}{
		{name: "out/gc.svg", formats: []Format{FormatSVG, FormatHTML}, want: FormatSVG},
		{name: "GC.HTML", formats: []Format{FormatSVG, FormatHTML}, want: FormatHTML},
		{name: "x.png", formats: []Format{FormatSVG, FormatHTML}, wantErr: "the extension picks the format: use .svg or .html"},
		{name: "c.md", formats: []Format{FormatHTML, FormatMarkdown, FormatJSON, FormatText}, want: FormatMarkdown},
		{name: "c.txt", formats: []Format{FormatHTML, FormatMarkdown, FormatJSON, FormatText}, want: FormatText},
		{name: "c", formats: []Format{FormatHTML, FormatMarkdown, FormatJSON, FormatText}, wantErr: "use .html, .md, .json or .txt"},
		{name: "bench.xml", formats: []Format{FormatJUnit}, want: FormatJUnit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FormatOf(tt.name, tt.formats...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("FormatOf(%q) = %q, %v; want an error saying %q", tt.name, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("FormatOf(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
			}
		})
	}
}

// TestWrite_formats checks every document against the formats it says
// it has: each renders something, JSON is valid, and a format it lacks
// is an error naming those it has.
func TestWrite_formats(t *testing.T) {
	r := withFinding(withPauses(leakyRun()))
	docs := []Document{
		Run{Result: r, Dir: "runs/leaky"},
		Findings{Findings: r.Findings, Notes: r.DiagnosisNotes},
		Top{Table: r.Top[0]},
		Load{Load: r.Load},
		Comparison{Comparison: comparisons(t)["single"]},
		GCTrace{Summary: gctraceSummary(t, "go1.26.txt")},
		Trace{Timeline: allocTimeline(t), Title: "alloc.trace"},
		Bench{Report: benchReport(t, goldenBench[0])},
		Allocbench{Report: allocbenchReport(t)},
	}
	all := []Format{FormatText, FormatJSON, FormatMarkdown, FormatHTML, FormatSVG, FormatJUnit}
	for _, d := range docs {
		for _, f := range all {
			t.Run(documentName(d)+"/"+string(f), func(t *testing.T) {
				var b bytes.Buffer
				err := Write(&b, f, d)
				if !slices.Contains(d.Formats(), f) {
					if err == nil || !strings.Contains(err.Error(), string(d.Formats()[0])) {
						t.Errorf("Write in %s, a format it lacks: error %v, want one naming its formats", f, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if b.Len() == 0 {
					t.Fatal("wrote nothing")
				}
				if f == FormatJSON && !json.Valid(b.Bytes()) {
					t.Errorf("invalid JSON:\n%s", b.Bytes())
				}
			})
		}
	}
}
