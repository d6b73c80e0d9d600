package sysmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"
)

// Listeners finds the processes that listen on local TCP ports, as
// ListeningPID does, for many ports at once: the listening sockets of
// /proc/net/tcp and tcp6 are read at most once per maxAge (PID's
// argument) whatever the number of ports asked about, and the open files of every process are
// scanned at most once per such reading, only when a port's owner is
// asked for. A fleet of local targets polled every few seconds then costs
// one reading per poll, not one per target.
//
// The zero value reads the running machine; a Listeners is safe for
// concurrent use.
type Listeners struct {
	// Proc is the tree read.
	Proc Proc
	// now is the clock; nil for time.Now. Tests set it.
	now func() time.Time

	mu     sync.Mutex
	at     time.Time        // when ports was read; zero before the first
	ports  map[int][]uint64 // port → inodes of its listening sockets
	owners map[uint64]int   // inode → lowest pid holding it; nil until scanned
	denied int              // processes whose open files could not be read in that scan
	err    error            // the reading's error
	reads  int              // readings of /proc/net/tcp{,6}, for tests
	scans  int              // scans of /proc/*/fd, for tests
}

// PID returns the process that listens on TCP port port of a loopback or
// wildcard address, with ListeningPID's errors, from a reading of the
// listening sockets at most maxAge old. A reading whose owner of the port
// has exited since is replaced at once, so that a process restarted on
// the port is found. Callers keep the PID and ask again only once that
// process is gone.
func (l *Listeners) PID(port int, maxAge time.Duration) (int, error) {
	if port <= 0 || port > 65535 {
		return 0, fmt.Errorf("find the process listening on TCP port %d: invalid port", port)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refresh(maxAge)
	pid, err := l.lookup(port)
	if pid > 0 && !l.Proc.exists(pid) {
		l.at = time.Time{}
		l.refresh(maxAge)
		pid, err = l.lookup(port)
	}
	return pid, err
}

// lookup finds the port's owner in the current reading, scanning the
// processes' open files once per reading.
func (l *Listeners) lookup(port int) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	inodes := l.ports[port]
	if len(inodes) == 0 {
		return 0, fmt.Errorf("find the process listening on TCP port %d: %w", port, ErrNoListener)
	}
	if l.owners == nil {
		if err := l.scan(); err != nil {
			return 0, fmt.Errorf("find the process listening on TCP port %d: %w", port, err)
		}
	}
	pid := 0
	for _, ino := range inodes {
		if p, ok := l.owners[ino]; ok && (pid == 0 || p < pid) {
			pid = p
		}
	}
	switch {
	case pid > 0:
		return pid, nil
	case l.denied > 0:
		return 0, fmt.Errorf("find the process listening on TCP port %d: %w: the open files of %d processes could not be read (%w); run as the target's user or as root",
			port, ErrListenerHidden, l.denied, fs.ErrPermission)
	default:
		return 0, fmt.Errorf("find the process listening on TCP port %d: %w: no process in this PID namespace holds it (the listener may run in another container)",
			port, ErrListenerHidden)
	}
}

// Reads returns how many times the listening sockets were read, and the
// open files of every process scanned.
func (l *Listeners) Reads() (reads, scans int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads, l.scans
}

// refresh rereads the listening sockets when the last reading is older
// than maxAge; the owners found go with the old reading.
func (l *Listeners) refresh(maxAge time.Duration) {
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	t := now()
	if !l.at.IsZero() && t.Sub(l.at) < maxAge && t.Sub(l.at) >= 0 {
		return
	}
	ports := make(map[int][]uint64)
	err := l.Proc.eachLocalListener(func(s Socket) {
		p := int(s.Local.Port())
		ports[p] = append(ports[p], s.Inode)
	})
	l.at, l.ports, l.owners, l.denied, l.err = t, ports, nil, 0, err
	l.reads++
}

// scan maps every listening socket of the reading to the lowest pid that
// holds it.
func (l *Listeners) scan() error {
	want := make(map[uint64]bool)
	for _, inodes := range l.ports {
		for _, ino := range inodes {
			want[ino] = true
		}
	}
	pids, err := l.Proc.pids()
	if err != nil {
		return err
	}
	l.scans++
	owners := make(map[uint64]int)
	denied := 0
	for _, pid := range pids { // ascending: the lowest pid wins
		err := l.Proc.eachSocketInode(pid, func(ino uint64) bool {
			if want[ino] {
				if _, ok := owners[ino]; !ok {
					owners[ino] = pid
				}
			}
			return true
		})
		if errors.Is(err, fs.ErrPermission) {
			denied++
		}
	}
	l.owners, l.denied = owners, denied
	return nil
}

// exists reports whether process pid is still there (its /proc/PID).
func (p Proc) exists(pid int) bool {
	_, err := os.Stat(p.pidPath(pid, "stat"))
	return err == nil
}
