package target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
)

// LoopbackPort returns the TCP port of the service at u when its host is a
// loopback address, "localhost" or the unspecified address (which reaches
// this host too), the case where the process can be found on this machine
// and read through /proc. It reports false otherwise.
func LoopbackPort(u *url.URL) (int, bool) {
	host, portStr := u.Hostname(), u.Port()
	if portStr == "" {
		portStr = "80"
		if u.Scheme == "https" {
			portStr = "443"
		}
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return 0, false
	}
	if strings.EqualFold(host, "localhost") {
		return int(port), true
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || !(addr.IsLoopback() || addr.IsUnspecified()) {
		return 0, false
	}
	return int(port), true
}

// probeTimeout bounds the request to each port Local asks: a port that
// speaks another protocol, or none, must not hold the answer up.
const probeTimeout = 3 * time.Second

// maxProbes caps the ports Local asks at once.
const maxProbes = 8

// Local finds the pprof of a process on this machine among the TCP ports
// it listens on (sysmem.Proc.ListeningPorts lists them), as LoopbackPort
// finds the port of a target given by URL: each port is asked on
// 127.0.0.1, the address a client of localhost reaches.
type Local struct {
	// PprofPath and Header are what to ask each port with, as in
	// Options.
	PprofPath string
	Header    http.Header
	// Transport replaces the transport, which otherwise uses no proxy and
	// keeps no connection: each port is asked once (tests).
	Transport http.RoundTripper
}

// FindMemStats asks every port for heap?debug=1 under the pprof path, a
// few at a time and each within a few seconds, and returns the MemStats
// of the lowest port that served them and the URL of its pprof. When none
// did, the error is a *NoPprofError.
func (l Local) FindMemStats(ctx context.Context, ports []int) (*gcstats.MemStats, string, error) {
	rt := l.Transport
	if rt == nil {
		tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true}
		defer tr.CloseIdleConnections()
		rt = tr
	}
	type result struct {
		client   *Client
		ms       *gcstats.MemStats
		notFound bool
	}
	results := make([]result, len(ports))
	sem := make(chan struct{}, maxProbes)
	var wg sync.WaitGroup
	for i, port := range ports {
		c, err := New(Options{
			BaseURL: "http://127.0.0.1:" + strconv.Itoa(port), PprofPath: l.PprofPath,
			Header: l.Header, Timeout: probeTimeout, MaxBody: 16 << 20, Transport: rt,
		})
		if err != nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ms, err := c.MemStats(ctx, false)
			results[i] = result{client: c, notFound: errors.Is(err, ErrNotFound)}
			if err == nil {
				results[i].ms = &ms
			}
		})
	}
	wg.Wait()
	// The lowest port first, whatever order the ports came in.
	best, notFound := -1, false
	for i, r := range results {
		if r.ms != nil && (best < 0 || ports[i] < ports[best]) {
			best = i
		}
		notFound = notFound || r.notFound
	}
	if best >= 0 {
		return results[best].ms, results[best].client.PprofURL(), nil
	}
	pprofPath := "/"
	if p := strings.Trim(l.PprofPath, "/"); p != "" {
		pprofPath = "/" + p + "/"
	} else if l.PprofPath == "" {
		pprofPath = DefaultPprofPath
	}
	return nil, "", &NoPprofError{Ports: append([]int(nil), ports...), PprofPath: pprofPath, NotFound: notFound}
}

// NoPprofError reports that none of a process's listening ports served
// the runtime's MemStats.
type NoPprofError struct {
	// Ports are the ports asked.
	Ports []int
	// PprofPath is the path asked under, such as /debug/pprof/.
	PprofPath string
	// NotFound says one of the ports answered 404: an HTTP server, with
	// pprof elsewhere or nowhere.
	NotFound bool
}

func (e *NoPprofError) Error() string {
	list := make([]string, len(e.Ports))
	for i, p := range e.Ports {
		list[i] = strconv.Itoa(p)
	}
	msg := fmt.Sprintf("none of the process's listening ports (%s) serves http://127.0.0.1:PORT%sheap?debug=1", strings.Join(list, ", "), e.PprofPath)
	if e.NotFound {
		msg += " (one answered 404: is pprof under another --pprof-path?)"
	}
	return msg
}
