package sysmem

import (
	"bytes"
	"fmt"
	"io"
)

// Status holds the memory figures of /proc/PID/status, in bytes. A figure
// the kernel did not print (RssAnon before Linux 4.5, any Vm* of a kernel
// thread) is zero.
type Status struct {
	// VmRSS is the resident set size: RssAnon + RssFile + RssShmem.
	VmRSS uint64
	// VmHWM is the peak resident set size ("high water mark").
	VmHWM uint64
	// VmSize is the virtual memory size, reserved address space included.
	VmSize uint64
	// VmSwap is the anonymous memory swapped out.
	VmSwap uint64
	// RssAnon is the resident anonymous memory: where the Go heap is.
	RssAnon uint64
	// RssFile is the resident file-backed memory (the executable, shared
	// libraries, mapped files).
	RssFile uint64
	// RssShmem is the resident shared memory (System V, tmpfs, shared
	// anonymous mappings).
	RssShmem uint64
	// Threads is the number of threads of the process.
	Threads int
}

// ParseStatus parses the contents of /proc/PID/status. Lines it does not
// use are skipped; a line without a colon, or a used line whose value is
// not a number of kB, is an error naming the line.
func ParseStatus(r io.Reader) (Status, error) {
	var st Status
	err := eachLine(r, 4<<10, func(n int, line []byte) error {
		if len(trimSpace(line)) == 0 {
			return nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return &SyntaxError{Line: n, Msg: "no colon"}
		}
		key, val := line[:colon], line[colon+1:]
		var dst *uint64
		switch string(key) {
		case "VmRSS":
			dst = &st.VmRSS
		case "VmHWM":
			dst = &st.VmHWM
		case "VmSize":
			dst = &st.VmSize
		case "VmSwap":
			dst = &st.VmSwap
		case "RssAnon":
			dst = &st.RssAnon
		case "RssFile":
			dst = &st.RssFile
		case "RssShmem":
			dst = &st.RssShmem
		case "Threads":
			v, ok := parseDec(trimSpace(val))
			if !ok || v > 1<<31-1 {
				return &SyntaxError{Line: n, Msg: fmt.Sprintf("Threads: bad count %q", trimSpace(val))}
			}
			st.Threads = int(v)
			return nil
		default:
			return nil
		}
		return setKB(dst, n, key, val)
	})
	if err != nil {
		return Status{}, fmt.Errorf("parse status: %w", err)
	}
	return st, nil
}

// Status reads /proc/PID/status.
func (p Proc) Status(pid int) (Status, error) {
	return parsePID(p, pid, "status", ParseStatus)
}
