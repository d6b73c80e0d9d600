package sysmem

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseNetTCP(t *testing.T) {
	ap := netip.MustParseAddrPort
	tests := []struct {
		file string
		want []Socket
	}{
		{"tcp", []Socket{
			{Local: ap("127.0.0.1:6060"), Remote: ap("0.0.0.0:0"), State: TCPListen, UID: 1000, Inode: 31337},
			{Local: ap("0.0.0.0:8080"), Remote: ap("0.0.0.0:0"), State: TCPListen, UID: 0, Inode: 1076},
			{Local: ap("10.0.0.5:9090"), Remote: ap("0.0.0.0:0"), State: TCPListen, UID: 998, Inode: 2233},
			{Local: ap("127.0.0.1:6060"), Remote: ap("127.0.0.1:51234"), State: 0x01, UID: 1000, Inode: 44556},
			{Local: ap("127.0.0.1:51234"), Remote: ap("127.0.0.1:6060"), State: 0x06, UID: 0, Inode: 0},
		}},
		{"tcp6", []Socket{
			{Local: ap("[::1]:7070"), Remote: ap("[::]:0"), State: TCPListen, UID: 1000, Inode: 5151},
			{Local: ap("[::]:8081"), Remote: ap("[::]:0"), State: TCPListen, UID: 0, Inode: 5252},
			{Local: ap("[::ffff:127.0.0.1]:6061"), Remote: ap("[::]:0"), State: TCPListen, UID: 1000, Inode: 5353},
			{Local: ap("[2001:db8::5]:9091"), Remote: ap("[::]:0"), State: TCPListen, UID: 1000, Inode: 5454},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseNetTCP(bytes.NewReader(readTestdata(t, "net", tt.file)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d sockets, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("socket %d\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseNetTCP_errors(t *testing.T) {
	const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	const good = "   0: 0100007F:17AC 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 31337 1\n"
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantMsg  string
	}{
		{"bad slot", header + "   x 0100007F:17AC 00000000:0000 0A 0 0 0 1000 0 31337\n", 2, "slot"},
		{"short address", header + good + "   1: 0100007:17AC 00000000:0000 0A 0 0 0 1000 0 31337\n", 3, "local address"},
		{"address without port", header + "   1: 0100007F 00000000:0000 0A 0 0 0 1000 0 31337\n", 2, "local address"},
		{"long port", header + "   1: 0100007F:017AC 00000000:0000 0A 0 0 0 1000 0 31337\n", 2, "local address"},
		{"bad remote", header + "   1: 0100007F:17AC 0000000G:0000 0A 0 0 0 1000 0 31337\n", 2, "remote address"},
		{"bad state", header + "   1: 0100007F:17AC 00000000:0000 A 0 0 0 1000 0 31337\n", 2, "state"},
		{"bad uid", header + "   1: 0100007F:17AC 00000000:0000 0A 0 0 0 -3 0 31337\n", 2, "uid"},
		{"no inode", header + "   1: 0100007F:17AC 00000000:0000 0A 0 0 0 1000 0\n", 2, "inode"},
		{"header not first", good + header, 2, "slot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseNetTCP(strings.NewReader(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseNetTCP error = %v, want a *SyntaxError", err)
			}
			if se.Line != tt.wantLine || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("ParseNetTCP error = %q (line %d), want line %d and %q", err, se.Line, tt.wantLine, tt.wantMsg)
			}
		})
	}
}

func TestProc_ListeningPID(t *testing.T) {
	t.Run("IPv4 loopback", func(t *testing.T) {
		assertListener(t, "tcp4", "127.0.0.1:0")
	})
	t.Run("IPv4 wildcard", func(t *testing.T) {
		assertListener(t, "tcp4", "0.0.0.0:0")
	})
	t.Run("IPv6 loopback", func(t *testing.T) {
		ln, err := net.Listen("tcp6", "[::1]:0")
		if err != nil {
			t.Logf("no IPv6 loopback here: %v", err)
			return
		}
		ln.Close()
		assertListener(t, "tcp6", "[::1]:0")
	})
	t.Run("nothing listens", func(t *testing.T) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		_, err = Proc{}.ListeningPID(port)
		if !errors.Is(err, ErrNoListener) {
			t.Errorf("ListeningPID of a closed port: %v, want ErrNoListener", err)
		}
	})
	t.Run("connected socket is not a listener", func(t *testing.T) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		conn, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// The client end's port is in /proc/net/tcp, not listening.
		clientPort := conn.LocalAddr().(*net.TCPAddr).Port
		if _, err := (Proc{}).ListeningPID(clientPort); !errors.Is(err, ErrNoListener) {
			t.Errorf("ListeningPID of a client port: %v, want ErrNoListener", err)
		}
	})
	t.Run("invalid port", func(t *testing.T) {
		for _, port := range []int{0, -1, 65536} {
			if _, err := (Proc{}).ListeningPID(port); err == nil || errors.Is(err, ErrNoListener) {
				t.Errorf("ListeningPID(%d) = %v, want an invalid port error", port, err)
			}
		}
	})
}

