package target

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/option"
)

func TestParseBaseURL(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{name: "plain", raw: "http://127.0.0.1:6060", want: "http://127.0.0.1:6060"},
		{name: "https", raw: "https://svc.example:8443", want: "https://svc.example:8443"},
		{name: "no scheme gets http", raw: "127.0.0.1:6060", want: "http://127.0.0.1:6060"},
		{name: "no scheme with path", raw: "localhost:6060/svc", want: "http://localhost:6060/svc"},
		{name: "upper-case scheme", raw: "HTTP://127.0.0.1:6060", want: "http://127.0.0.1:6060"},
		{name: "trailing slash stripped", raw: "http://127.0.0.1:6060/", want: "http://127.0.0.1:6060"},
		{name: "trailing slashes stripped", raw: "http://127.0.0.1:6060/svc//", want: "http://127.0.0.1:6060/svc"},
		{name: "query and fragment stripped", raw: "http://127.0.0.1:6060/svc/?debug=1#top", want: "http://127.0.0.1:6060/svc"},
		{name: "ipv6", raw: "http://[::1]:8080", want: "http://[::1]:8080"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := ParseBaseURL(tc.raw)
			if err != nil {
				t.Fatalf("ParseBaseURL(%q): %v", tc.raw, err)
			}
			if got := u.String(); got != tc.want {
				t.Errorf("ParseBaseURL(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestParseBaseURL_errors(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want []string
	}{
		{name: "empty", raw: "", want: []string{"empty", "http://127.0.0.1:6060"}},
		{name: "ftp rejected", raw: "ftp://127.0.0.1/", want: []string{"scheme must be http or https"}},
		{name: "file rejected", raw: "file:///tmp/heap", want: []string{"scheme must be http or https"}},
		{name: "no host", raw: "http://", want: []string{"has no host"}},
		{name: "path without host", raw: "http:///debug/pprof", want: []string{"has no host"}},
		{name: "bad port", raw: "http://127.0.0.1:port", want: []string{"parse target URL"}},
		{name: "space in host", raw: "http://svc host:80", want: []string{"parse target URL"}},
		{name: "missing scheme before separator", raw: "://127.0.0.1", want: []string{"parse target URL"}},
		{name: "newline stays on one line", raw: "http://127.0.0.1\n:6060", want: []string{"parse target URL"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := ParseBaseURL(tc.raw)
			if err == nil {
				t.Fatalf("ParseBaseURL(%q) = %v, want an error", tc.raw, u)
			}
			checkErr(t, err, tc.want...)
		})
	}
}

func TestNew_errors(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New with no base URL: got no error")
	} else {
		checkErr(t, err, "empty")
	}
	if _, err := New(Options{BaseURL: "gopher://127.0.0.1"}); err == nil {
		t.Fatal("New with a gopher URL: got no error")
	} else {
		checkErr(t, err, "scheme")
	}
}

func TestOptions_Validate(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		field string // "" for valid options
		want  string
	}{
		{"defaults", Options{}, "", ""},
		{"set", Options{Timeout: time.Second, MaxBody: 1 << 20}, "", ""},
		{"negative timeout", Options{Timeout: -time.Second}, "Timeout", "Timeout -1s: give a positive duration"},
		{"negative max body", Options{MaxBody: -1}, "MaxBody", "MaxBody -1: give a positive size in bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			var oe *option.Error
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.field != "" && (!errors.As(err, &oe) || oe.Field != tt.field || err.Error() != tt.want):
				t.Errorf("Validate() = %v, want the %s error %q", err, tt.field, tt.want)
			}
			if _, err := New(Options{BaseURL: "http://127.0.0.1:1", Timeout: tt.opts.Timeout, MaxBody: tt.opts.MaxBody}); (err != nil) != (tt.field != "") {
				t.Errorf("New: %v, want it to validate as Validate does", err)
			}
		})
	}
}

