package flame

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// loadStacks reads a profile under testdata through the streaming decoder.
func loadStacks(t testing.TB, name string) *pprofx.Stacks {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := pprofx.ReadStacks(f, pprofx.ReadOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return s
}

func build(t testing.TB, s *pprofx.Stacks, opts Options) *Tree {
	t.Helper()
	tree, err := Build(s, opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return tree
}

func stacksOf(t testing.TB, p *profile.Profile) *pprofx.Stacks {
	t.Helper()
	s, err := pprofx.StacksOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dumpTree renders a tree one node a line, indented by depth, for golden
// files and readable comparisons.
func dumpTree(t *Tree) string {
	var b strings.Builder
	b.WriteString("types:")
	for i, st := range t.Types {
		fmt.Fprintf(&b, " %s/%s", st.Name, st.Unit)
		if i == t.Default {
			b.WriteString("*")
		}
	}
	b.WriteString("\n")
	nt := len(t.Types)
	vals := func(f func(n, typ int) int64, n int) []int64 {
		v := make([]int64, nt)
		for c := range nt {
			v[c] = f(n, c)
		}
		return v
	}
	for n, node := range t.Nodes {
		b.WriteString(strings.Repeat(" ", int(node.Depth)))
		if n == 0 {
			b.WriteString("root")
		} else {
			f := t.Functions[node.Function]
			fmt.Fprintf(&b, "%s %s [%s]", f.Name, location(f, node), f.Kind)
		}
		fmt.Fprintf(&b, " total=%v self=%v", vals(t.Total, n), vals(t.Self, n))
		if e := vals(t.Elided, n); fmt.Sprint(e) != fmt.Sprint(make([]int64, nt)) {
			fmt.Fprintf(&b, " elided=%v", e)
		}
		if t.Diff != nil {
			fmt.Fprintf(&b, " other=%v change=", t.Diff.other[n*nt:n*nt+nt])
			for c := range nt {
				fmt.Fprintf(&b, "%.3f,", t.Change(n, c))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkSums asserts the invariant of every tree: a node's total is its
// self plus its children's totals plus what was pruned below it; and the
// layout invariants of the node slice.
func checkSums(t *testing.T, tree *Tree) {
	t.Helper()
	for n, node := range tree.Nodes {
		if node.End <= int32(n) || int(node.End) > len(tree.Nodes) {
			t.Fatalf("node %d: End %d out of range", n, node.End)
		}
		if n > 0 {
			p := tree.Nodes[node.Parent]
			if node.Depth != p.Depth+1 || int(node.Parent) >= n || p.End < node.End {
				t.Fatalf("node %d: inconsistent with its parent %d", n, node.Parent)
			}
		}
		for c := range tree.Types {
			sum := tree.Self(n, c) + tree.Elided(n, c)
			for ch := range tree.Children(n) {
				sum += tree.Total(ch, c)
			}
			if sum != tree.Total(n, c) {
				t.Errorf("node %d (%s) type %d: self %d + children + elided %d = %d, want total %d",
					n, tree.Name(n), c, tree.Self(n, c), tree.Elided(n, c), sum, tree.Total(n, c))
			}
		}
	}
}
