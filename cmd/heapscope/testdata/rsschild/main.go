//go:build linux

// Command rsschild is the process the rss tests read: it maps anonymous
// memory and touches part of it on request, so that the test knows how
// much RSS should rise and how much mapped memory should not count.
//
// It prints "ready" on stdout when idle, and reads lines from stdin:
//
//	map SIZE_MIB TOUCH_MIB
//
// maps SIZE_MIB of private anonymous memory, writes one byte in every page
// of its first TOUCH_MIB, and prints "ready" again. It exits at the end of
// stdin.
//
// With -serve pprof it serves net/http/pprof on 127.0.0.1 (a port of the
// kernel's choosing), as a service would; with -serve plain, an HTTP
// server that answers 404 to everything.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// farHint is where mapAway asks the kernel to put its mappings: far from
// the Go heap's arenas, so that a mapping the size of whole arenas is never
// placed against them, where no layout could tell it from heap; and one page
// past a 64 MiB boundary, as a C allocator's or a file's mapping would start,
// where no arena does.
const farHint = 0x2000_0000_0000 + 4096

// mapAway maps n bytes of private anonymous memory, near farHint when that
// address range is free (the hint is not binding).
func mapAway(n int) ([]byte, error) {
	hint := unsafe.Add(unsafe.Pointer(nil), farHint)
	p, err := unix.MmapPtr(-1, 0, hint, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

func main() {
	serve := flag.String("serve", "", "pprof or plain: listen on 127.0.0.1 and serve it")
	flag.Parse()
	if *serve != "" {
		mux := http.NewServeMux()
		if *serve == "pprof" {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
		}
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "rsschild:", err)
			os.Exit(1)
		}
		go http.Serve(ln, mux)
	}
	var keep [][]byte
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var size, touch int
		if _, err := fmt.Sscanf(sc.Text(), "map %d %d", &size, &touch); err != nil {
			fmt.Fprintln(os.Stderr, "rsschild:", err)
			os.Exit(2)
		}
		b, err := mapAway(size << 20)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rsschild: mmap:", err)
			os.Exit(1)
		}
		for i := 0; i < touch<<20; i += os.Getpagesize() {
			b[i] = 1
		}
		keep = append(keep, b)
		fmt.Println("ready")
	}
	_ = keep
}
