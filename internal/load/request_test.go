package load

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Request
		wantErr string
	}{
		{name: "url alone is GET", in: "http://127.0.0.1:8080/items", want: Request{Method: "GET", URL: "http://127.0.0.1:8080/items"}},
		{name: "method and url", in: "POST https://example.com/x?y=1", want: Request{Method: "POST", URL: "https://example.com/x?y=1"}},
		{name: "surrounding and inner blanks", in: "  PUT \t http://h/a  ", want: Request{Method: "PUT", URL: "http://h/a"}},
		{name: "custom method token", in: "PURGE http://h/", want: Request{Method: "PURGE", URL: "http://h/"}},
		{name: "placeholders", in: "GET http://h/items/{rand:100}?n={seq}", want: Request{Method: "GET", URL: "http://h/items/{rand:100}?n={seq}"}},
		{name: "pick placeholder", in: "GET http://h/{pick:ids.txt}", want: Request{Method: "GET", URL: "http://h/{pick:ids.txt}"}},
		{name: "placeholder in the query only", in: "http://h?id={seq}", want: Request{Method: "GET", URL: "http://h?id={seq}"}},
		{name: "uppercase scheme", in: "HTTP://h/", want: Request{Method: "GET", URL: "HTTP://h/"}},
		{name: "literal braces", in: `http://h/q?j={"a":1}`, want: Request{Method: "GET", URL: `http://h/q?j={"a":1}`}},
		{name: "ipv6 host", in: "http://[::1]:6060/", want: Request{Method: "GET", URL: "http://[::1]:6060/"}},

		{name: "empty", in: "", wantErr: `parse request "": empty`},
		{name: "blank", in: "   ", wantErr: `empty, want "METHOD URL" or "URL"`},
		{name: "method without url", in: "GET", wantErr: `parse request "GET": missing URL after method GET`},
		{name: "digits alone", in: "8080", wantErr: `URL "8080": not absolute`},
		{name: "too many fields", in: "GET http://h/ extra", wantErr: `3 fields, want "METHOD URL" or "URL"`},
		{name: "bad method character", in: "GE(T http://h/", wantErr: `method "GE(T": character '(' is not allowed`},
		{name: "bad method non-ascii", in: "GÉT http://h/", wantErr: `method "GÉT": character`},
		{name: "relative url", in: "/items", wantErr: `URL "/items": not absolute`},
		{name: "host without scheme", in: "localhost:8080/items", wantErr: `URL "localhost:8080/items": not absolute`},
		{name: "ftp scheme", in: "ftp://h/file", wantErr: `URL "ftp://h/file": scheme "ftp" is not http or https`},
		{name: "missing host", in: "GET http:///path", wantErr: `URL "http:///path": missing host`},
		{name: "port without host", in: "http://:8080/", wantErr: `URL "http://:8080/": missing host`},
		{name: "empty ipv6 host", in: "http://[]:80/", wantErr: `URL "http://[]:80/": invalid host`},
		{name: "bad port", in: "http://h:port/", wantErr: `URL "http://h:port/": invalid port`},
		{name: "control character", in: "http://h/\x7f", wantErr: `invalid control character`},
		{name: "unknown placeholder", in: "GET http://h/{id}", wantErr: `URL "http://h/{id}": unknown placeholder {id} at offset 9`},
		{name: "placeholder in port", in: "http://h:80{rand:10}/", wantErr: `URL "http://h:80{rand:10}/": placeholder at offset 11 is before the path`},
		{name: "placeholder in host", in: "http://h{seq}.test/", wantErr: "placeholder at offset 8 is before the path"},
		{name: "placeholder in scheme", in: "{seq}://h/", wantErr: "placeholder at offset 0 is before the path"},
		{name: "pick without file", in: "http://h/{pick:}", wantErr: "want {pick:FILE}"},
		{name: "user information", in: "http://u:p@h/", wantErr: "user information in the URL is not supported"},
		{name: "rand without bound", in: "http://h/{rand}", wantErr: `placeholder {rand} at offset 9: want {rand:N}`},
		{name: "rand zero", in: "http://h/{rand:0}", wantErr: `placeholder {rand:0} at offset 9: want {rand:N} with N an integer ≥ 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRequest(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRequest(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("ParseRequest(%q) error has several lines: %q", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRequest(%q): %v", tt.in, err)
			}
			if got.Method != tt.want.Method || got.URL != tt.want.URL || got.Header != nil || got.Body != nil {
				t.Errorf("ParseRequest(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestRequest_Validate(t *testing.T) {
	tests := []struct {
		name    string
		req     Request
		wantErr string
	}{
		{name: "empty method means GET", req: Request{URL: "http://h/"}},
		{name: "with header and body", req: Request{Method: "POST", URL: "http://h/", Header: http.Header{"X-A": {"1"}}, Body: []byte("x")}},
		{name: "zero request", req: Request{}, wantErr: "URL is empty"},
		{name: "method with space", req: Request{Method: "G T", URL: "http://h/"}, wantErr: `method "G T": character ' ' is not allowed`},
		{name: "bad url", req: Request{URL: "h/"}, wantErr: `URL "h/": not absolute`},
		{name: "header with line break", req: Request{URL: "http://h/", Header: http.Header{"X-A": {"1\r\nX-B: 2"}}}, wantErr: `header "X-A": value`},
		{name: "header with bad name", req: Request{URL: "http://h/", Header: http.Header{"X A": {"1"}}}, wantErr: `header "X A": character ' '`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1:8080/",
		"POST https://h/x?y={seq}",
		"GET http://h/{rand:10}/{seq}",
		`http://h/{"a":{seq}}`,
		"GET",
		"ftp://h/",
		"http://h/{rand:0}",
		"http://[::1]:80/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRequest(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseRequest(%q) error has several lines: %q", s, err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("ParseRequest(%q) = %+v, which does not validate: %v", s, r, err)
		}
		if r.Method == "" || r.URL == "" {
			t.Fatalf("ParseRequest(%q) = %+v, want method and URL", s, r)
		}
	})
}

