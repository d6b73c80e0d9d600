package flame

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// readFolded sums the value columns of folded lines by stack.
func readFolded(t *testing.T, data []byte, columns int) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), " ")
		if len(fields) < columns+1 {
			t.Fatalf("line %q has fewer than %d values", sc.Text(), columns)
		}
		stack := strings.Join(fields[:len(fields)-columns], " ")
		if _, dup := out[stack]; dup {
			t.Errorf("stack %q written twice", stack)
		}
		for _, f := range fields[len(fields)-columns:] {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			out[stack] = append(out[stack], v)
		}
	}
	return out
}

func sumColumn(m map[string][]int64, col int) int64 {
	var s int64
	for _, v := range m {
		s += v[col]
	}
	return s
}

func TestWriteFolded(t *testing.T) {
	tree := build(t, stacksOf(t, synthetic()), Options{AllTypes: true})
	var buf bytes.Buffer
	if err := WriteFolded(&buf, tree, "alloc_objects"); err != nil {
		t.Fatal(err)
	}
	want := `[no stack] 2
main.main;0x1008 1
main.main;github.com/acme/app/internal/server.(*S).handle 1
main.main;github.com/acme/app/internal/server.(*S).handle;encoding/json.Marshal 5
main.main;github.com/acme/app/internal/server.(*S).handle;encoding/json.Marshal;runtime.mallocgc 3
main.main;github.com/acme/app/internal/server.(*S).handle;github.com/acme/app/internal/server.small 2
main.main;github.com/other/lib.Do 6
main.main;main.rec;main.rec;main.rec 4
`
	if buf.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", buf.String(), want)
	}

	// Pruned frames show under [pruned], so the lines still sum to the
	// total.
	pruned := build(t, stacksOf(t, synthetic()), Options{MinShare: 0.2})
	buf.Reset()
	if err := WriteFolded(&buf, pruned, ""); err != nil {
		t.Fatal(err)
	}
	lines := readFolded(t, buf.Bytes(), 1)
	if got := sumColumn(lines, 0); got != pruned.Total(0, 0) {
		t.Errorf("pruned folded lines sum to %d, want %d", got, pruned.Total(0, 0))
	}
	if _, ok := lines["main.main;"+PrunedFrame]; !ok {
		t.Errorf("no [pruned] line under main.main:\n%s", buf.String())
	}
}

func TestWriteFoldedDiff(t *testing.T) {
	before, after := pair(t)
	var buf bytes.Buffer
	if err := WriteFoldedDiff(&buf, before, after, ""); err != nil {
		t.Fatal(err)
	}
	lines := readFolded(t, buf.Bytes(), 2)
	if got, want := sumColumn(lines, 0), before.Total(0, 0); got != want {
		t.Errorf("base column sums to %d, want %d", got, want)
	}
	if got, want := sumColumn(lines, 1), after.Total(0, 0); got != want {
		t.Errorf("new column sums to %d, want %d", got, want)
	}
	for stack, want := range map[string][2]int64{
		"main.main;main.audit": {0, 30},
		"main.main;github.com/acme/app/internal/server.(*S).handle;encoding/json.Marshal": {50, 0},
		"main.main;main.rec;main.rec;main.rec":                                            {40, 20},
	} {
		if got := lines[stack]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: %v, want %v", stack, got, want)
		}
	}
}

func TestWriteFolded_frameNames(t *testing.T) {
	p := synthetic()
	p.Function[0].Name = "main.main;evil\nname"
	var buf bytes.Buffer
	if err := WriteFolded(&buf, build(t, stacksOf(t, p), Options{}), ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "main.main:evil name") {
		t.Errorf("a name with ';' and a line break is not escaped:\n%s", buf.String())
	}
}

// TestWriteFolded_matchesMerger checks that the folded stacks of
// pprofx.Merger, which the server writes without a tree, are the lines
// WriteFolded writes for the merged profile unpruned.
func TestWriteFolded_matchesMerger(t *testing.T) {
	for _, files := range [][]string{
		{"heap-before.pb.gz", "heap-after.pb.gz"},
		{"cpu.pb.gz", "cpu.pb.gz"},
	} {
		t.Run(strings.Join(files, "+"), func(t *testing.T) {
			m := pprofx.NewMerger(pprofx.MergeOptions{})
			for _, name := range files {
				data, err := os.ReadFile(filepath.Join("testdata", name))
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Add(name, bytes.NewReader(data)); err != nil {
					t.Fatal(err)
				}
			}
			var merged bytes.Buffer
			if err := m.WriteProfile(&merged); err != nil {
				t.Fatal(err)
			}
			s, err := pprofx.ReadStacks(&merged, pprofx.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range m.SampleTypes() {
				var fromMerger, fromTree bytes.Buffer
				if err := m.WriteFolded(&fromMerger, i); err != nil {
					t.Fatal(err)
				}
				if err := WriteFolded(&fromTree, build(t, s, Options{Sample: st.Type}), st.Type); err != nil {
					t.Fatal(err)
				}
				a, b := sortedLines(fromMerger.String()), sortedLines(fromTree.String())
				if a != b {
					t.Errorf("%s: Merger.WriteFolded and WriteFolded differ:\nmerger:\n%.2000s\ntree:\n%.2000s", st.Type, a, b)
				}
				if len(a) < 100 {
					t.Errorf("%s: only %d bytes of folded stacks", st.Type, len(a))
				}
			}
		})
	}
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
