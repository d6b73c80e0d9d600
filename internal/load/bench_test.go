package load

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// The benchmarks drive a minimal JSON server running in a process of its
// own (this test binary, see TestMain), so that their CPU time and
// allocations are the client's alone. They report the client's CPU time per
// request as cpu-ns/req, from getrusage. Pin the benchmark to one core and
// the server (serverCPUsEnv) to another for figures comparable with
// bench/load-vs-wrk.sh's:
//
//	go test -c ./internal/load
//	HEAPSCOPE_BENCH_SERVER_CPUS=0 taskset -c 1 ./load.test -test.run '^$' -test.bench . -test.benchtime 200000x
//
// serverCPUsEnv names the cores the server is pinned to, with taskset.
const serverCPUsEnv = "HEAPSCOPE_BENCH_SERVER_CPUS"

// benchConnections is the benchmarks' concurrency, as wrk -c.
const benchConnections = 64

// BenchmarkRun measures the generator: the closed model at full speed, and
// the open model at a rate below what the machine can do. allocs/op is the
// generator's own allocations per request (target: at most 2).
func BenchmarkRun(b *testing.B) {
	url := "http://" + startServer(b) + "/items/{seq}"
	b.Run("closed", func(b *testing.B) {
		benchCPU(b, func(n int) {
			res, err := Run(b.Context(), Options{Targets: []Request{{URL: url}}, Connections: benchConnections, MaxRequests: uint64(n)})
			checkBench(b, res, err, n)
		})
	})
	b.Run("open-10k", func(b *testing.B) {
		benchCPU(b, func(n int) {
			res, err := Run(b.Context(), Options{Targets: []Request{{URL: url}}, Rate: 10000, MaxRequests: uint64(n)})
			checkBench(b, res, err, n)
		})
	})
}

// BenchmarkClient compares the candidate HTTP clients of the closed model
// by client CPU per request, each with benchConnections workers sending
// back to back: net/http with a tuned Transport, fasthttp's pooled
// HostClient, and the generator (fasthttp's request writer and response
// parser over a connection per worker).
func BenchmarkClient(b *testing.B) {
	addr := startServer(b)
	url := "http://" + addr + "/"
	b.Run("net-http", func(b *testing.B) {
		tr := &http.Transport{MaxIdleConnsPerHost: benchConnections, MaxConnsPerHost: benchConnections, DisableCompression: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		benchCPU(b, func(n int) {
			pool(n, func() {
				resp, err := client.Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		})
	})
	b.Run("fasthttp-hostclient", func(b *testing.B) {
		hc := &fasthttp.HostClient{
			Addr: addr, MaxConns: benchConnections, MaxIdleConnDuration: 100 * time.Millisecond,
			// Not fasthttp's default dialer, whose address cache keeps a
			// goroutine for the life of the process.
			Dial: func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) },
		}
		defer hc.CloseIdleConnections()
		benchCPU(b, func(n int) {
			var mu sync.Mutex
			reqs := make(chan *fasthttp.Request, benchConnections)
			for range benchConnections {
				req := fasthttp.AcquireRequest()
				req.SetRequestURI(url)
				reqs <- req
			}
			pool(n, func() {
				mu.Lock()
				req := <-reqs
				mu.Unlock()
				resp := fasthttp.AcquireResponse()
				if err := hc.DoTimeout(req, resp, DefaultTimeout); err != nil {
					b.Error(err)
				}
				fasthttp.ReleaseResponse(resp)
				reqs <- req
			})
		})
		// Let the pool's cleaner see the connections idle and stop.
		hc.CloseIdleConnections()
		time.Sleep(250 * time.Millisecond)
	})
	b.Run("generator", func(b *testing.B) {
		benchCPU(b, func(n int) {
			res, err := Run(b.Context(), Options{Targets: []Request{{URL: url}}, Connections: benchConnections, MaxRequests: uint64(n)})
			checkBench(b, res, err, n)
		})
	})
}

// pool runs do n times over benchConnections goroutines.
func pool(n int, do func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range benchConnections {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				do()
			}
		})
	}
	wg.Wait()
}

// benchCPU runs run(b.N) and reports the process's CPU time per request.
func benchCPU(b *testing.B, run func(n int)) {
	b.ReportAllocs()
	before := cpuTime()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/req")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func checkBench(b *testing.B, res Result, err error, n int) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	if res.Completed != uint64(n) || res.Errors != 0 {
		b.Fatalf("%d of %d requests completed, errors %v", res.Completed, n, res.ErrorKinds)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startServer starts this test binary as the JSON server in a process of
// its own and returns its address; the server exits when the benchmark
// ends.
func startServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if cpus := os.Getenv(serverCPUsEnv); cpus != "" {
		cmd = exec.Command("taskset", "-c", cpus, os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("start the server: %v", err)
	}
	return strings.TrimSpace(line)
}
