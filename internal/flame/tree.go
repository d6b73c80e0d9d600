package flame

import (
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// SampleType names a sample type of a tree and its unit.
type SampleType struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
}

// Function is a function of a tree's frames.
type Function struct {
	// Name is the full function name, package path included.
	Name string
	// File is the function's source file.
	File string
	Kind Kind
}

// Short returns the name without the directories of its package path.
func (f Function) Short() string { return ShortName(f.Name) }

// Node is one frame of a flame graph: a function called along one path
// from the root. Nodes are stored in depth-first order, children sorted by
// function name, so a node's descendants are the nodes after it up to
// End.
type Node struct {
	// Function indexes Tree.Functions; -1 for the root.
	Function int32
	// Line is the source line of the function that carries most of the
	// node's value; Lines counts the distinct lines merged into the node.
	Line  int64
	Lines int32
	// Parent is the index of the parent node, -1 for the root.
	Parent int32
	// End is one past the index of the node's last descendant.
	End int32
	// Depth is 0 for the root, 1 for its children, and so on.
	Depth int32
}

// Tree is the model of a flame graph: a call tree of function frames with
// their values for one or more sample types. For every node and sample
// type, Total = Self + the children's Totals + Elided: Self is the value of
// the samples whose stack ends at the node, Elided the value of children
// pruned for being too small.
//
// A differential tree (from Diff or Vanished) also holds, for every node,
// the value of the same path in the other profile; see DiffInfo.
type Tree struct {
	Types []SampleType
	// Default indexes Types: the sample type shown first.
	Default   int
	Functions []Function
	Nodes     []Node
	// Diff is nil unless the tree is differential.
	Diff *DiffInfo

	// total, self and elided hold len(Types) values per node.
	total, self, elided []int64
}

// Total returns the value of node n and its descendants for sample type
// typ (an index into Types).
func (t *Tree) Total(n, typ int) int64 { return t.total[n*len(t.Types)+typ] }

// Self returns the value of the samples whose stack ends at node n.
func (t *Tree) Self(n, typ int) int64 { return t.self[n*len(t.Types)+typ] }

// Elided returns the value of the children of node n pruned from the tree.
func (t *Tree) Elided(n, typ int) int64 { return t.elided[n*len(t.Types)+typ] }

// Children iterates over the indices of the children of node n, in name
// order.
func (t *Tree) Children(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		end := int(t.Nodes[n].End)
		for c := n + 1; c < end; c = int(t.Nodes[c].End) {
			if !yield(c) {
				return
			}
		}
	}
}

// Name returns the full function name of node n, "root" for the root.
func (t *Tree) Name(n int) string {
	if f := t.Nodes[n].Function; f >= 0 {
		return t.Functions[f].Name
	}
	return "root"
}

// Path returns the function names from the root's child down to node n.
func (t *Tree) Path(n int) []string {
	var path []string
	for ; n > 0; n = int(t.Nodes[n].Parent) {
		path = append(path, t.Name(n))
	}
	slices.Reverse(path)
	return path
}

// TypeIndex returns the index in Types of the sample type called name;
// an empty name means Default. An unknown name gives an error listing the
// types the tree has.
func (t *Tree) TypeIndex(name string) (int, error) {
	if name == "" {
		return t.Default, nil
	}
	for i, st := range t.Types {
		if st.Name == name {
			return i, nil
		}
	}
	names := make([]string, len(t.Types))
	for i, st := range t.Types {
		names[i] = st.Name
	}
	return 0, fmt.Errorf("sample type %q not in the graph; it has %s", name, strings.Join(names, ", "))
}

// Options select what Build puts into a tree.
type Options struct {
	// Sample is the sample type shown first; empty means the profile's
	// default (pprofx.Stacks.SampleIndex).
	Sample string
	// AllTypes keeps every sample type of the profile in the tree, for
	// renderers that switch between them. Otherwise the tree holds Sample
	// only.
	AllTypes bool
	// Focus keeps only the samples with a frame whose function name or
	// source file matches; Ignore drops the samples with such a frame.
	// Nil means no filter. A Focus that matches no function is a
	// *NoMatchError.
	Focus, Ignore *regexp.Regexp
	// MinShare prunes the frames whose value is below this share of the
	// root's (0.001 is 0.1%) for every sample type in the tree; their
	// value is kept as their parent's Elided. 0 keeps every frame.
	MinShare float64
	// Module is the application's module path, to tell its code from its
	// dependencies' (KindApp and KindDependency). Empty colours all
	// non-standard code as the application's.
	Module string
}

