package goldenfile

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	// The wants are what GNU diff -u prints for the same inputs.
	tests := []struct {
		name      string
		want, got string
		diff      string
	}{
		{name: "equal", want: "a\nb\n", got: "a\nb\n", diff: ""},
		{
			name: "two hunks",
			want: "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n",
			got:  "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n",
			diff: "@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n@@ -11,3 +11,4 @@\n k\n l\n m\n+n\n",
		},
		{
			name: "changes close together share a hunk",
			want: "a\nb\nc\nd\ne\nf\ng\n",
			got:  "a\nB\nc\nd\ne\nF\ng\n",
			diff: "@@ -1,7 +1,7 @@\n a\n-b\n+B\n c\n d\n e\n-f\n+F\n g\n",
		},
		{
			name: "missing final newline",
			want: "x\ny",
			got:  "x\ny\n",
			diff: "@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y\n",
		},
		{name: "from empty", want: "", got: "one\n", diff: "@@ -0,0 +1 @@\n+one\n"},
		{name: "to empty", want: "one\ntwo\n", got: "", diff: "@@ -1,2 +0,0 @@\n-one\n-two\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.diff
			if want != "" {
				want = "--- w\n+++ g\n" + want
			}
			if got := unifiedDiff("w", tt.want, "g", tt.got); got != want {
				t.Errorf("diff:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestEditScript_ShortestAndFaithful checks the edit scripts of random
// inputs: applied to a they give b, and they change no more lines than a
// longest common subsequence leaves.
func TestEditScript_ShortestAndFaithful(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() []string {
		lines := make([]string, rng.IntN(30))
		for i := range lines {
			lines[i] = string(rune('a' + rng.IntN(4)))
		}
		return lines
	}
	for i := range 500 {
		a, b := random(), random()
		edits := editScript(a, b)
		var fromA, toB []string
		changed := 0
		for _, e := range edits {
			if e.kind != '+' {
				fromA = append(fromA, e.line)
			}
			if e.kind != '-' {
				toB = append(toB, e.line)
			}
			if e.kind != ' ' {
				changed++
			}
		}
		if fmt.Sprint(fromA) != fmt.Sprint(a) || fmt.Sprint(toB) != fmt.Sprint(b) {
			t.Fatalf("case %d: script %v does not turn %v into %v", i, edits, a, b)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changed != want {
			t.Fatalf("case %d: %d lines changed from %v to %v, the shortest script changes %d", i, changed, a, b, want)
		}
	}
}

// lcs is the length of a longest common subsequence, the slow way.
func lcs(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func TestEditScript_GivesUpOnHugeChanges(t *testing.T) {
	var a, b []string
	for i := range maxEdits {
		a = append(a, fmt.Sprintf("old %d\n", i))
		b = append(b, fmt.Sprintf("new %d\n", i))
	}
	edits := editScript(a, b)
	if len(edits) != 2*maxEdits || edits[0].kind != '-' || edits[len(edits)-1].kind != '+' {
		t.Errorf("%d edits, want every old line removed then every new one added", len(edits))
	}
	d := unifiedDiff("w", strings.Join(a, ""), "g", strings.Join(b, ""))
	if n := strings.Count(d, "\n"); n > maxDiffLines+3 || !strings.Contains(d, "more lines of diff") {
		t.Errorf("diff of %d lines, want it cut at %d", n, maxDiffLines)
	}
}

// recorder is a testing.TB that keeps what Check reports.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
}

func TestCheck(t *testing.T) {
	if Update() {
		t.Skip("with -update, Check writes instead of comparing")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("match", func(t *testing.T) {
		r := &recorder{TB: t}
		Check(r, path, []byte("one\ntwo\nthree\n"))
		if len(r.errors) != 0 {
			t.Errorf("errors %q for equal output", r.errors)
		}
		if _, err := os.Stat(path + ".got"); !os.IsNotExist(err) {
			t.Errorf("a match left %s.got (%v)", path, err)
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		r := &recorder{TB: t}
		Check(r, path, []byte("one\n2\nthree\n"))
		if len(r.errors) != 1 {
			t.Fatalf("errors %q, want one", r.errors)
		}
		wantDiff := "--- " + path + "\n+++ " + path + ".got\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
		if !strings.HasSuffix(r.errors[0], wantDiff) {
			t.Errorf("error %q, want it to end in the diff %q", r.errors[0], wantDiff)
		}
		if got, err := os.ReadFile(path + ".got"); err != nil || string(got) != "one\n2\nthree\n" {
			t.Errorf("%s.got holds %q (%v), want the output", path, got, err)
		}
	})
	t.Run("no golden file", func(t *testing.T) {
		r := &recorder{TB: t}
		Check(r, filepath.Join(dir, "missing.txt"), []byte("x"))
		if !r.fatal || !strings.Contains(r.errors[0], "create it with -update") {
			t.Errorf("errors %q, fatal %v: want a fatal error that says how to create the file", r.errors, r.fatal)
		}
	})
}
