package flame

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// Pseudo-frames of the folded output.
const (
	// NoStackFrame stands for samples without a stack.
	NoStackFrame = "[no stack]"
	// PrunedFrame stands for the frames pruned below a frame.
	PrunedFrame = "[pruned]"
)

// WriteFolded writes t as folded stacks, the input of flamegraph.pl,
// speedscope and other tools: one line per path that carries self value,
// "frame;frame;frame value", with full function names from the root down,
// for one sample type (empty means the tree's default). The values of
// pruned frames appear under a [pruned] frame of their parent, so the
// lines sum to the total. Lines come in depth-first order, children by
// name.
func WriteFolded(w io.Writer, t *Tree, sample string) error {
	typ, err := t.TypeIndex(sample)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var path []string
	var buf []byte
	line := func(extra string, v int64) {
		buf = buf[:0]
		for i, p := range path {
			if i > 0 {
				buf = append(buf, ';')
			}
			buf = append(buf, p...)
		}
		if extra != "" {
			if len(path) > 0 {
				buf = append(buf, ';')
			}
			buf = append(buf, extra...)
		}
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, v, 10)
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	for n := range t.Nodes {
		depth := int(t.Nodes[n].Depth)
		path = path[:max(depth-1, 0)]
		if n > 0 {
			path = append(path, pprofx.FoldedFrame(t.Name(n)))
		}
		if v := t.Self(n, typ); v != 0 {
			if n == 0 {
				line(NoStackFrame, v)
			} else {
				line("", v)
			}
		}
		if v := t.Elided(n, typ); v != 0 {
			line(PrunedFrame, v)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write folded stacks: %w", err)
	}
	return nil
}

// WriteFoldedDiff writes the folded stacks of two trees in the two-column
// format of flamegraph.pl's difffolded.pl: "frame;frame before after" for
// every path that carries self value in either, base's value first, with
// the raw (not normalised) values of one sample type.
func WriteFoldedDiff(w io.Writer, base, after *Tree, sample string) error {
	bt, err := base.TypeIndex(sample)
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	if sample == "" {
		sample = base.Types[bt].Name
	}
	at, err := after.TypeIndex(sample)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var path []string
	emit := func(extra string, b, a int64) {
		if b == 0 && a == 0 {
			return
		}
		p := strings.Join(path, ";")
		if extra != "" {
			if p != "" {
				p += ";"
			}
			p += extra
		}
		fmt.Fprintf(bw, "%s %d %d\n", p, b, a)
	}
	var walk func(bn, an int)
	walk = func(bn, an int) {
		var bSelf, aSelf, bElided, aElided int64
		if bn >= 0 {
			bSelf, bElided = base.Self(bn, bt), base.Elided(bn, bt)
		}
		if an >= 0 {
			aSelf, aElided = after.Self(an, at), after.Elided(an, at)
		}
		if bn == 0 || an == 0 {
			emit(NoStackFrame, bSelf, aSelf)
		} else {
			emit("", bSelf, aSelf)
		}
		emit(PrunedFrame, bElided, aElided)
		// Merge the children by name.
		var bc, ac []int
		if bn >= 0 {
			for c := range base.Children(bn) {
				bc = append(bc, c)
			}
		}
		if an >= 0 {
			for c := range after.Children(an) {
				ac = append(ac, c)
			}
		}
		for len(bc) > 0 || len(ac) > 0 {
			nb, na := -1, -1
			switch {
			case len(ac) == 0 || len(bc) > 0 && base.Name(bc[0]) < after.Name(ac[0]):
				nb, bc = bc[0], bc[1:]
			case len(bc) == 0 || after.Name(ac[0]) < base.Name(bc[0]):
				na, ac = ac[0], ac[1:]
			default:
				nb, na, bc, ac = bc[0], ac[0], bc[1:], ac[1:]
			}
			name := ""
			if nb >= 0 {
				name = base.Name(nb)
			} else {
				name = after.Name(na)
			}
			path = append(path, pprofx.FoldedFrame(name))
			walk(nb, na)
			path = path[:len(path)-1]
		}
	}
	if len(base.Nodes) > 0 && len(after.Nodes) > 0 {
		walk(0, 0)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write folded stacks: %w", err)
	}
	return nil
}