// Build makes the flame graph tree of s. Stacks are cut into frames per
// function: the inlined calls of a location become frames of their own,
// and the locations of one function along one path (different lines) are
// merged into one frame that keeps the heaviest line.
//
// Build sorts the stacks level by level rather than inserting them into a
// tree, so a pruned frame costs nothing below it and the work is a few
// passes over the stacks that reach frames worth drawing.
func Build(s *pprofx.Stacks, opts Options) (*Tree, error) {
	if s == nil {
		return nil, errors.New("build flame graph: no profile")
	}
	def, err := s.SampleIndex(opts.Sample)
	if err != nil {
		return nil, err
	}
	if opts.MinShare < 0 || opts.MinShare >= 1 {
		return nil, fmt.Errorf("build flame graph: minimum share %v is not in [0, 1)", opts.MinShare)
	}
	cols := []int{def}
	t := &Tree{}
	if opts.AllTypes {
		cols = cols[:0]
		for i := range s.SampleTypes {
			cols = append(cols, i)
		}
		t.Default = def
	}
	for _, c := range cols {
		st := s.SampleTypes[c]
		t.Types = append(t.Types, SampleType{Name: st.Type, Unit: st.Unit})
	}
	b := newBuilder(s, t, cols, opts)
	if opts.Focus != nil && !slices.ContainsFunc(t.Functions, func(f Function) bool { return f.matches(opts.Focus) }) {
		return nil, &NoMatchError{Pattern: opts.Focus.String(), Closest: closest(t.Functions, opts.Focus.String(), 5)}
	}
	b.build()
	return t, nil
}

// matches reports whether re matches the function's full name or its
// source file's path: "myapp/" finds a package by a directory of its path
// even when the function is main's.
func (f Function) matches(re *regexp.Regexp) bool {
	return re.MatchString(f.Name) || f.File != "" && re.MatchString(f.File)
}

// NoMatchError is a focus that matches no function of the profile.
type NoMatchError struct {
	// Pattern is the focus's regular expression.
	Pattern string
	// Closest are the function names nearest to it, closest first.
	Closest []string
}

func (e *NoMatchError) Error() string {
	msg := fmt.Sprintf("focus %q matches no function or file of the profile", e.Pattern)
	if len(e.Closest) > 0 {
		msg += "; the closest: " + strings.Join(e.Closest, ", ")
	}
	return msg
}

// closest returns the n short function names nearest to pattern, nearest
// first: the longest run of the pattern found in the function's full name
// or file (ignoring case), then the edit distance of the short name, then
// the name.
func closest(fns []Function, pattern string, n int) []string {
	type scored struct {
		name       string
		run, edits int
	}
	p := strings.ToLower(pattern)
	seen := map[string]bool{}
	var all []scored
	for _, f := range fns {
		name := f.Short()
		if seen[name] {
			continue
		}
		seen[name] = true
		run := max(commonRun(p, strings.ToLower(f.Name)), commonRun(p, strings.ToLower(f.File)))
		all = append(all, scored{name, run, editDistance(p, strings.ToLower(name))})
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.run != b.run {
			return b.run - a.run
		}
		if a.edits != b.edits {
			return a.edits - b.edits
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.name)
	}
	return out
}

// commonRun is the length of the longest run of bytes a and b share.
func commonRun(a, b string) int {
	best := 0
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				cur[j] = prev[j-1] + 1
				best = max(best, cur[j])
			} else {
				cur[j] = 0
			}
		}
		prev, cur = cur, prev
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// frame is a function and line, the unit of stacks during the build.
type frame struct {
	fn   int32 // index into Tree.Functions
	line int64
}

