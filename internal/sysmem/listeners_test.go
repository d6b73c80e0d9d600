package sysmem

import (
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/testserver"
)

func TestListeners_oneReadingForManyPorts(t *testing.T) {
	const n = 20
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	closed := testserver.Port(t)
	l := &Listeners{}
	for poll := 0; poll < 3; poll++ {
		for _, port := range ports {
			pid, err := l.PID(port, time.Hour)
			if err != nil || pid != os.Getpid() {
				t.Fatalf("poll %d: PID(%d) = %d, %v; want %d", poll, port, pid, err, os.Getpid())
			}
		}
		if _, err := l.PID(closed, time.Hour); !errors.Is(err, ErrNoListener) {
			t.Fatalf("PID of a closed port: %v, want ErrNoListener", err)
		}
	}
	if reads, scans := l.Reads(); reads != 1 || scans != 1 {
		t.Errorf("%d ports asked about 3 times: %d readings of net/tcp, %d scans of the processes; want 1 and 1", n+1, reads, scans)
	}
}

func TestListeners_restartOnTheSamePort(t *testing.T) {
	port := testserver.Port(t)
	now := time.Unix(1e9, 0)
	l := &Listeners{now: func() time.Time { return now }}
	const poll = 5 * time.Second

	first := startChild(t, helperEnv+"=serve:"+strconv.Itoa(port))
	pid, err := l.PID(port, poll)
	if err != nil || pid != first.pid() {
		t.Fatalf("PID = %d, %v; want the listener %d", pid, err, first.pid())
	}
	now = now.Add(time.Second)
	if pid, err := l.PID(port, poll); err != nil || pid != first.pid() {
		t.Fatalf("PID within the poll = %d, %v; want %d", pid, err, first.pid())
	}
	if reads, _ := l.Reads(); reads != 1 {
		t.Errorf("two asks within the poll: %d readings, want 1", reads)
	}

	first.stop()
	second := startChild(t, helperEnv+"=serve:"+strconv.Itoa(port))
	// Within the same poll: the old owner is gone, so the reading is
	// replaced at once.
	if pid, err := l.PID(port, poll); err != nil || pid != second.pid() {
		t.Fatalf("PID after the restart = %d, %v; want the new listener %d (the old was %d)", pid, err, second.pid(), first.pid())
	}
	if reads, scans := l.Reads(); reads != 2 || scans != 2 {
		t.Errorf("after the restart: %d readings, %d scans; want 2 and 2", reads, scans)
	}

	second.stop()
	now = now.Add(poll)
	if _, err := l.PID(port, poll); !errors.Is(err, ErrNoListener) {
		t.Errorf("PID once the listener stopped, a poll later: %v, want ErrNoListener", err)
	}
}

func TestListeners_invalidPort(t *testing.T) {
	l := &Listeners{}
	for _, port := range []int{0, -1, 65536} {
		if _, err := l.PID(port, time.Second); err == nil || errors.Is(err, ErrNoListener) {
			t.Errorf("PID(%d) = %v, want an invalid port error", port, err)
		}
	}
	if reads, _ := l.Reads(); reads != 0 {
		t.Errorf("invalid ports read net/tcp %d times", reads)
	}
}
