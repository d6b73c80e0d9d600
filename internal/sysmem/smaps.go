package sysmem

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// Perms are the access permissions of a mapping, the second field of a
// smaps header ("rw-p").
type Perms uint8

// The permission bits. A mapping without PermShared is private
// (copy-on-write), the "p" of "rw-p".
const (
	PermRead Perms = 1 << iota
	PermWrite
	PermExec
	PermShared
)

// String returns the permissions as the kernel prints them, e.g. "rw-p".
func (p Perms) String() string {
	b := [4]byte{'-', '-', '-', 'p'}
	if p&PermRead != 0 {
		b[0] = 'r'
	}
	if p&PermWrite != 0 {
		b[1] = 'w'
	}
	if p&PermExec != 0 {
		b[2] = 'x'
	}
	if p&PermShared != 0 {
		b[3] = 's'
	}
	return string(b[:])
}

// parsePerms parses the four characters of a permissions field.
func parsePerms(b []byte) (Perms, bool) {
	if len(b) != 4 {
		return 0, false
	}
	var p Perms
	for i, want := range [3]byte{'r', 'w', 'x'} {
		switch b[i] {
		case want:
			p |= 1 << i
		case '-':
		default:
			return 0, false
		}
	}
	switch b[3] {
	case 's':
		p |= PermShared
	case 'p':
	default:
		return 0, false
	}
	return p, true
}

// Device is the device number of the file behind a mapping; 0:0 for
// anonymous memory.
type Device struct {
	Major, Minor uint32
}

// String returns the device as smaps prints it, e.g. "fe:01".
func (d Device) String() string {
	return fmt.Sprintf("%02x:%02x", d.Major, d.Minor)
}

// Mapping is one entry of /proc/PID/smaps: a range of virtual memory and
// what of it is resident, shared, dirty or swapped out. Sizes are in bytes.
type Mapping struct {
	// Start and End delimit the range, End exclusive.
	Start, End uint64
	// Perms are the access permissions.
	Perms Perms
	// Offset is the offset into the mapped file.
	Offset uint64
	// Dev and Inode identify the mapped file; zero for anonymous memory.
	Dev   Device
	Inode uint64
	// Path is the mapped file, a pseudo-path such as "[stack]", "[heap]"
	// (the brk heap, not the Go heap), "[vdso]" or "[anon:name]", or ""
	// for anonymous memory. A deleted file ends in " (deleted)".
	Path string

	// Size is End-Start.
	Size uint64
	// Rss is the resident part of the mapping.
	Rss uint64
	// Pss is the proportional share: each resident page divided by the
	// number of processes mapping it.
	Pss uint64
	// SharedClean, SharedDirty, PrivateClean and PrivateDirty split Rss
	// by whether other processes map the page and whether it was written.
	SharedClean, SharedDirty, PrivateClean, PrivateDirty uint64
	// Anonymous is the memory not backed by a file, resident or not
	// swapped (copy-on-write pages of a file mapping included).
	Anonymous uint64
	// AnonHugePages is the part of Anonymous backed by transparent huge
	// pages.
	AnonHugePages uint64
	// Swap is the anonymous memory swapped out; SwapPss its proportional
	// share.
	Swap, SwapPss uint64
	// Flags are the kernel's flags of the mapping (Linux 3.8 and later).
	Flags VMFlags
}

// Anon reports whether the mapping is anonymous memory: no file, no
// pseudo-path.
func (m *Mapping) Anon() bool {
	return m.Path == "" && m.Inode == 0
}

// ParseSmaps parses the contents of /proc/PID/smaps (or smaps_rollup,
// whose single entry is the "[rollup]" pseudo-mapping). It reads r as a
// stream through one buffer; the only allocations are the returned slice
// and the pathnames, one string per run of mappings of the same file.
//
// Fields it does not use are skipped, so newer kernels' fields are no
// error; a header or used field it cannot parse, or a field before the
// first header, is an error naming the line.
func ParseSmaps(r io.Reader) ([]Mapping, error) {
	// The count is unknown until the end, and growing one slice by
	// append copies it over and over (five times its final size in all
	// for a big file): gather fixed-size chunks, then copy once.
	const chunkSize = 1024
	var (
		chunks [][]Mapping
		cur    []Mapping
		n      int
	)
	err := scanSmaps(r, func(m *Mapping) {
		if len(cur) == cap(cur) {
			if cur != nil {
				chunks = append(chunks, cur)
			}
			size := chunkSize
			if len(chunks) < 6 {
				size = 16 << len(chunks) // small files stay small
			}
			cur = make([]Mapping, 0, size)
		}
		cur = append(cur, *m)
		n++
	})
	if err != nil {
		return nil, fmt.Errorf("parse smaps: %w", err)
	}
	if len(chunks) == 0 {
		return cur, nil
	}
	maps := make([]Mapping, 0, n)
	for _, c := range chunks {
		maps = append(maps, c...)
	}
	return append(maps, cur...), nil
}

