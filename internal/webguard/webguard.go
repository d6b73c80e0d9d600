// Package webguard hardens the HTTP servers heapscope runs on a user's
// machine (view, and the server to come) against the web pages that
// user's browser visits at the same time.
//
// A server on 127.0.0.1 is not private: any page the browser opens can
// send it requests, and with DNS rebinding read the answers. Handler puts
// three checks in front of a server's routes, in this order:
//
//  1. Host: the request must name the address the connection reached
//     (127.0.0.1:PORT, or localhost:PORT), or one of Options.Hosts;
//     anything else gets 421 Misdirected Request. A rebound name such as
//     evil.example.com never matches.
//  2. Cross-origin: a request whose Origin header names another origin
//     than the server's own (the Host it was sent to, or one of
//     Options.Hosts) gets 403 whatever its method: browsers send Origin
//     with a page's scripted requests and form posts, never with a
//     navigation, so no page of another site reads or drives ours.
//     Requests that change state (every method but GET, HEAD and
//     OPTIONS) from another origin get 403 through net/http's
//     CrossOriginProtection, which also reads Sec-Fetch-Site; so do
//     requests for pages that a page of another site embeds or fetches
//     rather than navigates to, as every route of ours builds something
//     (pprof's UI, flame graphs).
//  3. Headers on every response: nosniff, a Content-Security-Policy that
//     allows only the server's own and inline resources and forbids
//     framing, and no referrer.
//
// Files serves a directory's regular files and nothing else: no listings,
// no symlink out of the directory (it opens through os.Root).
package webguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// ContentSecurityPolicy is the policy of every response: the server's own
// and inline scripts and styles (the report, flame graphs and pprof's UI
// are single pages with inline code), images from the server or data:
// URLs, no plugins, no framing, and forms that post only back.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self' 'unsafe-inline'; " +
	"style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Options tune a Handler.
type Options struct {
	// Hosts are Host header values accepted besides the address the
	// connection reached and localhost with its port, such as the name
	// of a reverse proxy ("profiles.example.com:443").
	Hosts []string
	// AnyHost drops the Host check: for a server that listens beyond
	// loopback and requires credentials of every request, where a
	// rebound name gains a page nothing without them.
	AnyHost bool
	// ContentSecurityPolicy replaces the package's ContentSecurityPolicy,
	// for a server whose pages need no inline code.
	ContentSecurityPolicy string
}

// Handler returns h behind the checks of the package doc.
func Handler(h http.Handler, opts Options) http.Handler {
	hosts := make(map[string]bool, len(opts.Hosts))
	for _, host := range opts.Hosts {
		hosts[strings.ToLower(host)] = true
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "cross-origin request refused: "+r.Method+" "+r.URL.Path+" is served to pages of this server only", http.StatusForbidden)
	}))
	inner := cop.Handler(h)
	csp := ContentSecurityPolicy
	if opts.ContentSecurityPolicy != "" {
		csp = opts.ContentSecurityPolicy
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := w.Header()
		header.Set("X-Content-Type-Options", "nosniff")
		header.Set("Content-Security-Policy", csp)
		header.Set("X-Frame-Options", "DENY")
		header.Set("Referrer-Policy", "no-referrer")
		if !opts.AnyHost && !hostAllowed(r, hosts) {
			http.Error(w, fmt.Sprintf("host %q refused: this server answers to the address it listens on", r.Host), http.StatusMisdirectedRequest)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !ownOrigin(origin, r, hosts) {
			http.Error(w, fmt.Sprintf("cross-origin request refused: origin %q is not this server's", origin), http.StatusForbidden)
			return
		}
		if embeddedCrossSite(r) {
			http.Error(w, "cross-site request refused: open "+r.URL.Path+" from this server's own pages or the address bar", http.StatusForbidden)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether r's Host names the server: the local
// address of its connection, localhost at the same port, or one of hosts.
func hostAllowed(r *http.Request, hosts map[string]bool) bool {
	host := strings.ToLower(r.Host)
	if hosts[host] {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	addr := local.String()
	if host == addr {
		return true
	}
	_, port, err := net.SplitHostPort(addr)
	return err == nil && host == "localhost:"+port
}

// ownOrigin reports whether origin, an Origin header's value, names the
// server: an http or https origin whose host and port are r's Host, or
// one of hosts (a reverse proxy's name). "null", sent by sandboxed pages
// and local files, is no one's.
func ownOrigin(origin string, r *http.Request, hosts map[string]bool) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Host)
	return host == strings.ToLower(r.Host) || hosts[host]
}

// embeddedCrossSite reports whether a browser sent r for a page of another
// site (or another port of this machine, which browsers count as the same
// site) other than as a top-level navigation: a script's fetch, an image,
// a frame. A user's click on a link elsewhere still reaches the page.
func embeddedCrossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return r.Header.Get("Sec-Fetch-Mode") != "navigate" || r.Header.Get("Sec-Fetch-Dest") != "document"
	}
	return false
}

// Files serves the regular files under dir, opened through os.Root, so
// that no symlink leads out of dir; a directory, a missing file or a path
// that leaves dir is 404. The request path, without its leading slash, is
// the file's path in dir: mount Files under a prefix with
// http.StripPrefix.
func Files(dir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f, st, err := OpenFile(dir, strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		defer f.Close()
		http.ServeContent(w, r, st.Name(), st.ModTime(), f)
	})
}

// ErrNotRegular is returned by OpenFile for a path that names a
// directory, a device or anything else but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenFile opens name, a slash-separated path relative to dir, when it is
// a regular file inside dir: symlinks are followed only while they stay
// in dir. The caller closes the file.
func OpenFile(dir, name string) (*os.File, fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	if name == "" {
		name = "."
	}
	// O_NONBLOCK: opening a FIFO planted in the directory must not wait
	// for a writer; it is refused below like any file that is not regular.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("open %s in %s: %w", name, dir, ErrNotRegular)
	}
	return f, st, nil
}

// ReadFile reads name, a slash-separated path relative to dir, under the
// rules of OpenFile.
func ReadFile(dir, name string) ([]byte, error) {
	f, _, err := OpenFile(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", name, dir, err)
	}
	return data, nil
}

// shutdownGrace is how long Serve gives requests in flight once ctx is
// done.
const shutdownGrace = 5 * time.Second

// Serve listens on addr and serves h until ctx is done, then shuts down,
// giving requests in flight five seconds. listening, when not nil, gets
// the server's URL ("http://HOST:PORT/") once it listens. The caller
// decides which addresses may be served (view: loopback only; the
// history server: loopback, or any with credentials).
func Serve(ctx context.Context, addr string, h http.Handler, listening func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	url := "http://" + ln.Addr().String() + "/"
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if listening != nil {
		listening(url)
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", url, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err = hs.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("stop serving %s: %w", url, err)
	}
	return nil
}
