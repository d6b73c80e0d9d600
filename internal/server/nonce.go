package server

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
)

// nonceCSP is the policy of the pages drawn by heapscope's and pprof's
// own renderers (a stored run, a comparison, a flame graph, pprof's UI),
// whose scripts are inline: each response's scripts carry a nonce of
// its own, and no other inline script runs. Style attributes are
// inline in these pages too; they cannot run code.
const nonceCSP = "default-src 'self'; script-src 'self' 'nonce-%s'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// withNonce serves h, and gives the script elements of its HTML answers
// a fresh nonce that the answer's Content-Security-Policy allows: inline
// scripts the page was drawn with run, none injected into it would.
func withNonce(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &htmlBuffer{w: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if !rec.html {
			return // passed through as written
		}
		body := rec.body.Bytes()
		var b [18]byte
		rand.Read(b[:])
		nonce := base64.RawURLEncoding.EncodeToString(b[:])
		body = bytes.ReplaceAll(body, []byte("<script"), []byte(`<script nonce="`+nonce+`"`))
		w.Header().Set("Content-Security-Policy", strings.Replace(nonceCSP, "%s", nonce, 1))
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.status)
		w.Write(body)
	})
}

// htmlBuffer holds an HTML answer until it is complete, to give its
// scripts their nonce; any other answer passes through as it is written.
type htmlBuffer struct {
	w       http.ResponseWriter
	status  int
	decided bool
	html    bool
	body    bytes.Buffer
}

func (b *htmlBuffer) Header() http.Header { return b.w.Header() }

// decide chooses, at the answer's first write, whether to hold it.
func (b *htmlBuffer) decide(status int) {
	if b.decided {
		return
	}
	b.decided, b.status = true, status
	b.html = status == http.StatusOK && strings.HasPrefix(b.w.Header().Get("Content-Type"), "text/html")
	if !b.html {
		b.w.WriteHeader(status)
	}
}

func (b *htmlBuffer) WriteHeader(status int) { b.decide(status) }

func (b *htmlBuffer) Write(p []byte) (int, error) {
	if !b.decided {
		if b.w.Header().Get("Content-Type") == "" {
			b.w.Header().Set("Content-Type", http.DetectContentType(p))
		}
		b.decide(http.StatusOK)
	}
	if !b.html {
		return b.w.Write(p)
	}
	return b.body.Write(p)
}
