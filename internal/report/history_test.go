package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heapscope/heapscope/internal/goldenfile"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/store"
)

func TestHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 15, 0, 0, time.UTC)
	const api = "http://127.0.0.1:6060/debug/pprof/"
	h := store.History{
		Bundles: []store.Entry{{
			Kind: store.KindBundle, Target: api, Time: t0.Add(95 * time.Minute), Path: "bundles/127.0.0.1_6060-1a2b/20261125T045000Z-memory",
			Status: "complete", Bytes: 412_000, CaptureSeconds: 6.4, BeforeOOM: true,
			Trigger: &store.Trigger{Expr: "memory>=80%", Value: 83.2, Threshold: 80, Unit: "%"},
		}},
		Runs: []store.Entry{
			{Kind: store.KindRun, Target: api, Time: t0.Add(15 * time.Minute), Path: "runs/127.0.0.1_6060-1a2b/20261125T033000Z", Status: "complete", Bytes: 254_000, Scheduled: true},
			{Kind: store.KindRun, Target: api, Time: t0, Path: "runs/127.0.0.1_6060-1a2b/20261125T031500Z", Status: "partial", Bytes: 98_000, Scheduled: true},
		},
		Findings: []store.Finding{{
			Target: api, Time: t0.Add(95 * time.Minute), Path: "bundles/127.0.0.1_6060-1a2b/20261125T045000Z-memory", Severity: "high",
			Kind: "leak.heap_growth", Title: "a map that only grows holds the leak: " + strings.Repeat("765 KiB → 819 KiB → ", 30),
			Where: "github.com/heapscope/heapscope/examples/leakycache/leakycache.go:38", Source: store.SourceBundle,
			Evidence: map[string]float64{"slope_bytes_per_minute": 4.4 * (1 << 20)},
		}, {
			Target: api, Time: t0.Add(15 * time.Minute), Path: "runs/127.0.0.1_6060-1a2b/20261125T033000Z", Severity: "high",
			Kind: "leak.heap_growth", Title: "a map that only grows holds the leak", Where: "github.com/heapscope/heapscope/examples/leakycache/leakycache.go:38",
			Source: store.SourceRun,
		}, {
			Target: api, Time: t0.Add(15 * time.Minute), Path: "runs/127.0.0.1_6060-1a2b/20261125T033000Z", Severity: "info",
			Kind: "rss.breakdown", Title: "RSS 24.2 MiB", Source: store.SourceRun,
		}},
	}
	ps := problem.Find(api, store.Captures(h)[api])
	if len(ps) != 1 || ps[0].Captures != 2 {
		t.Fatalf("problems %+v: want the leak, once, in 2 captures", ps)
	}
	for _, f := range []struct {
		format Format
		ext    string
	}{{FormatText, "text"}, {FormatMarkdown, "md"}, {FormatJSON, "json"}} {
		t.Run(f.ext, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, f.format, History{History: h, Problems: ps, Dir: "/var/lib/heapscope", Width: 120}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "history."+f.ext), b.Bytes())
			if f.format == FormatText {
				lines := 0
				for _, line := range strings.Split(b.String(), "\n") {
					if n := utf8.RuneCountInString(line); strings.Contains(line, "leak.heap_growth") && n > 120 {
						t.Errorf("a line of %d characters, more than the width 120: %q", n, line)
					}
					if strings.Contains(line, "leak.heap_growth") {
						lines++
					}
				}
				if lines != 1 {
					t.Errorf("the leak's text is in %d lines, want the problem's one:\n%s", lines, b.String())
				}
			}
			if f.format == FormatJSON {
				var back struct {
					Runs, Bundles, Findings, Problems []map[string]any
				}
				if err := json.Unmarshal(b.Bytes(), &back); err != nil {
					t.Fatal(err)
				}
				if len(back.Runs) != 2 || len(back.Bundles) != 1 || len(back.Findings) != 3 || len(back.Problems) != 1 {
					t.Fatalf("JSON history has %d runs, %d bundles, %d findings, %d problems", len(back.Runs), len(back.Bundles), len(back.Findings), len(back.Problems))
				}
				if p := back.Problems[0]; p["state"] != "open" || p["captures"] != 2.0 || p["where"] != ps[0].Where || p["trend"] == nil {
					t.Errorf("problem %v: want the leak open in 2 captures, where and trend", p)
				}
				for _, item := range append(append(back.Runs, back.Bundles...), back.Findings...) {
					for _, key := range []string{"target", "time", "path"} {
						if _, ok := item[key]; !ok {
							t.Errorf("item %v lacks %q", item, key)
						}
					}
				}
				if tr, _ := back.Bundles[0]["trigger"].(map[string]any); tr["expr"] != "memory>=80%" || back.Bundles[0]["capture_seconds"] != 6.4 {
					t.Errorf("bundle %v: want its trigger and capture_seconds", back.Bundles[0])
				}
			}
		})
	}
}
