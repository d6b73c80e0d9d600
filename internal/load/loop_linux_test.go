package load

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHTTPClient_canLoop checks which runs the closed model's event loops
// take: plain HTTP/1.1 keep-alive to one address, and nothing else.
func TestHTTPClient_canLoop(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want bool
	}{
		{name: "http", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/"}}}, want: true},
		{name: "http, two targets, one address", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/a"}, {URL: "http://127.0.0.1:1/{seq}", Method: "POST", Body: []byte("x")}}}, want: true},
		{name: "two addresses", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/"}, {URL: "http://127.0.0.1:2/"}}}},
		{name: "https", opts: Options{Targets: []Request{{URL: "https://127.0.0.1:1/"}}, Protocol: ProtocolHTTP1}},
		{name: "http2", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/"}}, Protocol: ProtocolHTTP2}},
		{name: "no keep-alive", opts: Options{Targets: []Request{{URL: "http://127.0.0.1:1/"}}, NoKeepAlive: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Connections, tt.opts.MaxRequests = 4, 1
			g, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			c := newHTTPClient(&g.opts, g.targets)
			if got := c.canLoop(g.targets); got != tt.want {
				t.Errorf("canLoop = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRun_loopResponsesInPieces drives the event loops against a server
// that writes each response in pieces, a pause between them: every request
// completes, whatever reads the pieces take and whichever parser reads them.
func TestRun_loopResponsesInPieces(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3*loopReadSize)
	tests := []struct {
		name   string
		pieces []string
		want   uint64 // bytes read per request
	}{
		{name: "header cut", pieces: []string{"HTTP/1.1 200 OK\r\nContent-Le", "ngth: 5\r\n\r\nhello"}},
		{name: "body cut", pieces: []string{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe", "llo"}},
		{name: "body larger than a read buffer", pieces: []string{"HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big[:10], big[10:]}},
		{name: "chunked", pieces: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe", "llo\r\n0\r\n\r\n"}},
		{name: "connection close", pieces: []string{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\n", "hello"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr := servePieces(t, tt.pieces)
			const n = 40
			res, err := Run(t.Context(), Options{Targets: []Request{{URL: "http://" + addr + "/"}}, Connections: 4, MaxRequests: n})
			if err != nil {
				t.Fatal(err)
			}
			size := uint64(len(strings.Join(tt.pieces, "")))
			if res.Completed != n || res.Errors != 0 || res.StatusCodes[200] != n || res.BytesIn != n*size {
				t.Errorf("completed %d, errors %v, statuses %v, bytes in %d; want %d completed with 200, %d bytes in",
					res.Completed, res.ErrorKinds, res.StatusCodes, res.BytesIn, n, n*size)
			}
		})
	}
}

// servePieces serves HTTP/1.1 on 127.0.0.1: it answers each request with
// pieces, written one at a time a millisecond apart, and closes the
// connection after a response that says so.
func servePieces(t *testing.T, pieces []string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	closing := strings.Contains(pieces[0], "Connection: close")
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					req.Body.Close()
					for _, p := range pieces {
						if _, err := io.WriteString(conn, p); err != nil {
							return
						}
						time.Sleep(time.Millisecond)
					}
					if closing {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}
