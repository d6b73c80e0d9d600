// Command fleettargets serves N small pprof targets on 127.0.0.1 for the
// fleet test: the last also serves /metrics, whose go_goroutines is 10
// until a line on stdin raises it to 20000. It prints the targets'
// addresses on one line and exits when stdin closes. It is built without
// the race detector, so that profiling it costs what profiling a service
// costs.
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// hoard is live heap for the targets' heap profiles to sample: a few
// megabytes, as a small service holds.
var hoard [][]byte

func main() {
	for range 64 {
		hoard = append(hoard, make([]byte, 64<<10))
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "usage: fleettargets N")
		os.Exit(2)
	}
	var goroutines atomic.Int64
	goroutines.Store(10)
	var addrs []string
	for i := range n {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		if i == n-1 {
			mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, "# TYPE go_goroutines gauge\ngo_goroutines %d\n", goroutines.Load())
			})
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go (&http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}).Serve(ln)
		addrs = append(addrs, ln.Addr().String())
	}
	fmt.Println(strings.Join(addrs, " "))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		goroutines.Store(20000)
	}
}