// scanSmaps calls fn with every mapping of r, once its fields are read.
// The pointer is only valid until fn returns.
func scanSmaps(r io.Reader, fn func(*Mapping)) error {
	var (
		cur   Mapping
		have  bool
		paths recentPaths
	)
	err := eachLine(r, 64<<10, func(n int, line []byte) error {
		if len(trimSpace(line)) == 0 {
			return nil
		}
		key, val := nextField(line)
		if len(key) > 0 && key[len(key)-1] == ':' {
			if !have {
				return &SyntaxError{Line: n, Msg: "field " + strconv.Quote(string(key)) + " before the first mapping"}
			}
			return parseSmapsField(&cur, n, key[:len(key)-1], val)
		}
		if have {
			fn(&cur)
		}
		if err := parseSmapsHeader(&cur, n, line, &paths); err != nil {
			return err
		}
		have = true
		return nil
	})
	if err != nil {
		return err
	}
	if have {
		fn(&cur)
	}
	return nil
}

// recentPaths remembers the last few pathnames seen, so that the mappings
// of a file, which come in a row, often with anonymous ones among them
// (a library's bss, guard pages), share one string.
type recentPaths struct {
	paths [4]string
	next  int
}

// intern returns b as a string, one of the recent ones if it is equal.
func (r *recentPaths) intern(b []byte) string {
	for _, p := range r.paths {
		if string(b) == p {
			return p
		}
	}
	p := string(b)
	r.paths[r.next] = p
	r.next = (r.next + 1) % len(r.paths)
	return p
}

// parseSmapsHeader parses a mapping's header line,
//
//	start-end perms offset dev inode [pathname]
//
// into m.
func parseSmapsHeader(m *Mapping, n int, line []byte, paths *recentPaths) error {
	bad := func(what string, b []byte) error {
		return &SyntaxError{Line: n, Msg: "bad mapping header: " + what + " " + strconv.Quote(string(b))}
	}
	*m = Mapping{}
	rng, rest := nextField(line)
	dash := bytes.IndexByte(rng, '-')
	if dash < 0 {
		return bad("address range", rng)
	}
	start, ok1 := parseHex(rng[:dash])
	end, ok2 := parseHex(rng[dash+1:])
	if !ok1 || !ok2 || end < start {
		return bad("address range", rng)
	}
	m.Start, m.End = start, end

	var f []byte
	f, rest = nextField(rest)
	perms, ok := parsePerms(f)
	if !ok {
		return bad("permissions", f)
	}
	m.Perms = perms

	f, rest = nextField(rest)
	if m.Offset, ok = parseHex(f); !ok {
		return bad("offset", f)
	}

	f, rest = nextField(rest)
	colon := bytes.IndexByte(f, ':')
	if colon < 0 {
		return bad("device", f)
	}
	major, ok1 := parseHex(f[:colon])
	minor, ok2 := parseHex(f[colon+1:])
	if !ok1 || !ok2 || major > 1<<32-1 || minor > 1<<32-1 {
		return bad("device", f)
	}
	m.Dev = Device{Major: uint32(major), Minor: uint32(minor)}

	f, rest = nextField(rest)
	if m.Inode, ok = parseDec(f); !ok {
		return bad("inode", f)
	}

	// The pathname is the rest of the line, which may hold blanks of its
	// own; the kernel pads before it and prints nothing after it.
	path := rest
	if len(path) > 0 && path[len(path)-1] == '\r' {
		path = path[:len(path)-1]
	}
	if len(path) > 0 {
		m.Path = paths.intern(path)
	}
	return nil
}

// parseSmapsField parses one "Key: value" line of a mapping into m.
func parseSmapsField(m *Mapping, n int, key, val []byte) error {
	var dst *uint64
	switch string(key) {
	case "Size":
		dst = &m.Size
	case "Rss":
		dst = &m.Rss
	case "Pss":
		dst = &m.Pss
	case "Shared_Clean":
		dst = &m.SharedClean
	case "Shared_Dirty":
		dst = &m.SharedDirty
	case "Private_Clean":
		dst = &m.PrivateClean
	case "Private_Dirty":
		dst = &m.PrivateDirty
	case "Anonymous":
		dst = &m.Anonymous
	case "AnonHugePages":
		dst = &m.AnonHugePages
	case "Swap":
		dst = &m.Swap
	case "SwapPss":
		dst = &m.SwapPss
	case "VmFlags":
		m.Flags = parseVMFlags(val)
		return nil
	default:
		return nil
	}
	return setKB(dst, n, key, val)
}

// Smaps reads /proc/PID/smaps. Reading another user's process needs the
// rights to ptrace it (the same user, or CAP_SYS_PTRACE).
func (p Proc) Smaps(pid int) ([]Mapping, error) {
	return parsePID(p, pid, "smaps", ParseSmaps)
}

// SmapsRollup reads /proc/PID/smaps_rollup (Linux 4.14 and later): the
// sums of every mapping's figures, as one Mapping spanning the whole
// address space, with Path "[rollup]" and no Size. It is much cheaper
// than Smaps.
func (p Proc) SmapsRollup(pid int) (Mapping, error) {
	return parsePID(p, pid, "smaps_rollup", parseSmapsRollup)
}

// parseSmapsRollup parses the contents of smaps_rollup: one mapping.
func parseSmapsRollup(r io.Reader) (Mapping, error) {
	maps, err := ParseSmaps(r)
	if err == nil && len(maps) != 1 {
		err = fmt.Errorf("parse smaps_rollup: %d entries, want 1", len(maps))
	}
	if err != nil {
		return Mapping{}, err
	}
	return maps[0], nil
}
