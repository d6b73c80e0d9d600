// Command pprofleet serves many small pprof targets on 127.0.0.1, for the
// watch benchmarks: each port answers net/http/pprof's routes with
// profiles this process recorded from its own runtime when it started
// (heap, goroutine, heap?debug=1 with MemStats, a CPU profile), the CPU
// profile after the seconds asked for, as a service does.
//
//	pprofleet -n 500 -sd targets.json -for 10m
//
// It writes the targets in Prometheus' file_sd format to -sd, prints
// "pprofleet: N targets" on stderr, and serves until -for has passed (or
// it is killed).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"
)

func main() {
	n := flag.Int("n", 500, "targets")
	sd := flag.String("sd", "", "write the targets to this file_sd `FILE`")
	lifetime := flag.Duration("for", 10*time.Minute, "serve this long, at most")
	flag.Parse()
	if err := run(*n, *sd, *lifetime); err != nil {
		fmt.Fprintln(os.Stderr, "pprofleet:", err)
		os.Exit(1)
	}
}

// recorded are the answers every target gives.
type recorded struct {
	heap, heapDebug, goroutine, cpu []byte
}

// kept holds what the recorded heap profile shows in use.
var kept [][]byte

// Three allocating functions that call one another: each path down to
// depth d is a stack of its own, 2^(d+1)-1 of them, as a service's heap has
// hundreds of allocation sites and the stacks that reach them.
func allocA(d int) { allocVia(d, 1024, allocB, allocC) }
func allocB(d int) { allocVia(d, 2048, allocC, allocA) }
func allocC(d int) { allocVia(d, 4096, allocA, allocB) }

func allocVia(d, size int, next ...func(int)) {
	kept = append(kept, make([]byte, size))
	if d == 0 {
		return
	}
	for _, f := range next {
		f(d - 1)
	}
}

func record() (*recorded, error) {
	var r recorded
	// Every allocation sampled, so that the heap profile holds each
	// stack: about as large as a real service's.
	runtime.MemProfileRate = 1
	allocA(10)
	keep := make([][]byte, 256)
	// A heap profile shows the allocations of the cycle before the last
	// completed one.
	runtime.GC()
	runtime.GC()
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 0); err != nil {
		return nil, err
	}
	r.heap = bytes.Clone(b.Bytes())
	b.Reset()
	if err := pprof.Lookup("heap").WriteTo(&b, 1); err != nil {
		return nil, err
	}
	r.heapDebug = bytes.Clone(b.Bytes())
	b.Reset()
	if err := pprof.Lookup("goroutine").WriteTo(&b, 0); err != nil {
		return nil, err
	}
	r.goroutine = bytes.Clone(b.Bytes())
	b.Reset()
	if err := pprof.StartCPUProfile(&b); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		keep[x%len(keep)] = make([]byte, 1024)
	}
	pprof.StopCPUProfile()
	r.cpu = b.Bytes()
	runtime.KeepAlive(keep)
	return &r, nil
}

func (r *recorded) handler() http.Handler {
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, ctype string, body []byte) {
		w.Header().Set("Content-Type", ctype)
		w.Write(body)
	}
	mux.HandleFunc("/debug/pprof/heap", func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Get("debug") == "1" {
			write(w, "text/plain; charset=utf-8", r.heapDebug)
			return
		}
		write(w, "application/octet-stream", r.heap)
	})
	mux.HandleFunc("/debug/pprof/goroutine", func(w http.ResponseWriter, req *http.Request) {
		write(w, "application/octet-stream", r.goroutine)
	})
	mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, req *http.Request) {
		secs, _ := strconv.Atoi(req.URL.Query().Get("seconds"))
		select {
		case <-time.After(time.Duration(max(secs, 1)) * time.Second):
		case <-req.Context().Done():
			return
		}
		write(w, "application/octet-stream", r.cpu)
	})
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, req *http.Request) {
		write(w, "text/html", []byte("<html>pprof</html>"))
	})
	return mux
}

func run(n int, sd string, lifetime time.Duration) error {
	r, err := record()
	if err != nil {
		return fmt.Errorf("record profiles: %w", err)
	}
	h := r.handler()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addrs = append(addrs, ln.Addr().String())
		go (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
	}
	if sd != "" {
		b, _ := json.MarshalIndent([]map[string]any{{"targets": addrs, "labels": map[string]string{"fleet": "pprofleet"}}}, "", "  ")
		if err := os.WriteFile(sd, b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "pprofleet: %d targets\n", n)
	ctx, cancel := context.WithTimeout(context.Background(), lifetime)
	defer cancel()
	<-ctx.Done()
	return nil
}
