package view

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"

	"github.com/heapscope/heapscope/internal/webguard"
)

// LoopbackAddr checks an address to listen on, HOST:PORT: the UI serves
// files of this machine and pprof's UI, so it listens on 127.0.0.1 and
// nowhere else. localhost becomes 127.0.0.1; port 0 picks a free one.
func LoopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q: want 127.0.0.1:PORT", addr)
	}
	if host != "127.0.0.1" && host != "localhost" {
		return "", fmt.Errorf("%q: view serves on 127.0.0.1 only; give 127.0.0.1:PORT", addr)
	}
	return net.JoinHostPort("127.0.0.1", port), nil
}

// Serve listens on addr, which LoopbackAddr must accept, and serves h
// until ctx is done (webguard.Serve). listening, when not nil, gets the
// server's URL ("http://127.0.0.1:PORT/") once it listens.
func Serve(ctx context.Context, addr string, h http.Handler, listening func(url string)) error {
	addr, err := LoopbackAddr(addr)
	if err != nil {
		return err
	}
	return webguard.Serve(ctx, addr, h, listening)
}

// OpenBrowser opens url with the desktop's opener (xdg-open, or open on
// macOS), without waiting for the browser.
func OpenBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it; the opener returns at once
	return nil
}
