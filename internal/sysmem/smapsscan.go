package sysmem

import (
	"fmt"
	"io"
	"os"
)

// ScanSmaps reads the contents of /proc/PID/smaps from r as a stream and
// calls fn with each mapping once its fields are read. The *Mapping is
// reused: it is valid only until fn returns, and fn must copy what it
// keeps. Unlike ParseSmaps, it keeps no mapping, so memory stays flat
// however many mappings the file has.
func ScanSmaps(r io.Reader, fn func(*Mapping)) error {
	if err := scanSmaps(r, fn); err != nil {
		return fmt.Errorf("parse smaps: %w", err)
	}
	return nil
}

// ScanSmaps reads /proc/PID/smaps as a stream, calling fn with each
// mapping as ScanSmaps does.
func (p Proc) ScanSmaps(pid int, fn func(*Mapping)) error {
	_, err := parsePID(p, pid, "smaps", func(r io.Reader) (struct{}, error) {
		return struct{}{}, ScanSmaps(r, fn)
	})
	return err
}

// Exe returns the path of process pid's executable, the target of
// /proc/PID/exe, as the process's mappings name it.
func (p Proc) Exe(pid int) (string, error) {
	path := p.pidPath(pid, "exe")
	if pid <= 0 {
		return "", fmt.Errorf("read %s: invalid pid %d", path, pid)
	}
	target, err := os.Readlink(path)
	if err != nil {
		return "", p.pidErr(pid, path, err)
	}
	return target, nil
}
