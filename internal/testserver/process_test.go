package testserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// childEnv makes the test binary the parent that dies (TestRun_killedWithTheTestBinary).
const childEnv = "HEAPSCOPE_TESTSERVER_CHILD"

// TestMain runs the dying parent when asked, otherwise the tests, then
// checks that no process waiter is left behind.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		dyingParent(os.Getenv(childEnv))
		return
	}
	goleak.VerifyTestMain(m)
}

// dyingParent starts a server that would run for a minute, prints its PID
// and waits to be killed.
func dyingParent(dir string) {
	p, err := Run("sleeper", exec.Command("sleep", "60"), filepath.Join(dir, "log"))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(p.PID())
	time.Sleep(time.Minute)
}

// gone says whether the process has exited: no such PID, or a zombie
// (exited, not yet reaped by whoever inherited it).
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(after, "Z")
}

// eventually waits up to five seconds for cond.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestProcess_Stop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string // run by sh
		wantErr string // "" for none
	}{
		{name: "exits on the signal", script: "exec sleep 60"},
		{name: "killed when it ignores the signal", script: "trap '' TERM; echo ignoring; while :; do sleep 0.05; done", wantErr: "killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Run("sh", exec.Command("sh", "-c", tc.script), filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			p.grace = 300 * time.Millisecond
			time.Sleep(100 * time.Millisecond) // the trap in place
			err = p.Stop(syscall.SIGTERM)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Stop = %v, want %q", err, tc.wantErr)
			}
			if !gone(p.PID()) {
				t.Errorf("pid %d still running after Stop", p.PID())
			}
			if again := p.Stop(syscall.SIGTERM); fmt.Sprint(again) != fmt.Sprint(err) {
				t.Errorf("Stop again = %v, want the first answer %v", again, err)
			}
		})
	}
}

func TestProcess_Wait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		readyIn time.Duration // ready answers nil after this
		wantErr string        // "" for none
	}{
		{name: "ready", script: "exec sleep 60", readyIn: 50 * time.Millisecond},
		{name: "exits first", script: "echo 'FATAL: could not bind: Address already in use' >&2; exit 3", readyIn: time.Hour, wantErr: "exit status 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Run("sh", exec.Command("sh", "-c", tc.script), filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Stop(syscall.SIGKILL) })
			began := time.Now()
			err = p.Wait(t.Context(), func(context.Context) error {
				if time.Since(began) < tc.readyIn {
					return errors.New("not yet")
				}
				return nil
			})
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Wait = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "Address already in use") {
				t.Errorf("Wait = %v, want %q and the log's tail", err, tc.wantErr)
			}
			if !p.AddrInUse() {
				t.Errorf("AddrInUse = false, want true after the log's line")
			}
		})
	}
}

func TestRun_killedWithTheTestBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self)
	parent.Env = append(os.Environ(), childEnv+"="+t.TempDir())
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		parent.Process.Kill()
		parent.Wait()
		t.Fatalf("read the server's pid: %v", err)
	}
	parent.Process.Kill()
	parent.Wait()
	if !eventually(func() bool { return gone(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("server (pid %d) still running after the test binary that started it was killed", pid)
	}
}

func TestProcess_LogTail(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 100) + "\n"
	for _, tc := range []struct {
		name string
		log  string
		want []string // in the tail
		not  []string // not in it
	}{
		{name: "short", log: "starting\nFATAL: no\n", want: []string{"starting\nFATAL: no"}},
		{name: "empty", log: "", want: []string{"is empty"}},
		{name: "long, cut at a line", log: "first line\n" + strings.Repeat(long, 40) + "last line\n", want: []string{"ends:\nxxx", "last line"}, not: []string{"first line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			got := (&Process{Name: "server", LogPath: path}).LogTail()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("LogTail = %q, want it to hold %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("LogTail = %q, want it without %q", got, n)
				}
			}
		})
	}
}