func TestParseRequestOn(t *testing.T) {
	tests := []struct {
		in, base    string
		method, url string
		wantErr     string
	}{
		{in: "GET /process?id={seq}", base: "http://127.0.0.1:6060", method: "GET", url: "http://127.0.0.1:6060/process?id={seq}"},
		{in: "/items", base: "https://svc/api", method: "GET", url: "https://svc/api/items"},
		{in: "POST http://other:8080/x", base: "http://127.0.0.1:6060", method: "POST", url: "http://other:8080/x"},
		{in: "GET", base: "http://127.0.0.1:6060", wantErr: "missing URL after method GET"},
		{in: "GET process", base: "http://127.0.0.1:6060", wantErr: `parse request "GET process"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseRequestOn(tt.in, tt.base)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || r.Method != tt.method || r.URL != tt.url {
				t.Errorf("ParseRequestOn = %s %s, %v; want %s %s", r.Method, r.URL, err, tt.method, tt.url)
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080/process?id={seq}": "http://127.0.0.1:8080",
		"https://svc.internal":                   "https://svc.internal",
		"http://h:1?q=1":                         "http://h:1",
		"/path/only":                             "",
	} {
		if got := Origin(in); got != want {
			t.Errorf("Origin(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProgress_String(t *testing.T) {
	tests := []struct {
		p    Progress
		want string
	}{
		{Progress{Elapsed: 2345 * time.Millisecond, Duration: 10 * time.Second, Requests: 1200, Rate: 499.6, Errors: 3, InFlight: 7},
			"load 2.3s/10s  1200 requests  500/s  3 errors  7 in flight"},
		{Progress{Elapsed: time.Second, MaxRequests: 5000, Requests: 10, Lag: 25*time.Millisecond + 400*time.Microsecond},
			"load 1s  10/5000 requests  0/s  0 errors  0 in flight  behind schedule by up to 25ms"},
		{Progress{Elapsed: time.Second, Lag: BehindLag - time.Millisecond}, "load 1s  0 requests  0/s  0 errors  0 in flight"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
