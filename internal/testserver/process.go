// Package testserver runs real servers for tests as child processes on
// 127.0.0.1: Run starts one with its output in a log file, Process.Wait
// polls until it answers, Process.Stop ends it by PID. Its subpackages
// start the servers: pgtest (PostgreSQL) and s3test (versitygw, an S3
// server).
//
// A server started here is killed by the kernel should the test binary die
// first (on Linux), so a crashed or timed-out test leaves no server behind.
//
// It also holds what every package's tests share to wait and to randomise:
// WaitFor polls for something to happen within a deadline, Seed gives a
// randomised test a logged seed that an environment variable gives back.
package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartTimeout bounds how long Wait waits for a server to answer.
const StartTimeout = 30 * time.Second

// StopGrace is how long Stop waits for a server to exit after its first
// signal before it kills it.
const StopGrace = 10 * time.Second

// Process is a server running as a child process.
type Process struct {
	// Name says which server it is, in errors.
	Name string
	// LogPath is the file the server's stdout and stderr go to.
	LogPath string
	cmd     *exec.Cmd
	// grace is how long Stop waits before it kills: StopGrace.
	grace time.Duration
	// exited is closed when the server has exited, waitErr then saying
	// how.
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// Run starts cmd as a server named name, its stdout and stderr appended to
// the file logPath, in a process group of its own (a Ctrl-C at the
// terminal reaches the test alone) and, on Linux, killed should the test
// binary die first. cmd.SysProcAttr's Credential, when set, is kept.
func Run(name string, cmd *exec.Cmd, logPath string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	attr := childProcAttr()
	if cmd.SysProcAttr != nil {
		attr.Credential = cmd.SysProcAttr.Credential
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, grace: StopGrace, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// PID is the server's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the server has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait calls ready until it returns nil, for at most StartTimeout. It
// fails at once if the server exits meanwhile; either error ends with the
// tail of the server's log.
func (p *Process) Wait(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	var last error
	for {
		try, cancelTry := context.WithTimeout(ctx, 2*time.Second)
		last = ready(try)
		cancelTry()
		if last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("start %s: it exited (%v) before it answered: %w\n%s", p.Name, p.waitErr, last, p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("start %s (pid %d): no answer within %s: %w\n%s", p.Name, p.PID(), StartTimeout, last, p.LogTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop sends the server sig (the signal it shuts down on), kills it if it
// has not exited within StopGrace, and returns once it has exited. Stopping
// it again returns the first call's answer.
func (p *Process) Stop(sig syscall.Signal) error {
	p.stopOnce.Do(func() {
		if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			p.stopErr = fmt.Errorf("stop %s (pid %d): %w", p.Name, p.PID(), err)
		}
		select {
		case <-p.exited:
		case <-time.After(p.grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
			if p.stopErr == nil {
				p.stopErr = fmt.Errorf("stop %s (pid %d): still running %s after %v, killed\n%s", p.Name, p.PID(), p.grace, sig, p.LogTail())
			}
		}
	})
	return p.stopErr
}

// logTailBytes is how much of the end of a server's log LogTail shows.
const logTailBytes = 2048

// LogTail returns the last lines of the server's log, for error messages.
func (p *Process) LogTail() string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(%s's log: %v)", p.Name, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTailBytes {
		_, _ = f.Seek(fi.Size()-logTailBytes, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	if len(data) == logTailBytes {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	tail := strings.TrimSpace(string(data))
	if tail == "" {
		return fmt.Sprintf("(%s's log %s is empty)", p.Name, p.LogPath)
	}
	return fmt.Sprintf("%s's log %s ends:\n%s", p.Name, p.LogPath, tail)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. A
// server may still lose it to another process before it listens: callers
// try again with a new port when the log says the address was in use
// (AddrInUse).
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Port is FreePort for a test: it fails t when no port can be had.
func Port(t testing.TB) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// AddrInUse says whether the server's log tells that its port was taken.
func (p *Process) AddrInUse() bool {
	data, err := os.ReadFile(p.LogPath)
	return err == nil && bytes.Contains(bytes.ToLower(data), []byte("address already in use"))
}
