//go:build linux

package trigger

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/cgrouptest"
	"github.com/heapscope/heapscope/internal/sysmem"
)

// startLeaky starts the leaky cache example as a child process and moves
// it into the cgroup at dir before it serves a request. It returns the
// child and the example's base URL; the child is stopped at the end of the
// test.
func startLeaky(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=leaky")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "listening on "); ok {
				urls <- strings.TrimSpace(u)
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(15 * time.Second):
		t.Fatal("the leaky example did not say where it listens")
	}
	cgrouptest.Move(t, dir, cmd.Process.Pid)
	return cmd, url
}

// TestWatchMemory_v1Example runs the leaky cache example in a limited v1
// memory cgroup under load with ever new ids, so that its heap grows, and
// checks that the kernel's notification of a threshold comes within a
// second of the usage being seen past it, and that the local sample and
// the example's /metrics agree.
func TestWatchMemory_v1Example(t *testing.T) {
	const limit = 512 << 20
	dir := cgrouptest.MakeV1(t, limit)
	cmd, url := startLeaky(t, dir)
	pid := cmd.Process.Pid
	cg, err := sysmem.Proc{}.Cgroup(pid)
	if err != nil {
		t.Fatal(err)
	}
	threshold := cgrouptest.ReadUint(t, dir, "memory.usage_in_bytes") + 12<<20
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := WatchMemory(ctx, cg, threshold)
	if err != nil {
		t.Fatal(err)
	}

	// Load: 4 clients, a new 200-byte id at every request.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var requests atomic.Int64
	pad := strings.Repeat("x", 180)
	client := &http.Client{Timeout: 5 * time.Second}
	for w := range 4 {
		wg.Go(func() {
			for i := 0; loadCtx.Err() == nil; i++ {
				req, _ := http.NewRequestWithContext(loadCtx, http.MethodGet, fmt.Sprintf("%s/process?id=%d-%d-%s", url, w, i, pad), nil)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				requests.Add(1)
			}
		})
	}
	defer func() {
		stopLoad()
		wg.Wait()
		client.CloseIdleConnections()
	}()

	// Watch the usage too, to know when it crossed.
	began := time.Now()
	var seen time.Time
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for notified := false; !notified; {
		select {
		case <-ch:
			notified = true
			now := time.Now()
			usage := cgrouptest.ReadUint(t, dir, "memory.usage_in_bytes")
			if seen.IsZero() {
				t.Logf("notified at usage %d (threshold %d) after %d requests, %v into the load, before the 10ms poll saw it", usage, threshold, requests.Load(), now.Sub(began))
			} else {
				t.Logf("notified %v after the 10ms poll saw the usage past %d, after %d requests, %v into the load", now.Sub(seen), threshold, requests.Load(), now.Sub(began))
			}
			if usage < threshold {
				t.Errorf("notified at usage %d, below the threshold %d", usage, threshold)
			}
		case <-tick.C:
			if seen.IsZero() && cgrouptest.ReadUint(t, dir, "memory.usage_in_bytes") >= threshold {
				seen = time.Now()
			}
			if !seen.IsZero() && time.Since(seen) > notifyWithin {
				t.Fatalf("the usage passed %d and no notification came within %v", threshold, notifyWithin)
			}
		case <-deadline:
			t.Fatalf("after %d requests the usage is %d, still below %d", requests.Load(), cgrouptest.ReadUint(t, dir, "memory.usage_in_bytes"), threshold)
		}
	}
	stopLoad()
	wg.Wait()

	// The local sample with the example's own /metrics.
	local, err := Local{PID: pid}.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	remote := RemoteSample(body, 0)
	local.Merge(remote)
	t.Logf("sample: %+v", local)
	if !local.Has(KnownGoroutines|KnownGoMemory|KnownMemory|KnownMemoryLimit) || local.Goroutines == 0 || local.MemoryLimit != limit {
		t.Errorf("merged sample %+v: want goroutines and the runtime's count from /metrics, the cgroup's figures from /proc", local)
	}
	// The two RSS figures are of the same process, a moment apart.
	if d := float64(remote.RSS) - float64(local.RSS); d > 0.2*float64(local.RSS) || -d > 0.2*float64(local.RSS) {
		t.Errorf("RSS %d from /proc, %d from /metrics", local.RSS, remote.RSS)
	}
	if r := DetectRestart(remote, local); r.Restarted {
		t.Errorf("the same process seen as restarted: %s", r.Reason)
	}
	e, _ := Parse("memory>=1MiB")
	var s State
	if f, ok := s.Observe(Rule{Expr: e}, local); !ok || f.Value != float64(local.Memory) {
		t.Errorf("memory>=1MiB on %d bytes: %+v, %v", local.Memory, f, ok)
	}
}