// item is one stack during the build, with a cursor at its next frame:
// pos indexes the stack's locations from the root (the end of the slice),
// ln the location's lines from the outermost.
type item struct {
	k   int32 // index into builder.stacks
	pos int32
	ln  int32
	key int32 // frame id at the cursor, -1 when the stack has ended
}

type builder struct {
	s    *pprofx.Stacks
	t    *Tree
	cols []int
	nt   int
	opts Options

	frames []frame
	// locFrames[loc] lists the frame ids of a location's lines, outermost
	// first; frame ids sort by function name, then line.
	locFrames [][]int32
	stacks    []int32 // the stacks of s kept
	values    []int64 // per kept stack, the values of cols
	rootAbs   []float64
}

func newBuilder(s *pprofx.Stacks, t *Tree, cols []int, opts Options) *builder {
	b := &builder{s: s, t: t, cols: cols, nt: len(cols), opts: opts}
	b.frames, b.locFrames = b.frameTable()
	return b
}

// frameTable names the frames of every location and numbers functions and
// frames in name order, so sorting by id sorts by name.
func (b *builder) frameTable() ([]frame, [][]int32) {
	s := b.s
	type key struct {
		name string
		line int64
	}
	keys := make([][]key, len(s.Locations))
	var all []key
	for li, l := range s.Locations {
		if len(l.Lines) == 0 {
			k := key{name: s.FunctionName(int32(li), 0)}
			keys[li] = []key{k}
			all = append(all, k)
			continue
		}
		ks := make([]key, len(l.Lines))
		for j := range l.Lines {
			// Outermost first: the location's lines are innermost first.
			ln := len(l.Lines) - 1 - j
			ks[j] = key{name: s.FunctionName(int32(li), ln), line: l.Lines[ln].Line}
		}
		keys[li] = ks
		all = append(all, ks...)
	}
	slices.SortFunc(all, func(a, b key) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return int(min(max(a.line-b.line, -1), 1))
	})
	all = slices.Compact(all)

	// Files come from the first function of each name.
	files := map[string]string{}
	for _, f := range s.Functions {
		if _, ok := files[f.Name]; !ok {
			files[f.Name] = f.File
		}
	}
	frames := make([]frame, len(all))
	for i, k := range all {
		if i == 0 || k.name != all[i-1].name {
			b.t.Functions = append(b.t.Functions, Function{Name: k.name, File: files[k.name], Kind: classify(k.name, b.opts.Module)})
		}
		frames[i] = frame{fn: int32(len(b.t.Functions) - 1), line: k.line}
	}
	id := func(k key) int32 {
		i, _ := slices.BinarySearchFunc(all, k, func(a, b key) int {
			if c := strings.Compare(a.name, b.name); c != 0 {
				return c
			}
			return int(min(max(a.line-b.line, -1), 1))
		})
		return int32(i)
	}
	locFrames := make([][]int32, len(s.Locations))
	flat := make([]int32, 0, len(all))
	for li, ks := range keys {
		start := len(flat)
		for _, k := range ks {
			flat = append(flat, id(k))
		}
		locFrames[li] = flat[start:len(flat):len(flat)]
	}
	return frames, locFrames
}

func (b *builder) build() {
	s, nt, t := b.s, b.nt, b.t
	focus, ignore := b.filters()
	rootTotal := make([]int64, nt)
	var items []item
	for i := range s.Len() {
		vs := s.Values(i)
		nonzero := false
		for _, c := range b.cols {
			nonzero = nonzero || vs[c] != 0
		}
		st := s.Stack(i)
		if !nonzero || !keep(st, focus, ignore) {
			continue
		}
		it := item{k: int32(len(b.stacks)), pos: int32(len(st)) - 1}
		b.stacks = append(b.stacks, int32(i))
		b.setKey(&it)
		items = append(items, it)
		for j, c := range b.cols {
			b.values = append(b.values, vs[c])
			rootTotal[j] += vs[c]
		}
	}
	b.rootAbs = make([]float64, nt)
	for j, v := range rootTotal {
		b.rootAbs[j] = float64(abs(v))
	}
	t.Nodes = append(t.Nodes, Node{Function: -1, Parent: -1})
	t.total = append(t.total, rootTotal...)
	t.self = append(t.self, make([]int64, nt)...)
	t.elided = append(t.elided, make([]int64, nt)...)
	b.expand(0, items, make([]int64, nt))
	t.Nodes[0].End = int32(len(t.Nodes))
}

