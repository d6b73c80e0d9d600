package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/goldenfile"
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
			Target: api, Time: t0.Add(15 * time.Minute), Path: "runs/127.0.0.1_6060-1a2b/20261125T033000Z", Severity: "high",
			Kind: "leak.heap_growth", Title: "a map that only grows holds the leak", Where: "leakycache.go:38", Source: store.SourceRun,
		}},
	}
	for _, f := range []struct {
		format Format
		ext    string
	}{{FormatText, "text"}, {FormatMarkdown, "md"}, {FormatJSON, "json"}} {
		t.Run(f.ext, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, f.format, History{History: h, Dir: "/var/lib/heapscope"}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "history."+f.ext), b.Bytes())
			if f.format == FormatJSON {
				var back struct {
					Runs, Bundles, Findings []map[string]any
				}
				if err := json.Unmarshal(b.Bytes(), &back); err != nil {
					t.Fatal(err)
				}
				if len(back.Runs) != 2 || len(back.Bundles) != 1 || len(back.Findings) != 1 {
					t.Fatalf("JSON history has %d runs, %d bundles, %d findings", len(back.Runs), len(back.Bundles), len(back.Findings))
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
