// Command gen records the heap snapshot series that diagnose's tests read
// (testdata/series/NAME/heap-00N.pb.gz): the leaky cache and the optimized
// cache, each served in a process of its own on 127.0.0.1 with
// net/http/pprof, under bounded load, with a heap profile (heap?gc=1) taken
// every interval. From internal/diagnose:
//
//	go run -trimpath ./testdata/gen
//
// -trimpath keeps this machine's directories out of the profiles (their
// files are then module paths). It takes about 10 s.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heapscope/heapscope/examples"
)

func main() {
	out := flag.String("out", filepath.Join("testdata", "series"), "directory of the series, one subdirectory per example")
	example := flag.String("example", "", "record this example only, in this process (the command runs itself once per example)")
	snapshots := flag.Int("snapshots", 5, "heap snapshots per series")
	interval := flag.Duration("interval", time.Second, "time between snapshots")
	rate := flag.Int("rate", 400, "requests per second")
	flag.Parse()
	if err := run(*out, *example, *snapshots, *interval, *rate); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}

func run(out, example string, snapshots int, interval time.Duration, rate int) error {
	if !trimmed() {
		return errors.New("build with -trimpath (go run -trimpath ./testdata/gen), so the profiles hold no local paths")
	}
	if example != "" {
		return record(filepath.Join(out, example), example, snapshots, interval, rate)
	}
	for _, name := range []string{"leaky", "optimized"} {
		cmd := exec.Command(os.Args[0], "-example", name, "-out", out,
			"-snapshots", strconv.Itoa(snapshots), "-interval", interval.String(), "-rate", strconv.Itoa(rate))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("record %s: %w", name, err)
		}
	}
	return nil
}

func trimmed() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-trimpath" {
			return s.Value == "true"
		}
	}
	return false
}

// record serves one example, drives its default load at rate and writes
// the heap snapshots into dir.
func record(dir, name string, snapshots int, interval time.Duration, rate int) error {
	// A finer sampling than the default 512 KiB, so that a few seconds of
	// load leave enough samples at each site.
	runtime.MemProfileRate = 16 << 10
	h, err := examples.New(name)
	if err != nil {
		return err
	}
	_, path := examples.DefaultLoad(name)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	base := "http://" + ln.Addr().String()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { drive(ctx, base, path, rate) })
	defer func() { stop(); wg.Wait() }()

	start := time.Now()
	for i := range snapshots {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		body, err := get(base + "/debug/pprof/heap?gc=1")
		if err != nil {
			return err
		}
		file := filepath.Join(dir, fmt.Sprintf("heap-%03d.pb.gz", i))
		if err := os.WriteFile(file, body, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d bytes\n", file, len(body))
	}
	return nil
}

// drive sends requests at rate until ctx ends, expanding {rand:N}.
func drive(ctx context.Context, base, path string, rate int) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if body, err := get(base + expand(path)); err != nil {
				fmt.Fprintf(os.Stderr, "gen: %v (%d bytes)\n", err, len(body))
			}
		}
	}
}

func expand(path string) string {
	i := strings.Index(path, "{rand:")
	if i < 0 {
		return path
	}
	j := strings.IndexByte(path[i:], '}')
	n, _ := strconv.Atoi(path[i+len("{rand:") : i+j])
	return path[:i] + strconv.Itoa(rand.IntN(n)) + path[i+j+1:]
}

func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, err
}
