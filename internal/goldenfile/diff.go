package goldenfile

import (
	"fmt"
	"slices"
	"strings"
)

// Limits of the diff a mismatch prints: past maxEdits changed lines the
// diff stops looking for the shortest edit and shows the differing middle
// whole; past maxDiffLines printed lines it is cut (the .got file holds
// everything).
const (
	maxEdits     = 2000
	maxDiffLines = 300
	contextLines = 3
)

// edit is one line of an edit script: kept (' '), removed ('-') or
// added ('+').
type edit struct {
	kind byte
	line string
}

// unifiedDiff returns the differences from want to got as a unified diff
// with three lines of context, as diff -u prints them, headed by the two
// names; "" when they are equal.
func unifiedDiff(wantName, want, gotName, got string) string {
	if want == got {
		return ""
	}
	a, b := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	// SplitAfter leaves an empty last element after a final newline.
	if a[len(a)-1] == "" {
		a = a[:len(a)-1]
	}
	if b[len(b)-1] == "" {
		b = b[:len(b)-1]
	}
	edits := editScript(a, b)

	var out []string
	// before[i] and after[i] count the lines of want and got ahead of
	// edits[i].
	before, after := make([]int, len(edits)+1), make([]int, len(edits)+1)
	for i, e := range edits {
		before[i+1], after[i+1] = before[i], after[i]
		if e.kind != '+' {
			before[i+1]++
		}
		if e.kind != '-' {
			after[i+1]++
		}
	}
	for i := 0; i < len(edits); {
		if edits[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from the context before this change to the context
		// after the last change that is not more than two contexts away.
		start, end := max(i-contextLines, 0), i
		for j := i; j < len(edits) && j-end < 2*contextLines+1; j++ {
			if edits[j].kind != ' ' {
				end = j + 1
			}
		}
		end = min(end+contextLines, len(edits))
		out = append(out, fmt.Sprintf("@@ -%s +%s @@\n",
			hunkRange(before[start], before[end]-before[start]), hunkRange(after[start], after[end]-after[start])))
		for _, e := range edits[start:end] {
			line := string(e.kind) + e.line
			if !strings.HasSuffix(line, "\n") {
				line += "\n\\ No newline at end of file\n"
			}
			out = append(out, line)
		}
		i = end
	}
	if len(out) > maxDiffLines {
		out = append(out[:maxDiffLines], fmt.Sprintf("… %d more lines of diff\n", len(out)-maxDiffLines))
	}
	return fmt.Sprintf("--- %s\n+++ %s\n%s", wantName, gotName, strings.Join(out, ""))
}

// hunkRange writes a hunk's start and length as diff -u does: lines count
// from 1, and an empty range names the line before it.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// editScript returns a shortest edit script from a to b (Myers' O(ND)
// algorithm). Past maxEdits changes it gives up on the shortest one and
// removes the whole differing middle, then adds the new one.
func editScript(a, b []string) []edit {
	// Common ends cost nothing and keep the search small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var edits []edit
	for _, l := range a[:pre] {
		edits = append(edits, edit{' ', l})
	}
	edits = append(edits, middle(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		edits = append(edits, edit{' ', l})
	}
	return edits
}

// middle is editScript without the common ends.
func middle(a, b []string) []edit {
	n, m := len(a), len(b)
	limit := min(n+m, maxEdits)
	// v[k+limit] is the furthest x reached on diagonal k = x-y; trace[d]
	// keeps v over k in [-d, d] after d edits, for the way back.
	v := make([]int, 2*limit+2)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[limit+k-1] < v[limit+k+1] {
				x = v[limit+k+1] // down: a line of b added
			} else {
				x = v[limit+k-1] + 1 // right: a line of a removed
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[limit+k] = x
			if x >= n && y >= m {
				trace = append(trace, slices.Clone(v[limit-d:limit+d+1]))
				return backtrack(a, b, trace)
			}
		}
		trace = append(trace, slices.Clone(v[limit-d:limit+d+1]))
	}
	var edits []edit
	for _, l := range a {
		edits = append(edits, edit{'-', l})
	}
	for _, l := range b {
		edits = append(edits, edit{'+', l})
	}
	return edits
}

// backtrack walks the trace of middle back from the end of both inputs.
func backtrack(a, b []string, trace [][]int) []edit {
	var rev []edit
	x, y := len(a), len(b)
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // prev[k+d-1] is the furthest x on diagonal k
		k := x - y
		pk := k - 1
		if k == -d || k != d && prev[k-1+d-1] < prev[k+1+d-1] {
			pk = k + 1
		}
		px := prev[pk+d-1]
		py := px - pk
		for x > px && y > py {
			rev = append(rev, edit{' ', a[x-1]})
			x, y = x-1, y-1
		}
		if x == px {
			rev = append(rev, edit{'+', b[y-1]})
			y--
		} else {
			rev = append(rev, edit{'-', a[x-1]})
			x--
		}
	}
	for x > 0 && y > 0 {
		rev = append(rev, edit{' ', a[x-1]})
		x, y = x-1, y-1
	}
	slices.Reverse(rev)
	return rev
}
