package sysmem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strconv"
)

// ErrNoListener is returned, wrapped, by ListeningPID when no socket
// listens on the port.
var ErrNoListener = errors.New("nothing listens on the port")

// ErrListenerHidden is returned, wrapped, by ListeningPID when a socket
// listens on the port but no process this one can see holds it: it belongs
// to another user (the error then also matches fs.ErrPermission) or to
// another PID namespace.
var ErrListenerHidden = errors.New("a socket listens on the port but its process is not visible")

// TCPListen is the state of a listening socket in /proc/net/tcp ("0A").
const TCPListen = 0x0A

// Socket is one line of /proc/net/tcp or /proc/net/tcp6.
type Socket struct {
	// Local and Remote are the socket's addresses; Remote is zero
	// ("0.0.0.0:0" or "[::]:0") for a listening socket.
	Local, Remote netip.AddrPort
	// State is the TCP state, as the kernel numbers it: TCPListen for a
	// listening socket.
	State uint8
	// UID is the user id that owns the socket.
	UID uint32
	// Inode is the socket's inode, which the owner's /proc/PID/fd links
	// to as "socket:[INODE]"; 0 when it has none (TIME_WAIT).
	Inode uint64
}

// ParseNetTCP parses the contents of /proc/net/tcp or /proc/net/tcp6: a
// header line, then one socket a line. Addresses are read in this
// machine's byte order, as the kernel writes them.
func ParseNetTCP(r io.Reader) ([]Socket, error) {
	var socks []Socket
	err := eachLine(r, 16<<10, func(n int, line []byte) error {
		line = trimSpace(line)
		if len(line) == 0 || n == 1 && bytes.HasPrefix(line, []byte("sl")) {
			return nil
		}
		bad := func(what string, b []byte) error {
			return &SyntaxError{Line: n, Msg: "bad " + what + " " + strconv.Quote(string(b))}
		}
		var s Socket
		var f []byte
		f, line = nextField(line) // sl
		if len(f) < 2 || f[len(f)-1] != ':' {
			return bad("slot", f)
		}
		var ok bool
		f, line = nextField(line)
		if s.Local, ok = parseHexAddrPort(f); !ok {
			return bad("local address", f)
		}
		f, line = nextField(line)
		if s.Remote, ok = parseHexAddrPort(f); !ok {
			return bad("remote address", f)
		}
		f, line = nextField(line)
		st, ok := parseHex(f)
		if !ok || len(f) != 2 {
			return bad("state", f)
		}
		s.State = uint8(st)
		_, line = nextField(line) // tx_queue:rx_queue
		_, line = nextField(line) // tr:tm->when
		_, line = nextField(line) // retrnsmt
		f, line = nextField(line)
		uid, ok := parseDec(f)
		if !ok || uid > 1<<32-1 {
			return bad("uid", f)
		}
		s.UID = uint32(uid)
		_, line = nextField(line) // timeout
		f, _ = nextField(line)
		if s.Inode, ok = parseDec(f); !ok {
			return bad("inode", f)
		}
		socks = append(socks, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse net/tcp: %w", err)
	}
	return socks, nil
}

// parseHexAddrPort parses an address as /proc/net/tcp prints it: the IP
// as 8 (IPv4) or 32 (IPv6) hex digits, 32-bit words in host byte order,
// then ":" and the port as 4 hex digits.
func parseHexAddrPort(b []byte) (netip.AddrPort, bool) {
	colon := bytes.IndexByte(b, ':')
	if colon < 0 || len(b)-colon-1 != 4 {
		return netip.AddrPort{}, false
	}
	port, ok := parseHex(b[colon+1:])
	if !ok {
		return netip.AddrPort{}, false
	}
	hexIP := b[:colon]
	var ip [16]byte
	if len(hexIP) != 8 && len(hexIP) != 32 {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(hexIP)/8; i++ {
		w, ok := parseHex(hexIP[8*i : 8*i+8])
		if !ok {
			return netip.AddrPort{}, false
		}
		binary.NativeEndian.PutUint32(ip[4*i:], uint32(w))
	}
	var addr netip.Addr
	if len(hexIP) == 8 {
		addr = netip.AddrFrom4([4]byte(ip[:4]))
	} else {
		addr = netip.AddrFrom16(ip)
	}
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// ListeningPID returns the process that listens on TCP port port of a
// loopback or wildcard address (127.0.0.1, ::1, 0.0.0.0, ::): the one a
// client of localhost:port reaches. It reads the listening sockets of
// /proc/net/tcp and /proc/net/tcp6, then looks through the open files of
// every process (/proc/*/fd) for one of them. When several processes hold
// the socket (a parent and the child it forked), the lowest pid wins.
//
// /proc/net shows the sockets of this process's network namespace, and
// /proc the processes of its PID namespace. The error wraps ErrNoListener
// when nothing listens on the port, and ErrListenerHidden when something
// does but its process cannot be seen.
func (p Proc) ListeningPID(port int) (int, error) {
	if port <= 0 || port > 65535 {
		return 0, fmt.Errorf("find the process listening on TCP port %d: invalid port", port)
	}
	inodes := make(map[uint64]bool)
	err := p.eachLocalListener(func(s Socket) {
		if int(s.Local.Port()) == port {
			inodes[s.Inode] = true
		}
	})
	if err != nil {
		return 0, err
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("find the process listening on TCP port %d: %w", port, ErrNoListener)
	}
	pid, denied, err := p.socketOwner(inodes)
	switch {
	case err != nil:
		return 0, fmt.Errorf("find the process listening on TCP port %d: %w", port, err)
	case pid > 0:
		return pid, nil
	case denied > 0:
		return 0, fmt.Errorf("find the process listening on TCP port %d: %w: the open files of %d processes could not be read (%w); run as the target's user or as root",
			port, ErrListenerHidden, denied, fs.ErrPermission)
	default:
		return 0, fmt.Errorf("find the process listening on TCP port %d: %w: no process in this PID namespace holds it (the listener may run in another container)",
			port, ErrListenerHidden)
	}
}

// socketOwner returns the lowest pid with an open file descriptor on one
// of the socket inodes, or 0 and the number of processes whose
// descriptors could not be read for lack of permission.
func (p Proc) socketOwner(inodes map[uint64]bool) (pid, denied int, err error) {
	pids, err := p.pids()
	if err != nil {
		return 0, 0, err
	}

	for _, pid := range pids {
		found := false
		err := p.eachSocketInode(pid, func(inode uint64) bool {
			found = inodes[inode]
			return !found
		})
		if errors.Is(err, fs.ErrPermission) {
			denied++
		}
		// Any other error: the process has exited since, or is a
		// zombie without open files.
		if found {
			return pid, denied, nil
		}
	}
	return 0, denied, nil
}

// ListeningPorts returns the TCP ports, sorted, on which process pid
// listens on a loopback or wildcard address (127.0.0.1, ::1, 0.0.0.0, ::):
// those a client of localhost:port reaches. It matches the socket inodes
// of /proc/PID/fd against the listening sockets of /proc/net/tcp and
// /proc/net/tcp6.
//
// Those show this process's network namespace, the one its clients of
// localhost reach: a process in another namespace (another container)
// listens on no port found here, whatever its own namespace holds. The
// error matches fs.ErrNotExist when the process is gone and
// fs.ErrPermission when its open files may not be read.
func (p Proc) ListeningPorts(pid int) ([]int, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("list the TCP ports process %d listens on: invalid pid", pid)
	}
	held := make(map[uint64]bool)
	if err := p.eachSocketInode(pid, func(inode uint64) bool {
		held[inode] = true
		return true
	}); err != nil {
		return nil, err
	}
	var ports []int
	if len(held) == 0 {
		return ports, nil
	}
	err := p.eachLocalListener(func(s Socket) {
		if held[s.Inode] {
			ports = append(ports, int(s.Local.Port()))
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// eachLocalListener calls fn with every socket of /proc/net/tcp and
// /proc/net/tcp6 that listens on a loopback or wildcard address. One of
// the two files may be missing (a host without IPv6), not both.
func (p Proc) eachLocalListener(fn func(Socket)) error {
	missing := 0
	var lastErr error
	for _, name := range [...]string{"tcp", "tcp6"} {
		path := p.path("proc", "net", name)
		data, err := readFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			// No IPv6 on this host, most likely.
			missing++
			lastErr = err
			continue
		}
		if err != nil {
			return err
		}
		socks, err := ParseNetTCP(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		for _, s := range socks {
			addr := s.Local.Addr().Unmap()
			if s.State == TCPListen && (addr.IsLoopback() || addr.IsUnspecified()) {
				fn(s)
			}
		}
	}
	if missing == 2 {
		return lastErr
	}
	return nil
}

// eachSocketInode calls fn with the inode of every socket process pid has
// open (its /proc/PID/fd links of the form "socket:[INODE]") until fn
// returns false.
func (p Proc) eachSocketInode(pid int, fn func(inode uint64) bool) error {
	d, path, err := p.openPID(pid, "fd")
	if err != nil {
		return err
	}
	fds, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return p.pidErr(pid, path, err)
	}
	var link []byte
	for _, fd := range fds {
		target, err := os.Readlink(path + string(os.PathSeparator) + fd)
		if err != nil {
			// Closed since the directory was read.
			continue
		}
		link = append(link[:0], target...)
		if inode, ok := socketInode(link); ok && !fn(inode) {
			return nil
		}
	}
	return nil
}

// socketInode parses a descriptor's link target of the form
// "socket:[INODE]".
func socketInode(link []byte) (uint64, bool) {
	rest, ok := bytes.CutPrefix(link, []byte("socket:["))
	if !ok || len(rest) < 2 || rest[len(rest)-1] != ']' {
		return 0, false
	}
	return parseDec(rest[:len(rest)-1])
}

// pids returns the processes of /proc, in ascending order.
func (p Proc) pids() ([]int, error) {
	procDir := p.path("proc")
	f, err := os.Open(procDir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", procDir, bareErr(procDir, err))
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", procDir, bareErr(procDir, err))
	}
	pids := make([]int, 0, len(names))
	for _, name := range names {
		if n, ok := parseDec([]byte(name)); ok && n > 0 && n <= 1<<31-1 {
			pids = append(pids, int(n))
		}
	}
	slices.Sort(pids)
	return pids, nil
}
