package sysmem

import (
	"bytes"
	"fmt"
	"io"
	"time"
)

// ParseBootTime reads the contents of /proc/stat and returns the time the
// system booted: its "btime" line, in seconds since the Unix epoch.
func ParseBootTime(r io.Reader) (time.Time, error) {
	var boot time.Time
	found := false
	err := eachLine(r, 4<<10, func(n int, line []byte) error {
		key, rest := nextField(line)
		if found || string(key) != "btime" {
			return nil
		}
		val, extra := nextField(trimSpace(rest))
		sec, ok := parseDec(val)
		if !ok || len(extra) > 0 || sec > 1<<40 {
			return &SyntaxError{Line: n, Msg: fmt.Sprintf("btime: bad seconds %q", trimSpace(rest))}
		}
		boot, found = time.Unix(int64(sec), 0), true
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("parse stat: %w", err)
	}
	if !found {
		return time.Time{}, fmt.Errorf("parse stat: no btime line")
	}
	return boot, nil
}

// BootTime reads when the system booted, from the btime line of
// /proc/stat. The kernel derives it from the wall clock and the time since
// boot, so it can move by a second when the clock is adjusted.
func (p Proc) BootTime() (time.Time, error) {
	path := p.path("proc", "stat")
	data, err := readFile(path)
	if err != nil {
		return time.Time{}, err
	}
	boot, err := ParseBootTime(bytes.NewReader(data))
	if err != nil {
		return time.Time{}, fmt.Errorf("read %s: %w", path, err)
	}
	return boot, nil
}

// Started returns when process pid started, on the wall clock: the boot
// time (BootTime) plus its start after boot (field 22 of /proc/PID/stat),
// to the clock tick (10ms). Two reads for one process agree unless the
// boot time moved between them (see BootTime); a process that replaced
// another under the same PID has another start time.
func (p Proc) Started(pid int) (time.Time, error) {
	st, err := p.Stat(pid)
	if err != nil {
		return time.Time{}, err
	}
	boot, err := p.BootTime()
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(st.Started()), nil
}
