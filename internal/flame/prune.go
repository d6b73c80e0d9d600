package flame

import "fmt"

// Prune returns a copy of t without the frames whose value is below
// minShare of the root's in every sample type (what Options.MinShare does
// during Build), for trees built unpruned such as those of a diff. The
// value of a pruned frame is added to its parent's Elided. t is not
// modified; functions no frame uses any more are kept.
func (t *Tree) Prune(minShare float64) (*Tree, error) {
	if minShare < 0 || minShare >= 1 {
		return nil, fmt.Errorf("prune flame graph: minimum share %v is not in [0, 1)", minShare)
	}
	nt := len(t.Types)
	out := &Tree{Types: t.Types, Default: t.Default, Functions: t.Functions}
	if t.Diff != nil {
		d := *t.Diff
		d.other, d.change = nil, nil
		out.Diff = &d
	}
	if len(t.Nodes) == 0 {
		return out, nil
	}
	rootAbs := make([]float64, nt)
	for c := range nt {
		rootAbs[c] = float64(abs(t.Total(0, c)))
	}
	small := func(n int) bool {
		for c := range nt {
			if v := t.Total(n, c); v != 0 && float64(abs(v)) >= minShare*rootAbs[c] {
				return false
			}
		}
		return true
	}
	// newIdx[n] is n's index in out, -1 when n is pruned.
	newIdx := make([]int32, len(t.Nodes))
	var open []int32 // kept ancestors whose End is not known yet
	for n := 0; n < len(t.Nodes); n++ {
		node := t.Nodes[n]
		for len(open) > 0 && t.Nodes[open[len(open)-1]].End <= int32(n) {
			out.Nodes[newIdx[open[len(open)-1]]].End = int32(len(out.Nodes))
			open = open[:len(open)-1]
		}
		if n > 0 && small(n) {
			// Its parent is kept (pruned subtrees are skipped whole).
			p := int(newIdx[node.Parent])
			for c := range nt {
				out.elided[p*nt+c] += t.Total(n, c)
			}
			for m := n; m < int(node.End); m++ {
				newIdx[m] = -1
			}
			n = int(node.End) - 1
			continue
		}
		newIdx[n] = int32(len(out.Nodes))
		if node.Parent >= 0 {
			node.Parent = newIdx[node.Parent]
		}
		out.Nodes = append(out.Nodes, node)
		out.total = append(out.total, t.total[n*nt:n*nt+nt]...)
		out.self = append(out.self, t.self[n*nt:n*nt+nt]...)
		out.elided = append(out.elided, t.elided[n*nt:n*nt+nt]...)
		if d := t.Diff; d != nil {
			out.Diff.other = append(out.Diff.other, d.other[n*nt:n*nt+nt]...)
			out.Diff.change = append(out.Diff.change, d.change[n*nt:n*nt+nt]...)
		}
		open = append(open, int32(n))
	}
	for _, n := range open {
		out.Nodes[newIdx[n]].End = int32(len(out.Nodes))
	}
	return out, nil
}
