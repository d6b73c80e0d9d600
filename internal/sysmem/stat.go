package sysmem

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"io"
	"time"
)

// ClockTicks is the unit of the times in /proc/PID/stat, in ticks per
// second: the kernel's USER_HZ, which sysconf(_SC_CLK_TCK) returns. The
// kernel fixes it at 100 for user space on every architecture Go supports
// on Linux, whatever the kernel's own tick rate (CONFIG_HZ).
const ClockTicks = 100

// Stat holds the fields of /proc/PID/stat that this package uses. Times
// are in clock ticks (ClockTicks per second).
type Stat struct {
	// PID is the process id (field 1).
	PID int
	// Comm is the command name (field 2), without its parentheses. It is
	// chosen by the process and may hold spaces and parentheses.
	Comm string
	// State is the state letter (field 3): R, S, D, Z, T, ...
	State byte
	// PPID is the parent's process id (field 4).
	PPID int
	// UTime and STime are the CPU time spent in user and kernel mode
	// (fields 14 and 15).
	UTime, STime uint64
	// NumThreads is the number of threads (field 20).
	NumThreads int
	// StartTime is when the process started, after system boot (field
	// 22).
	StartTime uint64
	// VSize is the virtual memory size in bytes (field 23).
	VSize uint64
	// RSSPages is the resident set size in pages (field 24).
	RSSPages uint64
}

// Started returns how long after system boot the process started.
func (s Stat) Started() time.Duration {
	return ticks(s.StartTime)
}

// CPUTime returns the CPU time the process has used, user and system.
func (s Stat) CPUTime() time.Duration {
	return ticks(s.UTime + s.STime)
}

// ticks converts clock ticks to a duration, saturating on overflow.
func ticks(n uint64) time.Duration {
	const max = uint64(1<<63-1) / uint64(time.Second/ClockTicks)
	if n > max {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(n) * (time.Second / ClockTicks)
}

// ParseStat parses the contents of /proc/PID/stat. The command name is
// found between the first "(" and the last ")", so that names holding
// spaces or parentheses do not shift the fields after it.
func ParseStat(data []byte) (Stat, error) {
	var st Stat
	bad := func(format string, args ...any) (Stat, error) {
		return Stat{}, fmt.Errorf("parse stat: "+format, args...)
	}
	data = trimSpace(bytes.TrimRight(data, "\n"))
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return bad("no command name in parentheses")
	}
	pid, ok := parseDec(trimSpace(data[:open]))
	if !ok || pid > 1<<31-1 {
		return bad("bad pid %q", trimSpace(data[:open]))
	}
	st.PID = int(pid)
	st.Comm = string(data[open+1 : closing])

	rest := data[closing+1:]
	for field := 3; ; field++ {
		var f []byte
		f, rest = nextField(rest)
		if len(f) == 0 {
			if field <= 24 {
				return bad("%d fields, want at least 24", field-1)
			}
			return st, nil
		}
		var dst *uint64
		var n uint64
		switch field {
		case 3:
			if len(f) != 1 {
				return bad("field 3 (state): %q is not one letter", f)
			}
			st.State = f[0]
			continue
		case 4, 20:
			// Ints.
		case 14:
			dst = &st.UTime
		case 15:
			dst = &st.STime
		case 22:
			dst = &st.StartTime
		case 23:
			dst = &st.VSize
		case 24:
			dst = &st.RSSPages
		default:
			continue
		}
		n, ok = parseDec(f)
		if !ok {
			return bad("field %d: %q is not a number", field, f)
		}
		switch {
		case dst != nil:
			*dst = n
		case n > 1<<31-1:
			return bad("field %d: %d out of range", field, n)
		case field == 4:
			st.PPID = int(n)
		default:
			st.NumThreads = int(n)
		}
	}
}

// Stat reads /proc/PID/stat.
func (p Proc) Stat(pid int) (Stat, error) {
	data, path, err := p.readPID(pid, "stat")
	if err != nil {
		return Stat{}, err
	}
	st, err := ParseStat(data)
	if err != nil {
		return Stat{}, fmt.Errorf("read %s: %w", path, err)
	}
	return st, nil
}

// ParseUptime parses the contents of /proc/uptime, "seconds idle-seconds",
// and returns the first: how long the system has been up.
func ParseUptime(r io.Reader) (time.Duration, error) {
	data, err := readAllLimited(r)
	if err != nil {
		return 0, fmt.Errorf("parse uptime: %w", err)
	}
	f, _ := nextField(trimSpace(bytes.TrimRight(data, "\n")))
	d, err := parseSeconds(f)
	if err != nil {
		return 0, fmt.Errorf("parse uptime: %w", err)
	}
	return d, nil
}

// parseSeconds parses a non-negative decimal number of seconds such as
// "1249.78" exactly, to the nanosecond.
func parseSeconds(b []byte) (time.Duration, error) {
	whole, frac, _ := bytes.Cut(b, []byte{'.'})
	sec, ok := parseDec(whole)
	if !ok || sec > uint64(1<<63-1)/uint64(time.Second)-1 {
		return 0, fmt.Errorf("bad seconds %q", b)
	}
	d := time.Duration(sec) * time.Second
	if bytes.IndexByte(b, '.') >= 0 {
		if _, ok := parseDec(frac); !ok {
			return 0, fmt.Errorf("bad seconds %q", b)
		}
		scale := time.Second
		for _, c := range frac {
			scale /= 10
			d += time.Duration(c-'0') * scale
		}
	}
	return d, nil
}

// Uptime returns how long process pid has been running: the system's
// uptime (/proc/uptime) less the process's start time after boot (field
// 22 of /proc/PID/stat, in clock ticks). The result has the clock tick's
// resolution, 10ms.
func (p Proc) Uptime(pid int) (time.Duration, error) {
	st, err := p.Stat(pid)
	if err != nil {
		return 0, err
	}
	path := p.path("proc", "uptime")
	data, err := readFile(path)
	if err != nil {
		return 0, err
	}
	up, err := ParseUptime(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	started := st.Started()
	if started > up {
		// Read a tick apart, or the two clocks disagree: the process
		// has just started.
		return 0, nil
	}
	return up - started, nil
}

// BuildInfo reads the Go build information of process pid from its
// executable, /proc/PID/exe: its Go version, main module and dependencies.
// This works for a process of another user only with the rights to ptrace
// it, and fails for a program that is not Go. /proc/PID/exe is the file
// the process runs, even when it has been replaced or deleted on disk
// since it started.
func (p Proc) BuildInfo(pid int) (*buildinfo.BuildInfo, error) {
	f, path, err := p.openPID(pid, "exe")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bi, err := buildinfo.Read(f)
	if err != nil {
		return nil, p.pidErr(pid, path, fmt.Errorf("read Go build info: %w", err))
	}
	return bi, nil
}
