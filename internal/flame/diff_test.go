package flame

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func TestDiff_SelfIsNeutral(t *testing.T) {
	for _, name := range []string{"heap-before.pb.gz", "cpu.pb.gz"} {
		tree := build(t, loadStacks(t, name), Options{AllTypes: true})
		for _, by := range []DiffBy{ByAbsolute, ByShare} {
			for _, f := range []func(base, after *Tree, opts DiffOptions) (*Tree, error){Diff, Vanished} {
				d, err := f(tree, tree, DiffOptions{By: by})
				if err != nil {
					t.Fatal(err)
				}
				checkSums(t, d)
				for n := range d.Nodes {
					for c := range d.Types {
						if ch := d.Change(n, c); ch != 0 {
							t.Fatalf("%s by %s: node %s changes by %v against itself", name, by, d.Name(n), ch)
						}
						if d.Before(n, c) != d.After(n, c) {
							t.Fatalf("%s: node %s before %v, after %v", name, d.Name(n), d.Before(n, c), d.After(n, c))
						}
					}
				}
			}
		}
	}
}

// pairs builds the trees of two versions of the synthetic profile: after
// drops the json stack, halves the recursion and adds a new stack.
func pair(t *testing.T) (before, after *Tree) {
	t.Helper()
	p := synthetic()
	before = build(t, stacksOf(t, p), Options{})
	q := p.Copy()
	var kept []*profile.Sample
	for _, s := range q.Sample {
		names := ""
		for _, l := range s.Location {
			for _, ln := range l.Line {
				names += ln.Function.Name + ";"
			}
		}
		switch {
		case strings.Contains(names, "json"):
			continue // the json stacks vanish
		case strings.HasPrefix(names, "main.rec;"):
			s.Value = []int64{s.Value[0] / 2, s.Value[1] / 2}
		}
		kept = append(kept, s)
	}
	fNew := &profile.Function{ID: 100, Name: "main.audit", Filename: "audit.go"}
	lNew := &profile.Location{ID: 100, Line: []profile.Line{{Function: fNew, Line: 7}}}
	q.Function = append(q.Function, fNew)
	q.Location = append(q.Location, lNew)
	kept = append(kept, &profile.Sample{Location: []*profile.Location{lNew, q.Location[0]}, Value: []int64{3, 30}})
	q.Sample = kept
	after = build(t, stacksOf(t, q), Options{})
	return before, after
}

func findNode(t *testing.T, tree *Tree, path ...string) int {
	t.Helper()
	for n := range tree.Nodes {
		if strings.Join(tree.Path(n), ";") == strings.Join(path, ";") {
			return n
		}
	}
	t.Fatalf("no node at %v", path)
	return -1
}

