package bench

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildBenchstat builds golang.org/x/perf/cmd/benchstat, at the version
// go.mod requires, from the module cache.
func buildBenchstat(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build benchstat: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "benchstat")
	cmd := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build benchstat: %v\n%s", err, out)
	}
	return bin
}

// benchstatCell is what benchstat's CSV says of one row of one table.
type benchstatCell struct {
	oldCenter, oldCI, newCenter, newCI, delta, p string
}

// runBenchstat runs benchstat -format csv in dir and indexes its rows by
// package, unit and benchmark name.
func runBenchstat(t *testing.T, bin, dir string, args ...string) map[string]benchstatCell {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"-format", "csv"}, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("benchstat %v: %v\n%s", args, err, stderr.Bytes())
	}
	r := csv.NewReader(&stdout)
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("read benchstat's CSV: %v", err)
	}
	cells := map[string]benchstatCell{}
	pkg, unit := "", ""
	for _, rec := range records {
		switch {
		case len(rec) == 1:
			if k, v, ok := strings.Cut(rec[0], ": "); ok && k == "pkg" {
				pkg = v
			}
		case len(rec) >= 3 && rec[0] == "" && rec[2] == "CI":
			unit = rec[1]
		case len(rec) >= 3 && rec[0] != "":
			// A benchmark on the old side only ends after its first cell.
			for len(rec) < 7 {
				rec = append(rec, "")
			}
			cells[pkg+"|"+unit+"|"+rec[0]] = benchstatCell{rec[1], rec[2], rec[3], rec[4], rec[5], rec[6]}
		}
	}
	if len(cells) == 0 {
		t.Fatalf("no rows in benchstat's output:\n%s", stdout.Bytes())
	}
	return cells
}

// TestCompare_agreesWithBenchstat runs benchstat and Compare on the same
// files and checks that centres, ranges, deltas and p-values are the same,
// digit for digit as benchstat prints them.
func TestCompare_agreesWithBenchstat(t *testing.T) {
	bin := buildBenchstat(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	for _, name := range []string{"leakycache.txt", "optimizedcache.txt", "services-a.txt", "services-b.txt"} {
		write(name, string(readBench(t, name)))
	}
	// Crafted: a small significant change, a large insignificant one,
	// unequal run counts, a custom unit, a benchmark on one side only.
	oldCrafted := write("crafted-old.txt",
		crafted("example.com/p", "Small", series{"B/op", spread(1000, 0.001, 10)}, series{"frames/op", spread(10, 0.2, 10)})+
			"BenchmarkNoisy-2\t100\t100 ns/op\nBenchmarkNoisy-2\t100\t400 ns/op\nBenchmarkNoisy-2\t100\t120 ns/op\nBenchmarkNoisy-2\t100\t90 ns/op\n"+
			"BenchmarkGone-2\t100\t5 ns/op\n")
	newCrafted := write("crafted-new.txt",
		crafted("example.com/p", "Small", series{"B/op", spread(1020, 0.001, 9)}, series{"frames/op", spread(13, 0.2, 9)})+
			"BenchmarkNoisy-2\t100\t900 ns/op\nBenchmarkNoisy-2\t100\t80 ns/op\nBenchmarkNoisy-2\t100\t1500 ns/op\nBenchmarkNoisy-2\t100\t95 ns/op\n")

	cases := []struct {
		name, old, new, ignore string
	}{
		{"services", "services-a.txt", "services-b.txt", ""},
		{"services reversed", "services-b.txt", "services-a.txt", ""},
		{"leaky vs optimized", "leakycache.txt", "optimizedcache.txt", "pkg"},
		{"crafted", oldCrafted, newCrafted, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{c.old, c.new}
			if c.ignore != "" {
				args = append([]string{"-ignore", c.ignore}, args...)
			}
			want := runBenchstat(t, bin, dir, args...)
			open := func(name string) Input {
				data, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return Input{Label: name, R: bytes.NewReader(data)}
			}
			rep := mustCompare(t, open(c.old), open(c.new), Options{Ignore: c.ignore, MinRuns: 1})
			seen := 0
			for _, tab := range rep.Tables {
				pkg := configGet(tab.Config, "pkg")
				rows := tab.Rows
				for _, r := range rows {
					key := pkg + "|" + tab.Unit + "|" + r.Name
					w, ok := want[key]
					if !ok {
						t.Errorf("%s: not in benchstat's output", key)
						continue
					}
					seen++
					got := benchstatCell{}
					if r.Old != nil {
						got.oldCenter, got.oldCI = fmt.Sprint(r.Old.Center), r.Old.Range
					}
					if r.New != nil {
						got.newCenter, got.newCI = fmt.Sprint(r.New.Center), r.New.Range
					}
					if r.Delta != nil {
						got.delta, got.p = r.Delta.Text, r.Delta.Stat()
					}
					if got != w {
						t.Errorf("%s:\n got %+v\nwant %+v (benchstat)", key, got, w)
					}
				}
				if g := tab.Geomean; g != nil {
					key := pkg + "|" + tab.Unit + "|geomean"
					w := want[key]
					seen++
					got := benchstatCell{oldCenter: fmt.Sprint(g.Old), newCenter: fmt.Sprint(g.New), delta: fmt.Sprintf("%+.2f%%", (g.Ratio-1)*100)}
					if got != w {
						t.Errorf("%s:\n got %+v\nwant %+v (benchstat)", key, got, w)
					}
				}
			}
			// benchstat writes a geomean row for single-row tables too;
			// the text tables, ours and benchstat's, leave it out.
			for key := range want {
				if strings.HasSuffix(key, "|geomean") {
					continue
				}
				seen--
			}
			for _, tab := range rep.Tables {
				if tab.Geomean != nil {
					seen--
				}
			}
			if seen != 0 {
				t.Errorf("benchstat and Compare disagree on the rows: %d unmatched", seen)
			}
			if c.name == "crafted" {
				assertCraftedVerdicts(t, rep)
			}
		})
	}
}

// assertCraftedVerdicts checks that the crafted pair holds the cases it is
// made of, so that the agreement covers them.
func assertCraftedVerdicts(t *testing.T, rep *Report) {
	t.Helper()
	verdicts := map[string]string{}
	for _, tab := range rep.Tables {
		for _, r := range tab.Rows {
			v := "one side"
			if r.Delta != nil {
				v = fmt.Sprintf("significant=%v", r.Delta.Significant)
			}
			verdicts[tab.Unit+" "+r.Name] = v
		}
	}
	want := map[string]string{
		"B/op Small-2":      "significant=true",
		"frames/op Small-2": "significant=true",
		"sec/op Noisy-2":    "significant=false",
		"sec/op Gone-2":     "one side",
	}
	for k, v := range want {
		if verdicts[k] != v {
			t.Errorf("%s: %s, want %s (all: %v)", k, verdicts[k], v, verdicts)
		}
	}
}