func TestClient_ProfileURL(t *testing.T) {
	tests := []struct {
		name      string
		base      string
		pprofPath string
		profile   string
		query     url.Values
		want      string
	}{
		{name: "default path", base: "http://127.0.0.1:6060", profile: "heap", want: "http://127.0.0.1:6060/debug/pprof/heap"},
		{name: "query", base: "http://127.0.0.1:6060", profile: "heap", query: url.Values{"gc": {"1"}}, want: "http://127.0.0.1:6060/debug/pprof/heap?gc=1"},
		{name: "query keys sorted", base: "http://127.0.0.1:6060", profile: "heap", query: url.Values{"gc": {"1"}, "debug": {"1"}}, want: "http://127.0.0.1:6060/debug/pprof/heap?debug=1&gc=1"},
		{name: "seconds", base: "http://127.0.0.1:6060", profile: "profile", query: url.Values{"seconds": {"5"}}, want: "http://127.0.0.1:6060/debug/pprof/profile?seconds=5"},
		{name: "custom path with both slashes", base: "http://127.0.0.1:6060", pprofPath: "/internal/pprof/", profile: "heap", want: "http://127.0.0.1:6060/internal/pprof/heap"},
		{name: "custom path without slashes", base: "http://127.0.0.1:6060", pprofPath: "internal/pprof", profile: "heap", want: "http://127.0.0.1:6060/internal/pprof/heap"},
		{name: "custom path with leading slash only", base: "http://127.0.0.1:6060", pprofPath: "/internal/pprof", profile: "heap", want: "http://127.0.0.1:6060/internal/pprof/heap"},
		{name: "custom path with trailing slash only", base: "http://127.0.0.1:6060", pprofPath: "internal/pprof/", profile: "heap", want: "http://127.0.0.1:6060/internal/pprof/heap"},
		{name: "root path", base: "http://127.0.0.1:6060", pprofPath: "/", profile: "heap", want: "http://127.0.0.1:6060/heap"},
		{name: "base with path prefix", base: "http://127.0.0.1:6060/svc", profile: "allocs", want: "http://127.0.0.1:6060/svc/debug/pprof/allocs"},
		{name: "base with path prefix and slash", base: "https://gw.example/svc/", pprofPath: "pprof", profile: "goroutine", want: "https://gw.example/svc/pprof/goroutine"},
		{name: "base with query", base: "http://127.0.0.1:6060/?x=1", profile: "heap", want: "http://127.0.0.1:6060/debug/pprof/heap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, Options{BaseURL: tc.base, PprofPath: tc.pprofPath})
			if got := c.ProfileURL(tc.profile, tc.query); got != tc.want {
				t.Errorf("ProfileURL(%q, %v) = %q, want %q", tc.profile, tc.query, got, tc.want)
			}
		})
	}
}

func TestClient_BaseURL(t *testing.T) {
	c := newClient(t, Options{BaseURL: "127.0.0.1:6060/svc/"})
	if got, want := c.Host(), "127.0.0.1:6060"; got != want {
		t.Errorf("Host() = %q, want %q", got, want)
	}
	u := c.BaseURL()
	if got, want := u.String(), "http://127.0.0.1:6060/svc"; got != want {
		t.Errorf("BaseURL() = %q, want %q", got, want)
	}
	u.Path = "/elsewhere"
	if got, want := c.ProfileURL("heap", nil), "http://127.0.0.1:6060/svc/debug/pprof/heap"; got != want {
		t.Errorf("after changing BaseURL()'s result, ProfileURL = %q, want %q", got, want)
	}
}

