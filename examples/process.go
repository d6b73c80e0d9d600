package examples

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// StartTimeout bounds how long Start waits for an example to listen.
const StartTimeout = 15 * time.Second

// stopGrace is how long Stop waits for an example to shut down gracefully
// before it kills it.
const stopGrace = 5 * time.Second

// Process is a bundled example serving in a child process, so that the
// parent's own allocations stay out of the example's profiles.
type Process struct {
	// URL is where the example listens, as it announced on stderr.
	URL string
	cmd *exec.Cmd
	// exited is closed when the example has exited, waitErr then
	// saying how.
	exited  chan struct{}
	waitErr error
}

// Start runs command, a command line that serves the named example
// through Main on 127.0.0.1 (heapscope's hidden serve-example command), as
// a child process, and waits until the example says where it listens. The
// child starts as a user would start a service: the environment as it is,
// no GODEBUG of the caller's, its own process group (a Ctrl-C at the
// terminal reaches the caller alone, which stops the example in order)
// and, on Linux, killed by the kernel should the caller die first.
func Start(ctx context.Context, name string, command ...string) (*Process, error) {
	if len(command) == 0 {
		return nil, fmt.Errorf("start example %s: no command", name)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout = io.Discard
	cmd.SysProcAttr = childProcAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("start example %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start example %s: %w", name, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	urls := make(chan string, 1)
	var lastLine string
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			lastLine = line
			if _, u, ok := strings.Cut(line, "listening on "); ok {
				select {
				case urls <- strings.TrimSpace(u):
				default:
				}
			}
		}
		// A line longer than the buffer ends the scan: drain the rest so
		// the example never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, stderr)
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case u := <-urls:
		p.URL = u
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("start example %s: it exited (%v): %s", name, p.waitErr, lastLine)
	case <-timer.C:
		p.kill()
		return nil, fmt.Errorf("start example %s: not listening after %s", name, StartTimeout)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

// PID is the example's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop asks the example to shut down gracefully (SIGTERM) and kills it if
// it has not within five seconds. It returns once the example has exited;
// the error says why it could not be asked. Stopping it again returns at
// once.
func (p *Process) Stop() error {
	var err error
	if serr := p.cmd.Process.Signal(syscall.SIGTERM); serr != nil && !errors.Is(serr, os.ErrProcessDone) {
		err = fmt.Errorf("stop example (pid %d): %w", p.PID(), serr)
	}
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		p.kill()
	}
	return err
}

func (p *Process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}
