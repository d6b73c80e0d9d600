package rss

import (
	"path"
	"strings"

	"github.com/heapscope/heapscope/internal/sysmem"
)

// Kind is what a mapping holds, as far as its smaps entry tells.
type Kind int

// The kinds of mapping, in the order reports list them.
const (
	// KindGoHeap is the read-write part of the Go heap arenas, which also
	// hold goroutine stacks.
	KindGoHeap Kind = iota
	// KindStack is the main thread's stack, "[stack]".
	KindStack
	// KindAnon is other anonymous memory: the C heap ("[heap]"), thread
	// stacks of C threads, the runtime's off-heap metadata, direct mmap.
	KindAnon
	// KindReserved is anonymous address space without access (PROT_NONE):
	// arena reservations and guard pages. It is never resident.
	KindReserved
	// KindBinary is the executable's own mappings: text, read-only data,
	// data.
	KindBinary
	// KindLibrary is shared libraries (and the kernel's [vdso]).
	KindLibrary
	// KindFile is other file-backed memory: mapped files, shared memory.
	KindFile

	numKinds
)

var kindNames = [numKinds]string{"go_heap", "stack", "anonymous", "reserved", "binary", "libraries", "files"}

// String returns the kind's name as JSON output carries it, e.g. "go_heap".
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "unknown"
	}
	return kindNames[k]
}

// Usage sums the figures of a set of mappings, in bytes.
type Usage struct {
	// Kind names the set (Kind.String), or "total".
	Kind              string `json:"kind"`
	Mappings          int    `json:"mappings"`
	SizeBytes         uint64 `json:"size_bytes"`
	RSSBytes          uint64 `json:"rss_bytes"`
	PSSBytes          uint64 `json:"pss_bytes"`
	PrivateDirtyBytes uint64 `json:"private_dirty_bytes"`
	SwapBytes         uint64 `json:"swap_bytes"`
}

func (u *Usage) add(m *sysmem.Mapping) {
	u.Mappings++
	u.SizeBytes += m.End - m.Start
	u.RSSBytes += m.Rss
	u.PSSBytes += m.Pss
	u.PrivateDirtyBytes += m.PrivateDirty
	u.SwapBytes += m.Swap
}

// Classifier sorts the mappings of one process into kinds as they stream
// by. Feed it every mapping of /proc/PID/smaps in file (address) order
// with Add, then call Result. The zero value is ready to use.
//
// It keeps no mapping except those of runs that may be Go heap arenas
// (adjacent anonymous read-write or reserved mappings), which it needs
// whole to tell whether they begin and end on arena boundaries.
type Classifier struct {
	// Exe is the path of the process's executable (/proc/PID/exe). When
	// empty, the first file-backed mapping is taken as the executable,
	// which is where the kernel maps it.
	Exe string

	kinds    [numKinds]Usage
	total    Usage
	run      []sysmem.Mapping // the current run of arena candidates
	heapRuns []sysmem.Mapping // the runs that are Go heap arenas
}

// Add classifies one mapping. It copies what it keeps, so m may be reused
// by the caller (as sysmem.ScanSmaps does).
func (c *Classifier) Add(m *sysmem.Mapping) {
	c.total.add(m)
	if sysmem.ArenaCandidate(m) {
		if n := len(c.run); n > 0 && c.run[n-1].End != m.Start {
			c.flush()
		}
		c.run = append(c.run, *m)
		return
	}
	c.flush()
	c.kinds[c.kindOf(m)].add(m)
}

// flush classifies the pending run of arena candidates.
func (c *Classifier) flush() {
	if len(c.run) == 0 {
		return
	}
	// sysmem.GoHeap decides whether the run is heap; it allocates only
	// for runs that are.
	heap := sysmem.GoHeap(c.run, 0).Count > 0
	for i := range c.run {
		m := &c.run[i]
		switch {
		case m.Perms == 0:
			c.kinds[KindReserved].add(m)
		case heap:
			c.kinds[KindGoHeap].add(m)
		default:
			c.kinds[KindAnon].add(m)
		}
	}
	if heap {
		c.heapRuns = append(c.heapRuns, c.run...)
	}
	c.run = c.run[:0]
}

// kindOf classifies a mapping that cannot be part of a heap arena.
func (c *Classifier) kindOf(m *sysmem.Mapping) Kind {
	p := m.Path
	switch {
	case p == "[stack]":
		return KindStack
	case p == "[vdso]":
		return KindLibrary
	case p == "" && m.Inode == 0, strings.HasPrefix(p, "["):
		// Anonymous, or a pseudo-path: [heap], [anon:name], [vvar],
		// [vsyscall], [stack:TID] of old kernels.
		if m.Perms == 0 {
			return KindReserved
		}
		return KindAnon
	}
	if c.Exe == "" && !strings.HasPrefix(p, "/dev/") {
		c.Exe = strings.TrimSuffix(p, " (deleted)")
	}
	switch {
	case strings.TrimSuffix(p, " (deleted)") == c.Exe:
		return KindBinary
	case isLibrary(p):
		return KindLibrary
	}
	return KindFile
}

// isLibrary reports whether the file at p is a shared library: its name
// has ".so" at the end or before a version ("libc.so.6").
func isLibrary(p string) bool {
	base := path.Base(strings.TrimSuffix(p, " (deleted)"))
	i := strings.Index(base, ".so")
	for i >= 0 {
		rest := base[i+3:]
		if rest == "" || rest[0] == '.' {
			return true
		}
		j := strings.Index(rest, ".so")
		if j < 0 {
			break
		}
		i += 3 + j
	}
	return false
}

// Classification is what a Classifier found.
type Classification struct {
	// Kinds holds one Usage per Kind, in Kind order, empty ones included.
	Kinds []Usage
	// Total sums every mapping.
	Total Usage
	// Exe is the executable's path, as given or as found.
	Exe string
	// heapRuns are the heap arenas' mappings, reserved parts included,
	// for sysmem.GoHeap to sum and check against HeapSys.
	heapRuns []sysmem.Mapping
}

// Result returns the classification of every mapping added so far.
func (c *Classifier) Result() Classification {
	c.flush()
	cl := Classification{
		Kinds:    make([]Usage, numKinds),
		Total:    c.total,
		Exe:      c.Exe,
		heapRuns: append([]sysmem.Mapping(nil), c.heapRuns...),
	}
	cl.Total.Kind = "total"
	for k := range numKinds {
		cl.Kinds[k] = c.kinds[k]
		cl.Kinds[k].Kind = k.String()
	}
	return cl
}

// Kind returns the usage of one kind.
func (cl *Classification) Kind(k Kind) Usage {
	if k < 0 || int(k) >= len(cl.Kinds) {
		return Usage{Kind: k.String()}
	}
	return cl.Kinds[k]
}

// Heap identifies the Go heap among the classified mappings and checks it
// against heapSys, the runtime's MemStats.HeapSys (0 when unknown).
func (cl *Classification) Heap(heapSys uint64) sysmem.HeapMappings {
	return sysmem.GoHeap(cl.heapRuns, heapSys)
}