// setKey sets the frame id at the item's cursor.
func (b *builder) setKey(it *item) {
	if it.pos < 0 {
		it.key = -1
		return
	}
	loc := b.s.Stack(int(b.stacks[it.k]))[it.pos]
	it.key = b.locFrames[loc][it.ln]
}

// advance moves the item's cursor to its next frame.
func (b *builder) advance(it *item) {
	loc := b.s.Stack(int(b.stacks[it.k]))[it.pos]
	it.ln++
	if int(it.ln) == len(b.locFrames[loc]) {
		it.pos--
		it.ln = 0
	}
	b.setKey(it)
}

// expand makes the children of node n from the stacks that reach it, with
// their cursors at the frame below n. sums is scratch space of nt values.
func (b *builder) expand(n int, items []item, sums []int64) {
	t, nt := b.t, b.nt
	sorted := true
	for i := 1; i < len(items); i++ {
		if items[i].key < items[i-1].key {
			sorted = false
			break
		}
	}
	if !sorted {
		slices.SortFunc(items, func(a, b item) int { return int(a.key) - int(b.key) })
	}
	i := 0
	for ; i < len(items) && items[i].key < 0; i++ {
		vs := b.values[int(items[i].k)*nt:]
		for j := range nt {
			t.self[n*nt+j] += vs[j]
		}
	}
	def := t.Default
	for i < len(items) {
		fn := b.frames[items[i].key].fn
		clear(sums)
		j := i
		var bestLine, bestVal int64 = 0, -1
		lines := int32(0)
		for j < len(items) && b.frames[items[j].key].fn == fn {
			key := items[j].key
			var run int64
			for ; j < len(items) && items[j].key == key; j++ {
				vs := b.values[int(items[j].k)*nt:]
				for c := range nt {
					sums[c] += vs[c]
				}
				run += vs[def]
			}
			lines++
			if abs(run) > bestVal {
				bestVal, bestLine = abs(run), b.frames[key].line
			}
		}
		group := items[i:j]
		i = j
		if b.pruned(sums) {
			for c := range nt {
				t.elided[n*nt+c] += sums[c]
			}
			continue
		}
		child := len(t.Nodes)
		t.Nodes = append(t.Nodes, Node{Function: fn, Line: bestLine, Lines: lines, Parent: int32(n), Depth: t.Nodes[n].Depth + 1})
		t.total = append(t.total, sums...)
		t.self = append(t.self, make([]int64, nt)...)
		t.elided = append(t.elided, make([]int64, nt)...)
		for g := range group {
			b.advance(&group[g])
		}
		b.expand(child, group, sums)
		t.Nodes[child].End = int32(len(t.Nodes))
	}
}

// pruned reports whether a frame of these values is too small to keep:
// zero in every column, or below MinShare of the root in every column.
func (b *builder) pruned(sums []int64) bool {
	for c, v := range sums {
		if v != 0 && float64(abs(v)) >= b.opts.MinShare*b.rootAbs[c] {
			return false
		}
	}
	return true
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// filters returns, per location, whether it matches Focus and Ignore (nil
// when the option is unset).
func (b *builder) filters() (focus, ignore []bool) {
	match := func(re *regexp.Regexp) []bool {
		if re == nil {
			return nil
		}
		byFn := make([]bool, len(b.t.Functions))
		for i, f := range b.t.Functions {
			byFn[i] = f.matches(re)
		}
		m := make([]bool, len(b.locFrames))
		for li, fs := range b.locFrames {
			for _, f := range fs {
				m[li] = m[li] || byFn[b.frames[f].fn]
			}
		}
		return m
	}
	return match(b.opts.Focus), match(b.opts.Ignore)
}

func keep(stack []int32, focus, ignore []bool) bool {
	if focus != nil {
		found := false
		for _, l := range stack {
			if focus[l] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if ignore != nil {
		for _, l := range stack {
			if ignore[l] {
				return false
			}
		}
	}
	return true
}
