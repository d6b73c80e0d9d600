package load

import (
	"bufio"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestParseQuick checks the responses parseQuick reads itself, and those it
// leaves to fasthttp.
func TestParseQuick(t *testing.T) {
	const (
		ok        = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ok\":true}\n"
		noReason  = "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n"
		closing   = "HTTP/1.1 503 Busy\r\nconnection:  Close \r\ncontent-length: 1\r\n\r\nx"
		keepAlive = "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
	)
	tests := []struct {
		name    string
		in      string
		maxBody int
		res     quickResult
		n       int
		status  int
		closing bool
	}{
		{name: "whole", in: ok, res: quickDone, n: len(ok), status: 200},
		{name: "whole, next one after it", in: ok + "HTTP/1.1 200 OK\r\n", res: quickDone, n: len(ok), status: 200},
		{name: "body not all there", in: ok[:len(ok)-3], res: quickMore},
		{name: "header not all there", in: ok[:20], res: quickOther},
		{name: "no reason", in: noReason, res: quickDone, n: len(noReason), status: 404},
		{name: "connection close", in: closing, res: quickDone, n: len(closing), status: 503, closing: true},
		{name: "connection keep-alive", in: keepAlive, res: quickDone, n: len(keepAlive), status: 200},
		{name: "body larger than allowed", in: "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", maxBody: 10, res: quickOther},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", res: quickOther},
		{name: "no length", in: "HTTP/1.1 200 OK\r\n\r\nbody", res: quickOther},
		{name: "two lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", res: quickOther},
		{name: "signed length", in: "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx", res: quickOther},
		{name: "HTTP/1.0", in: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", res: quickOther},
		{name: "no content", in: "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n", res: quickOther},
		{name: "not modified", in: "HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n", res: quickOther},
		{name: "continue", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", res: quickOther},
		{name: "folded header", in: "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n", res: quickOther},
		{name: "space in name", in: "HTTP/1.1 200 OK\r\nX Y: a\r\nContent-Length: 0\r\n\r\n", res: quickOther},
		{name: "bare LF", in: "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", res: quickOther},
		{name: "other connection token", in: "HTTP/1.1 200 OK\r\nConnection: close, upgrade\r\nContent-Length: 0\r\n\r\n", res: quickOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxBody := tt.maxBody
			if maxBody == 0 {
				maxBody = DefaultMaxBody
			}
			res, n, status, closing := parseQuick([]byte(tt.in), maxBody)
			if res != tt.res || n != tt.n || status != tt.status || closing != tt.closing {
				t.Errorf("parseQuick = %v, %d, %d, %v; want %v, %d, %d, %v", res, n, status, closing, tt.res, tt.n, tt.status, tt.closing)
			}
			checkQuick(t, []byte(tt.in), maxBody)
		})
	}
}

// FuzzParseQuick checks that what parseQuick reads, fasthttp reads the same
// way: a whole response of the same length, status and connection close,
// or one still incomplete.
func FuzzParseQuick(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ok\":true}\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
		"HTTP/1.1 500 x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A:\t v \t\r\nContent-Length: 1\r\n\r\nxHTTP/1.1",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s), uint16(100))
	}
	f.Fuzz(func(t *testing.T, b []byte, maxBody uint16) {
		checkQuick(t, b, int(maxBody))
	})
}

// checkQuick fails t when parseQuick reads b otherwise than fasthttp.
func checkQuick(t *testing.T, b []byte, maxBody int) {
	t.Helper()
	res, n, status, closing := parseQuick(b, maxBody)
	if res == quickOther {
		return
	}
	var rd chunkReader
	rd.reset(b, false)
	br := bufio.NewReaderSize(&rd, readBufferSize)
	var resp fasthttp.Response
	err := resp.ReadLimitBody(br, maxBody)
	switch res {
	case quickMore:
		if err == nil || !rd.short {
			t.Fatalf("parseQuick(%q) needs more, fasthttp: %v (short %v)", b, err, rd.short)
		}
	case quickDone:
		if err != nil {
			t.Fatalf("parseQuick(%q) read a response, fasthttp failed: %v", b, err)
		}
		used := len(b) - len(rd.b) - br.Buffered()
		if used != n || resp.StatusCode() != status || resp.ConnectionClose() != closing {
			t.Fatalf("parseQuick(%q) = %d bytes, status %d, close %v; fasthttp %d, %d, %v",
				b, n, status, closing, used, resp.StatusCode(), resp.ConnectionClose())
		}
		if body := resp.Body(); string(b[n-len(body):n]) != string(body) {
			t.Fatalf("parseQuick(%q): body differs from fasthttp's %q", b, resp.Body())
		}
	}
}