// requireHeader answers 401 unless every header in want is there as given.
func requireHeader(want http.Header, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range want {
			if got := r.Header.Values(k); !slices.Equal(got, vs) {
				http.Error(w, "unauthorized: bad or missing "+k, http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// requireHost answers 400 unless the request's Host is want, and 400 also
// when the client asked for a compressed body (profiles are gzipped already).
func requireHost(want string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != want {
			http.Error(w, "unexpected host "+r.Host, http.StatusBadRequest)
			return
		}
		if ae := r.Header.Get("Accept-Encoding"); ae != "" {
			http.Error(w, "unexpected Accept-Encoding "+ae, http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// fixedBody answers n bytes, announcing the length in Content-Length when
// sized is true and otherwise streaming it in flushed chunks.
func fixedBody(n int, sized bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sized {
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.Write(bytes.Repeat([]byte{'x'}, n))
			return
		}
		chunk := bytes.Repeat([]byte{'x'}, 256)
		for n > 0 {
			m := min(n, len(chunk))
			if _, err := w.Write(chunk[:m]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			n -= m
		}
	})
}

// failing answers like net/http/pprof does when it cannot serve a profile:
// status code, X-Go-Pprof and a text body.
func failing(code int, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Go-Pprof", "1")
		http.Error(w, body, code)
	})
}

// wantSampleTypes returns a check that body is a pprof profile with at least
// the named sample types.
func wantSampleTypes(types ...string) func(*testing.T, []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		p, err := profile.ParseData(body)
		if err != nil {
			t.Fatalf("parse profile of %d bytes: %v", len(body), err)
		}
		var got []string
		for _, st := range p.SampleType {
			got = append(got, st.Type)
		}
		for _, w := range types {
			if !slices.Contains(got, w) {
				t.Errorf("sample types %v lack %q", got, w)
			}
		}
	}
}

func wantLen(n int) func(*testing.T, []byte) {
	return func(t *testing.T, body []byte) {
		t.Helper()
		if len(body) != n {
			t.Errorf("got %d bytes, want %d", len(body), n)
		}
	}
}

func TestClient_Profile(t *testing.T) {
	auth := http.Header{"Authorization": {"Bearer s3cret"}, "X-Tenant": {"a", "b"}}
	heapTypes := wantSampleTypes("alloc_objects", "alloc_space", "inuse_objects", "inuse_space")
	tests := []struct {
		name    string
		handler http.Handler
		path    string // appended to the server's URL to make the base URL
		opts    Options
		profile string
		query   url.Values
		check   func(*testing.T, []byte)
		// An error is expected when any of these is set.
		wantIs    error
		wantCode  int
		wantLimit int64
		wantMsg   []string
	}{
		{
			name:    "heap profile",
			handler: pprofMux(),
			profile: "heap",
			check:   heapTypes,
		},
		{
			name:    "heap profile after a GC",
			handler: pprofMux(),
			profile: "heap",
			query:   url.Values{"gc": {"1"}},
			check:   heapTypes,
		},
		{
			name:    "goroutine profile",
			handler: pprofMux(),
			profile: "goroutine",
			check:   wantSampleTypes("goroutine"),
		},
		{
			name:    "custom pprof path",
			handler: http.StripPrefix("/internal", pprofMux()),
			opts:    Options{PprofPath: "internal/debug/pprof"},
			profile: "heap",
			check:   heapTypes,
		},
		{
			name:    "base URL with path prefix",
			handler: http.StripPrefix("/svc", pprofMux()),
			path:    "/svc/",
			profile: "allocs",
			check:   heapTypes,
		},
		{
			name:    "headers sent",
			handler: requireHeader(auth, pprofMux()),
			opts:    Options{Header: auth},
			profile: "heap",
			check:   heapTypes,
		},
		{
			name:     "missing credentials suggest -H",
			handler:  requireHeader(auth, pprofMux()),
			profile:  "heap",
			wantCode: http.StatusUnauthorized,
			wantMsg:  []string{"fetch heap profile", "401 Unauthorized", "-H", "unauthorized: bad or missing"},
		},
		{
			name:     "forbidden suggests -H",
			handler:  failing(http.StatusForbidden, "forbidden"),
			profile:  "heap",
			wantCode: http.StatusForbidden,
			wantMsg:  []string{"403 Forbidden", "-H"},
		},
		{
			name:    "host header override",
			handler: requireHost("svc.internal", pprofMux()),
			opts:    Options{Header: http.Header{"Host": {"svc.internal"}}},
			profile: "heap",
			check:   heapTypes,
		},
		{
			name:     "unknown profile",
			handler:  pprofMux(),
			profile:  "nosuch",
			wantIs:   ErrNotFound,
			wantCode: http.StatusNotFound,
			wantMsg:  []string{"fetch nosuch profile", "/debug/pprof/nosuch", "404 Not Found", "--pprof-path", "Unknown profile"},
		},
		{
			name:     "wrong pprof path",
			handler:  pprofMux(),
			opts:     Options{PprofPath: "/pprof/"},
			profile:  "heap",
			wantIs:   ErrNotFound,
			wantCode: http.StatusNotFound,
			wantMsg:  []string{"/pprof/heap", "--pprof-path"},
		},
		{
			name:     "server error shows the target's text",
			handler:  failing(http.StatusInternalServerError, "Could not enable block profiling:\n\n  rate is zero"),
			profile:  "block",
			wantCode: http.StatusInternalServerError,
			wantMsg:  []string{"500 Internal Server Error", "Could not enable block profiling: rate is zero"},
		},
		{
			name:     "long error body is cut",
			handler:  failing(http.StatusBadGateway, strings.Repeat("upstream down ", 100)),
			profile:  "heap",
			wantCode: http.StatusBadGateway,
			wantMsg:  []string{"502 Bad Gateway", "upstream down", "…"},
		},
		{
			name:      "body over the limit with Content-Length",
			handler:   fixedBody(4096, true),
			opts:      Options{MaxBody: 1024},
			profile:   "heap",
			wantLimit: 1024,
			wantMsg:   []string{"larger than the limit of 1024 bytes"},
		},
		{
			name:      "body over the limit without Content-Length",
			handler:   fixedBody(4096, false),
			opts:      Options{MaxBody: 1024},
			profile:   "heap",
			wantLimit: 1024,
			wantMsg:   []string{"larger than the limit of 1024 bytes"},
		},
		{
			name:      "body one byte over the limit",
			handler:   fixedBody(1025, false),
			opts:      Options{MaxBody: 1024},
			profile:   "heap",
			wantLimit: 1024,
		},
		{
			name:    "body at the limit without Content-Length",
			handler: fixedBody(1024, false),
			opts:    Options{MaxBody: 1024},
			profile: "heap",
			check:   wantLen(1024),
		},
		{
			name:    "body at the limit with Content-Length",
			handler: fixedBody(1024, true),
			opts:    Options{MaxBody: 1024},
			profile: "heap",
			check:   wantLen(1024),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			opts := tc.opts
			opts.BaseURL = srv.URL + tc.path
			opts.Timeout = 10 * time.Second
			c := newClient(t, opts)
			body, err := c.Profile(t.Context(), tc.profile, tc.query)
			if tc.wantIs == nil && tc.wantCode == 0 && tc.wantLimit == 0 && tc.wantMsg == nil {
				if err != nil {
					t.Fatalf("Profile(%q): %v", tc.profile, err)
				}
				tc.check(t, body)
				return
			}
			checkErr(t, err, tc.wantMsg...)
			if body != nil {
				t.Errorf("got %d bytes with the error, want none", len(body))
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
			if tc.wantIs == nil && errors.Is(err, ErrNotFound) {
				t.Errorf("errors.Is(%v, ErrNotFound) = true, want false", err)
			}
			var se *StatusError
			if tc.wantCode != 0 {
				if !errors.As(err, &se) {
					t.Fatalf("error %v is not a *StatusError", err)
				}
				if se.Code != tc.wantCode {
					t.Errorf("StatusError.Code = %d, want %d", se.Code, tc.wantCode)
				}
				if want := c.ProfileURL(tc.profile, tc.query); se.URL != want {
					t.Errorf("StatusError.URL = %q, want %q", se.URL, want)
				}
			}
			var tl *BodyTooLargeError
			if tc.wantLimit != 0 {
				if !errors.As(err, &tl) {
					t.Fatalf("error %v is not a *BodyTooLargeError", err)
				}
				if tl.Limit != tc.wantLimit {
					t.Errorf("BodyTooLargeError.Limit = %d, want %d", tl.Limit, tc.wantLimit)
				}
			}
		})
	}
}

func TestParseHeaders(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    http.Header
		wantErr string
	}{
		{name: "none", want: http.Header{}},
		{name: "trimmed and repeated", in: []string{"Authorization:  Bearer x ", "X-A: 1", "x-a:2"},
			want: http.Header{"Authorization": {"Bearer x"}, "X-A": {"1", "2"}}},
		{name: "empty value", in: []string{"X-Empty:"}, want: http.Header{"X-Empty": {""}}},
		{name: "no colon", in: []string{"Authorization Bearer x"}, wantErr: `header "Authorization Bearer x": want 'Name: value'`},
		{name: "space in name", in: []string{"X A: 1"}, wantErr: "want 'Name: value'"},
		{name: "no name", in: []string{": 1"}, wantErr: "want 'Name: value'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseHeaders(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(h, tt.want) {
				t.Errorf("ParseHeaders = %v, %v; want %v", h, err, tt.want)
			}
		})
	}
}