// assertListener listens on addr and checks that ListeningPID finds this
// process behind the port.
func assertListener(t *testing.T, network, addr string) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pid, err := Proc{}.ListeningPID(port)
	if err != nil {
		t.Fatal(err)
	}
	if pid != os.Getpid() {
		t.Errorf("ListeningPID(%d) = %d, want this process, %d", port, pid, os.Getpid())
	}
}

// fakeProc builds a root with /proc/net/tcp and tcp6 from testdata and,
// for each pid, an fd directory linking to the given targets.
func fakeProc(t *testing.T, fds map[int][]string) string {
	t.Helper()
	root := t.TempDir()
	for _, name := range []string{"tcp", "tcp6"} {
		writeFile(t, filepath.Join(root, "proc", "net", name), string(readTestdata(t, "net", name)))
	}
	for pid, targets := range fds {
		dir := filepath.Join(root, "proc", strconv.Itoa(pid), "fd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, target := range targets {
			if err := os.Symlink(target, filepath.Join(dir, strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Entries of /proc that are not processes.
	writeFile(t, filepath.Join(root, "proc", "uptime"), "1.00 1.00\n")
	return root
}

func TestProc_ListeningPID_testdata(t *testing.T) {
	root := fakeProc(t, map[int][]string{
		1:    {"/dev/null", "socket:[1076]"},
		300:  {"pipe:[88]", "socket:[31337]", "anon_inode:[eventpoll]"},
		77:   {"socket:[31337]"}, // a parent sharing the socket
		400:  {"socket:[5151]"},
		401:  {"socket:[5252]"},
		402:  {"socket:[5353]"},
		403:  {"socket:[2233]", "socket:[5454]"},
		1000: {"socket:[44556]"},
	})
	tests := []struct {
		name    string
		port    int
		want    int
		wantErr error
	}{
		{"loopback, lowest pid of two", 6060, 77, nil},
		{"IPv4 wildcard", 8080, 1, nil},
		{"IPv6 loopback", 7070, 400, nil},
		{"IPv6 wildcard", 8081, 401, nil},
		{"IPv4-mapped loopback", 6061, 402, nil},
		{"IPv4 address not loopback", 9090, 0, ErrNoListener},
		{"IPv6 address not loopback", 9091, 0, ErrNoListener},
		{"nothing", 1234, 0, ErrNoListener},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, err := Proc{Root: root}.ListeningPID(tt.port)
			if pid != tt.want || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("ListeningPID(%d) = %d, %v; want %d, %v", tt.port, pid, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestProc_ListeningPID_hidden(t *testing.T) {
	t.Run("other namespace", func(t *testing.T) {
		root := fakeProc(t, map[int][]string{1: {"socket:[1]"}})
		_, err := Proc{Root: root}.ListeningPID(6060)
		if !errors.Is(err, ErrListenerHidden) || errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "another container") {
			t.Errorf("ListeningPID = %v, want ErrListenerHidden naming another namespace", err)
		}
	})
	t.Run("permission", func(t *testing.T) {
		if os.Geteuid() == 0 {
			// Root reads every fd directory whatever its mode: ask
			// an unprivileged copy of this test to find this
			// process's listener.
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got, ok := runAsNobody(t, "listen:"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
			if !ok {
				t.Log("cannot run as another user here: checked the namespace case only")
				return
			}
			t.Logf("as another user: %s", got)
			if !strings.HasPrefix(got, "permission: ") || !strings.Contains(got, "run as the target's user or as root") {
				t.Errorf("ListeningPID as another user: %q, want ErrListenerHidden and fs.ErrPermission", got)
			}
			return
		}
		root := fakeProc(t, map[int][]string{1: {"socket:[1]"}, 2: {"socket:[2]"}})
		for _, pid := range []string{"1", "2"} {
			dir := filepath.Join(root, "proc", pid, "fd")
			if err := os.Chmod(dir, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
		}
		_, err := Proc{Root: root}.ListeningPID(6060)
		if !errors.Is(err, ErrListenerHidden) || !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "of 2 processes could not be read") {
			t.Errorf("ListeningPID = %v, want ErrListenerHidden and fs.ErrPermission, 2 processes", err)
		}
	})
}

func TestProc_ListeningPID_noProcNet(t *testing.T) {
	_, err := Proc{Root: t.TempDir()}.ListeningPID(6060)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join("proc", "net", "tcp6")) {
		t.Errorf("ListeningPID without /proc/net: %v, want a not-exist error naming the file", err)
	}
}

func FuzzParseNetTCP(f *testing.F) {
	f.Add(readTestdata(f, "net", "tcp"))
	f.Add(readTestdata(f, "net", "tcp6"))
	f.Add([]byte("0: 0:0 0:0 0A 0 0 0 0 0 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		socks, err := ParseNetTCP(bytes.NewReader(data))
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 {
				t.Fatalf("error %v is not a *SyntaxError with a line", err)
			}
			return
		}
		for _, s := range socks {
			if !s.Local.IsValid() || !s.Remote.IsValid() {
				t.Fatalf("invalid address in %+v", s)
			}
		}
	})
}

func TestProc_ListeningPorts(t *testing.T) {
	loopback, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer loopback.Close()
	wildcard, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer wildcard.Close()
	// A connection to a listener is no listening port of its own.
	conn, err := net.Dial("tcp4", loopback.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	ports, err := Proc{}.ListeningPorts(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range []net.Listener{loopback, wildcard} {
		if port := ln.Addr().(*net.TCPAddr).Port; !slices.Contains(ports, port) {
			t.Errorf("ListeningPorts = %v, missing %s", ports, ln.Addr())
		}
	}
	if port := conn.LocalAddr().(*net.TCPAddr).Port; slices.Contains(ports, port) {
		t.Errorf("ListeningPorts = %v holds the client port %d", ports, port)
	}
	if !slices.IsSorted(ports) {
		t.Errorf("ListeningPorts = %v, not sorted", ports)
	}
}

func TestProc_ListeningPorts_testdata(t *testing.T) {
	root := fakeProc(t, map[int][]string{
		300:  {"pipe:[88]", "socket:[31337]", "anon_inode:[eventpoll]", "socket:[5252]", "socket:[44556]"},
		400:  {"socket:[5151]", "socket:[5353]", "socket:[1076]"},
		403:  {"socket:[2233]", "socket:[5454]"},
		1000: {"/dev/null"},
	})
	tests := []struct {
		name string
		pid  int
		want []int
	}{
		{"loopback and IPv6 wildcard, not the connection", 300, []int{6060, 8081}},
		{"IPv6 loopback, IPv4-mapped, IPv4 wildcard, sorted", 400, []int{6061, 7070, 8080}},
		{"addresses not loopback", 403, nil},
		{"no sockets", 1000, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Proc{Root: root}.ListeningPorts(tt.pid)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ListeningPorts(%d) = %v, %v; want %v", tt.pid, got, err, tt.want)
			}
		})
	}
	t.Run("process gone", func(t *testing.T) {
		_, err := Proc{Root: root}.ListeningPorts(4242)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "process 4242 not found") {
			t.Errorf("ListeningPorts of a missing process: %v, want process not found", err)
		}
	})
	t.Run("invalid pid", func(t *testing.T) {
		if _, err := (Proc{Root: root}).ListeningPorts(0); err == nil {
			t.Error("ListeningPorts(0) = nil error")
		}
	})
}
