package report

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/goldenfile"
	"github.com/heapscope/heapscope/internal/result"
)

// flameSVG is a small SVG in the shape flame.WriteSVG gives: an XML
// declaration, a root with its size, an inline script, and text that needs
// escaping inside an attribute.
const flameSVG = `<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="1200" height="150" viewBox="0 0 1200 150" xmlns="http://www.w3.org/2000/svg">
<script type="text/ecmascript"><![CDATA[
var flameConfig = {"unit":"bytes"};
]]></script>
<g class="f" data-n="main.(*T).grow"><title>main.(*T).grow &amp; "friends" (100%)</title><rect x="10" y="84" width="1180" height="15"/></g>
</svg>
`

// withPauses adds the window's GC pauses: twelve cycles, the last two
// forced by heapscope's snapshots.
func withPauses(r *result.Run) *result.Run {
	for i := range 12 {
		offset := 1.5 * float64(i+1)
		r.MemStats.GCPauses = append(r.MemStats.GCPauses, result.GCPause{
			Cycle: uint32(30 + i), End: r.Window.Start.Add(time.Duration(offset * float64(time.Second))),
			OffsetSeconds: offset, PauseSeconds: float64(30+15*i) * 1e-6,
		})
	}
	return r
}

func withFinding(r *result.Run) *result.Run {
	r.Findings = append(r.Findings, result.Finding{
		ID: "leak.inuse-growth", Severity: "high", Title: "In-use heap grows without bound at one site",
		Function: "example.com/cache.(*Worker).Process", File: "/src/cache/worker.go", Line: 42,
		Evidence: map[string]float64{"growth_bytes": 36 << 20, "r2": 1},
		Fix:      "bound the cache <map> & evict", Confidence: 0.9,
		Escape: []string{"worker.go:42: ([]byte)(id) escapes to heap"},
		Symptoms: []result.Symptom{{ID: "leak.goroutine-growth", Severity: "medium",
			Title:    "goroutines blocked receiving <from> a channel at cache.(*Worker).wait grow 12/min",
			Function: "example.com/cache.(*Worker).wait", File: "/src/cache/worker.go", Line: 60}},
	})
	r.DiagnosisNotes = append(r.DiagnosisNotes, "lock contention not checked: no mutex profile")
	return r
}

func leakyFlames() []HTMLFlame {
	return []HTMLFlame{{ID: "flame-alloc_space", Title: "Allocations over the window (alloc_space)", Path: "flame/alloc_space.svg", SVG: []byte(flameSVG)}}
}

func TestHTML_Golden(t *testing.T) {
	tests := []struct {
		name   string
		run    *result.Run
		flames []HTMLFlame
	}{
		{"leaky", withFinding(withPauses(leakyRun())), leakyFlames()},
		{"remote-idle", remoteIdleRun(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := HTML(&buf, tt.run, tt.flames); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, "testdata/report-"+tt.name+".html", buf.Bytes())
		})
	}
}

// TestHTML_ChartPoints checks that the heap chart has a dot per snapshot
// and the GC chart a stem per pause.
func TestHTML_ChartPoints(t *testing.T) {
	r := withPauses(leakyRun())
	var buf bytes.Buffer
	if err := HTML(&buf, r, nil); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	chartOf := func(id string) string {
		_, rest, ok := strings.Cut(out, `id="`+id+`"`)
		if !ok {
			t.Fatalf("no chart %s", id)
		}
		svg, _, _ := strings.Cut(rest, "</svg>")
		return svg
	}
	if got, want := strings.Count(chartOf("heap-chart"), "<circle"), len(r.HeapGrowth.Snapshots); got != want {
		t.Errorf("heap chart has %d dots, want one per snapshot (%d)", got, want)
	}
	if got, want := strings.Count(chartOf("gc-chart"), `<line class="stem"`), len(r.MemStats.GCPauses); got != want {
		t.Errorf("GC chart has %d stems, want one per pause (%d)", got, want)
	}
}

