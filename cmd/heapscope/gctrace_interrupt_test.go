package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/testserver"
)

// gcChildEnv makes the test binary a program that allocates until it is
// stopped, so that the runtime collects every few milliseconds; its value
// says how the program takes an interrupt: "dies" (Go's default), "exits"
// (handles it and exits 0, as a service shutting down gracefully) or
// "ignores".
const gcChildEnv = "HEAPSCOPE_TEST_GC_CHILD"

// gcChild is the program of gcChildEnv. After three GC cycles it says its
// PID and cycle count on stderr, once.
func gcChild(mode string) int {
	switch mode {
	case "exits":
		interrupt := make(chan os.Signal, 1)
		signal.Notify(interrupt, os.Interrupt)
		go func() {
			<-interrupt
			fmt.Fprintln(os.Stderr, "gcchild: interrupted, shutting down")
			os.Exit(0)
		}()
	case "ignores":
		signal.Ignore(os.Interrupt)
	case "dies":
	default:
		fmt.Fprintf(os.Stderr, "gcchild: unknown mode %q\n", mode)
		return 2
	}
	keep := make([][]byte, 0, 64) // 4 MiB live at most
	announced := false
	var ms runtime.MemStats
	for i := 0; ; i++ {
		if len(keep) == cap(keep) {
			clear(keep)
			keep = keep[:0]
		}
		keep = append(keep, make([]byte, 64<<10))
		if !announced && i%16 == 0 {
			runtime.ReadMemStats(&ms)
			if ms.NumGC >= 3 {
				fmt.Fprintf(os.Stderr, "gcchild: pid %d after %d GCs\n", os.Getpid(), ms.NumGC)
				announced = true
			}
		}
		time.Sleep(time.Millisecond)
	}
}

var gcChildSaid = regexp.MustCompile(`gcchild: pid (\d+) after (\d+) GCs`)

func TestGCTrace_commandInterrupted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a child process cannot be sent an interrupt on Windows")
	}
	tests := []struct {
		name string
		mode string
		// stopDelay is how long heapscope waits for the command to exit
		// before killing it.
		stopDelay time.Duration
	}{
		{"command dies of the interrupt", "dies", 5 * time.Second},
		{"command exits 0 on the interrupt", "exits", 5 * time.Second},
		{"command ignores the interrupt and is killed", "ignores", 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(gcChildEnv, tt.mode)
			defer func(d time.Duration) { gctraceStopDelay = d }(gctraceStopDelay)
			gctraceStopDelay = tt.stopDelay

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var stdout, stderr testserver.Buffer
			done := make(chan int, 1)
			go func() {
				done <- execute(ctx, []string{"gctrace", "--format", "json", "--", os.Args[0]}, strings.NewReader(""), &stdout, &stderr)
			}()

			// The child's line comes through heapscope once the lines
			// of its first GC cycles have: interrupt then.
			pid, cycles := waitForGCChild(t, &stderr, done)
			interrupted := time.Now()
			cancel()
			var code int
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("heapscope still running 30 s after the interrupt; stderr: %s", stderr.String())
			}
			stopped := time.Since(interrupted)

			if code != exitInterrupted {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitInterrupted, stderr.String())
			}
			var s gcstats.TraceSummary
			if err := json.Unmarshal([]byte(stdout.String()), &s); err != nil {
				t.Fatalf("stdout is not the report: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			// The runtime may print a cycle's line just after the
			// program reads the count.
			if s.Cycles < cycles-1 || s.Cycles < 2 {
				t.Errorf("report of %d cycles, want the %d the command had run", s.Cycles, cycles)
			}
			if !strings.Contains(stderr.String(), "interrupted; the report covers") {
				t.Errorf("stderr %q does not say the report stops at the interrupt", stderr.String())
			}
			if strings.Contains(stderr.String(), "gc 1 @") {
				t.Errorf("GC lines forwarded to stderr: %q", stderr.String())
			}
			if p, err := os.FindProcess(pid); err == nil {
				if err := p.Signal(syscall.Signal(0)); !errors.Is(err, os.ErrProcessDone) {
					t.Errorf("the command (pid %d) is still there after heapscope returned: %v", pid, err)
					_ = p.Kill()
				}
			}
			if tt.mode == "ignores" && stopped < tt.stopDelay {
				t.Errorf("heapscope returned %s after the interrupt, before the %s a command has to exit", stopped, tt.stopDelay)
			}
		})
	}
}

// waitForGCChild waits until the child of gcChild has said its PID and GC
// count on heapscope's stderr.
func waitForGCChild(t *testing.T, stderr *testserver.Buffer, done <-chan int) (pid, cycles int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if m := gcChildSaid.FindStringSubmatch(stderr.String()); m != nil {
			pid, _ = strconv.Atoi(m[1])
			cycles, _ = strconv.Atoi(m[2])
			return pid, cycles
		}
		select {
		case code := <-done:
			t.Fatalf("heapscope exited %d before the command ran 3 GC cycles; stderr: %s", code, stderr.String())
		case <-deadline:
			t.Fatalf("the command did not run 3 GC cycles in 30 s; stderr: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