func TestDiff(t *testing.T) {
	before, after := pair(t)
	d, err := Diff(before, after, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, d)
	if d.Diff == nil || d.Diff.Vanished {
		t.Fatal("Diff made no differential tree of the new profile's shape")
	}
	tests := []struct {
		path          []string
		before, after float64
		sign          int
	}{
		{path: []string{"main.main", "main.audit"}, before: 0, after: 30, sign: 1},
		{path: []string{"main.main", "main.rec"}, before: 40, after: 20, sign: -1},
		{path: []string{"main.main", "github.com/other/lib.Do"}, before: 60, after: 60, sign: 0},
		{path: []string{"main.main"}, before: 220, after: 150, sign: -1},
		{path: []string{"main.main", "github.com/acme/app/internal/server.(*S).handle"}, before: 110, after: 30, sign: -1},
	}
	for _, tt := range tests {
		n := findNode(t, d, tt.path...)
		if b, a := d.Before(n, 0), d.After(n, 0); b != tt.before || a != tt.after {
			t.Errorf("%v: before %v after %v, want %v and %v", tt.path, b, a, tt.before, tt.after)
		}
		if ch := d.Change(n, 0); sign(ch) != tt.sign || math.Abs(ch) > 1 {
			t.Errorf("%v: change %v, want sign %d", tt.path, ch, tt.sign)
		}
	}
	// The largest change below the root is saturated; others are scaled
	// by the square root of their share of it.
	if ch := d.Change(findNode(t, d, "main.main", "github.com/acme/app/internal/server.(*S).handle"), 0); ch != -1 {
		t.Errorf("handle change %v, want -1 (the largest)", ch)
	}
	if ch, want := d.Change(findNode(t, d, "main.main"), 0), -math.Sqrt(70.0/80); math.Abs(ch-want) > 1e-12 {
		t.Errorf("main.main change %v, want %v", ch, want)
	}
	for n := range d.Nodes {
		if strings.Contains(d.Name(n), "json") {
			t.Errorf("the vanished json frame %s is in the new profile's shape", d.Name(n))
		}
	}

	v, err := Vanished(before, after, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, v)
	n := findNode(t, v, "main.main", "github.com/acme/app/internal/server.(*S).handle", "encoding/json.Marshal")
	if b, a, ch := v.Before(n, 0), v.After(n, 0), v.Change(n, 0); b != 80 || a != 0 || ch >= 0 {
		t.Errorf("vanished json frame: before %v after %v change %v, want 80, 0 and shrank", b, a, ch)
	}
	if !v.Diff.Vanished {
		t.Error("Vanished tree not marked so")
	}
}

func TestDiff_Options(t *testing.T) {
	before, after := pair(t)
	libPath := []string{"main.main", "github.com/other/lib.Do"}
	t.Run("normalised", func(t *testing.T) {
		d, err := Diff(before, after, DiffOptions{BaseScale: 2, Scale: 4, PerUnit: "s"})
		if err != nil {
			t.Fatal(err)
		}
		n := findNode(t, d, libPath...)
		if b, a := d.Before(n, 0), d.After(n, 0); b != 30 || a != 15 {
			t.Errorf("normalised before %v after %v, want 30 and 15", b, a)
		}
		if d.Change(n, 0) >= 0 {
			t.Errorf("lib.Do per second halved, change %v", d.Change(n, 0))
		}
	})
	t.Run("by share", func(t *testing.T) {
		d, err := Diff(before, after, DiffOptions{By: ByShare})
		if err != nil {
			t.Fatal(err)
		}
		// lib.Do kept its value while the total shrank: its share grew.
		if ch := d.Change(findNode(t, d, libPath...), 0); ch <= 0 {
			t.Errorf("by share, lib.Do change %v, want > 0", ch)
		}
		abs, _ := Diff(before, after, DiffOptions{})
		if ch := abs.Change(findNode(t, abs, libPath...), 0); ch != 0 {
			t.Errorf("by value, lib.Do change %v, want 0", ch)
		}
	})
	t.Run("bad scale", func(t *testing.T) {
		if _, err := Diff(before, after, DiffOptions{Scale: -1}); err == nil {
			t.Error("negative scale accepted")
		}
	})
}

func TestDiff_KindMismatch(t *testing.T) {
	heap := build(t, loadStacks(t, "heap-before.pb.gz"), Options{Sample: "alloc_space"})
	cpu := build(t, loadStacks(t, "cpu.pb.gz"), Options{})
	_, err := Diff(heap, cpu, DiffOptions{})
	if !errors.Is(err, ErrKindMismatch) {
		t.Fatalf("error %v, want ErrKindMismatch", err)
	}
	if !strings.Contains(err.Error(), "alloc_space/bytes") || !strings.Contains(err.Error(), "cpu/nanoseconds") {
		t.Errorf("error %q does not name both kinds", err)
	}
}

func TestParseDiffBy(t *testing.T) {
	for in, want := range map[string]DiffBy{"": ByAbsolute, "absolute": ByAbsolute, "share": ByShare} {
		if got, err := ParseDiffBy(in); err != nil || got != want {
			t.Errorf("ParseDiffBy(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseDiffBy("relative"); err == nil {
		t.Error("ParseDiffBy(relative) succeeded")
	}
}

func sign(v float64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