func TestHTML_Content(t *testing.T) {
	render := func(r *result.Run, flames []HTMLFlame) string {
		var buf bytes.Buffer
		if err := HTML(&buf, r, flames); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	external := regexp.MustCompile(`(?i)(src|href|action)\s*=\s*"(https?:)?//|url\(\s*['"]?(https?:)?//|@import`)
	tests := []struct {
		name          string
		run           *result.Run
		flames        []HTMLFlame
		want, notWant []string
	}{
		{
			name: "findings, charts and flames", run: withFinding(withPauses(leakyRun())), flames: leakyFlames(),
			want: []string{
				`class="chart" id="heap-chart"`, `class="chart" id="gc-chart"`,
				`<iframe id="flame-alloc_space"`, `aspect-ratio: 1200 / 150`, `<a href="flame/alloc_space.svg">`,
				// The SVG's markup, escaped once for the attribute: its
				// own escapes are escaped again, its quotes too.
				`&amp;amp; &#34;friends&#34;`,
				"<b>In-use heap grows without bound at one site</b>", "bound the cache &lt;map&gt; &amp; evict",
				"growth_bytes 36.0 MiB, r2 1.00", "90%",
				"<code>worker.go:42: ([]byte)(id) escapes to heap</code>", "<li>lock contention not checked: no mutex profile</li>",
			},
			notWant: []string{"No findings.", "<?xml", "No GC pause"},
		},
		{
			name: "nothing to show", run: remoteIdleRun(),
			want:    []string{"No findings.", "No GC pause recorded over the window.", "No flame graph."},
			notWant: []string{`id="gc-chart"`, "<iframe"},
		},
		{
			name: "ring overflowed", run: func() *result.Run {
				r := withPauses(leakyRun())
				r.MemStats.GCRingOverflowed, r.MemStats.GCCycles = true, 300
				return r
			}(),
			want: []string{"these are the last 12 of the window&#39;s 300 cycles"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := render(tt.run, tt.flames)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("report has %q", w)
				}
			}
			if m := external.FindString(out); m != "" {
				t.Errorf("report makes an external request: %q", m)
			}
			if !strings.Contains(out, `content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"`) {
				t.Error("report lacks its Content-Security-Policy")
			}
		})
	}
}

func TestSummary_NamesTheHTMLReport(t *testing.T) {
	r := leakyRun()
	r.Files.HTMLReport = "report.html"
	var buf bytes.Buffer
	if err := Summary(&buf, r, "out/run"); err != nil {
		t.Fatal(err)
	}
	if want := "Report: out/run/report.md, out/run/report.html\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, buf.String())
	}
}

// FuzzHTML_FlameSVG embeds any bytes as a flame graph's SVG: whatever
// they hold stays inside its frame's srcdoc attribute, so the page keeps
// one frame per graph and nothing of the SVG becomes the page's markup.
func FuzzHTML_FlameSVG(f *testing.F) {
	f.Add([]byte(flameSVG), "Allocations")
	f.Add([]byte(`"></iframe><script>alert(1)</script>`), `"><b>`)
	f.Add([]byte(`<svg width="0" height="99999999999999999999">`), "")
	f.Add([]byte("<?xml"), "x")
	f.Fuzz(func(t *testing.T, svg []byte, title string) {
		var buf bytes.Buffer
		err := HTML(&buf, remoteIdleRun(), []HTMLFlame{{ID: "flame-x", Title: title, SVG: svg}})
		if err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if n := strings.Count(out, "<iframe"); n != 1 {
			t.Fatalf("%d frames, want 1", n)
		}
		_, rest, ok := strings.Cut(out, ` srcdoc="`)
		if !ok {
			t.Fatal("no srcdoc attribute")
		}
		doc, after, ok := strings.Cut(rest, `"`)
		if !ok || !strings.HasPrefix(after, "></iframe>") {
			t.Fatalf("srcdoc attribute does not end at its frame's end: …%.80q", after)
		}
		if strings.ContainsAny(doc, "<>") {
			t.Fatal("srcdoc holds unescaped markup")
		}
		if w, h := svgSize(svg); w <= 0 || h <= 0 {
			t.Fatalf("svg size %d×%d", w, h)
		}
	})
}

// BenchmarkHTML renders the report of a run with a flame graph of about
// a megabyte, the size of a large profile's pruned SVG.
func BenchmarkHTML(b *testing.B) {
	r := withFinding(withPauses(leakyRun()))
	svg := []byte(strings.Repeat(flameSVG, (1<<20)/len(flameSVG)))
	flames := []HTMLFlame{{ID: "flame-alloc_space", Title: "Allocations", SVG: svg}}
	b.ReportAllocs()
	b.SetBytes(int64(len(svg)))
	for b.Loop() {
		if err := HTML(io.Discard, r, flames); err != nil {
			b.Fatal(err)
		}
	}
}
