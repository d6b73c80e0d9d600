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
		rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		body := rec.body.Bytes()
		if strings.HasPrefix(rec.header.Get("Content-Type"), "text/html") {
			var b [18]byte
			rand.Read(b[:])
			nonce := base64.RawURLEncoding.EncodeToString(b[:])
			body = bytes.ReplaceAll(body, []byte("<script"), []byte(`<script nonce="`+nonce+`"`))
			w.Header().Set("Content-Security-Policy", strings.Replace(nonceCSP, "%s", nonce, 1))
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(rec.status)
		w.Write(body)
	})
}

// bufferedResponse holds a response until it is complete.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if !b.wrote {
		b.status, b.wrote = status, true
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.wrote = true
	return b.body.Write(p)
}
