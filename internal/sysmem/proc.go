package sysmem

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Proc reads process and memory facts from the files under Root: Root+"/proc"
// and Root+"/sys/fs/cgroup". The zero value reads the running machine.
type Proc struct {
	// Root is the filesystem root to read from; "" means "/".
	Root string
}

// maxProcFile caps the size of the small files read whole (status, stat,
// environ, cgroup, net/tcp, memory.stat): a real one is far smaller, and a
// hostile tree must not make the reader allocate without bound.
const maxProcFile = 64 << 20

// SyntaxError reports malformed input to one of the parsers, with the
// 1-based line it was found on.
type SyntaxError struct {
	// Line is the 1-based line number of the malformed line.
	Line int
	// Msg says what is wrong with it.
	Msg string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return "line " + strconv.Itoa(e.Line) + ": " + e.Msg
}

// processNotFoundError is returned when the process whose files are read
// does not exist or has exited.
type processNotFoundError struct {
	pid int
}

func (e *processNotFoundError) Error() string {
	return "process " + strconv.Itoa(e.pid) + " not found"
}

// Is makes the error match fs.ErrNotExist.
func (e *processNotFoundError) Is(target error) bool {
	return target == fs.ErrNotExist
}

// path returns the name of a file under the root.
func (p Proc) path(elem ...string) string {
	root := p.Root
	if root == "" {
		root = string(filepath.Separator)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// pidPath returns the name of a file under /proc/PID.
func (p Proc) pidPath(pid int, name string) string {
	return p.path("proc", strconv.Itoa(pid), name)
}

// openPID opens /proc/PID/name.
func (p Proc) openPID(pid int, name string) (*os.File, string, error) {
	path := p.pidPath(pid, name)
	if pid <= 0 {
		return nil, path, fmt.Errorf("read %s: invalid pid %d", path, pid)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, p.pidErr(pid, path, err)
	}
	return f, path, nil
}

// parsePID opens /proc/PID/name and hands it to parse, closing it after.
// An error of parse comes back naming the file, as pidErr words it.
func parsePID[T any](p Proc, pid int, name string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, path, err := p.openPID(pid, name)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return zero, p.pidErr(pid, path, err)
	}
	return v, nil
}

// readPID reads the whole of /proc/PID/name.
func (p Proc) readPID(pid int, name string) ([]byte, string, error) {
	data, err := parsePID(p, pid, name, readAllLimited)
	return data, p.pidPath(pid, name), err
}

// pidErr wraps err, met while reading path of process pid, so that the
// message names the file once and a vanished process reads as one.
func (p Proc) pidErr(pid int, path string, err error) error {
	gone := errors.Is(err, syscall.ESRCH)
	if !gone && errors.Is(err, fs.ErrNotExist) {
		// The file is missing: because the process is, or because this
		// kernel does not have it?
		_, serr := os.Stat(p.path("proc", strconv.Itoa(pid)))
		gone = errors.Is(serr, fs.ErrNotExist)
	}
	if gone {
		return fmt.Errorf("read %s: %w", path, &processNotFoundError{pid: pid})
	}
	return fmt.Errorf("read %s: %w", path, bareErr(path, err))
}

// bareErr drops the *fs.PathError around err when it names path, which the
// caller's message already does.
func bareErr(path string, err error) error {
	if pe, ok := err.(*fs.PathError); ok && pe.Path == path {
		return pe.Err
	}
	return err
}

// readFile reads a whole file that is not a process's (cgroupfs, /proc/net,
// /proc/uptime), with the error naming it.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, bareErr(path, err))
	}
	defer f.Close()
	data, err := readAllLimited(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, bareErr(path, err))
	}
	return data, nil
}

// readAllLimited reads r to the end, refusing more than maxProcFile bytes.
func readAllLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxProcFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxProcFile {
		return nil, fmt.Errorf("file larger than %d bytes", maxProcFile)
	}
	return data, nil
}
