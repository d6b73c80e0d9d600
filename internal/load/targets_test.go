package load

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// bodyFiles is a file reader over a few fixed bodies.
func bodyFiles(name string) ([]byte, error) {
	switch name {
	case "item.json":
		return []byte(`{"id":1}`), nil
	case "dir/empty":
		return []byte{}, nil
	}
	return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
}

func TestParseTargets(t *testing.T) {
	defaults := Request{URL: "http://127.0.0.1:8080/", Header: http.Header{"Authorization": {"Bearer t"}, "X-Global": {"g"}}, Body: []byte("default")}
	tests := []struct {
		name     string
		in       string
		defaults Request
		want     []Request
		wantErr  string
	}{
		{
			name: "vegeta example",
			in: `GET http://goku:9090/path/to/dragon?item=balls
X-Account-ID: 8675309

DELETE http://goku:9090/path/to/remove
Confirmation-Token: 90215
Authorization: Token DEADBEEF

POST http://goku:9090/things
@item.json
`,
			want: []Request{
				{Method: "GET", URL: "http://goku:9090/path/to/dragon?item=balls", Header: http.Header{"X-Account-Id": {"8675309"}}},
				{Method: "DELETE", URL: "http://goku:9090/path/to/remove", Header: http.Header{"Confirmation-Token": {"90215"}, "Authorization": {"Token DEADBEEF"}}},
				{Method: "POST", URL: "http://goku:9090/things", Body: []byte(`{"id":1}`)},
			},
		},
		{
			name: "requests without blank lines, comments, CRLF and blanks",
			in:   "# the hot path\r\nGET http://h/a\r\n  GET   http://h/b/{seq}  \r\n# a comment between\r\nPUT http://h/c\r\nX-A: 1\r\nx-a: 2\r\n",
			want: []Request{
				{Method: "GET", URL: "http://h/a"},
				{Method: "GET", URL: "http://h/b/{seq}"},
				{Method: "PUT", URL: "http://h/c", Header: http.Header{"X-A": {"1", "2"}}},
			},
		},
		{
			name:     "defaults, overridden per request, and paths on the base",
			in:       "GET /a\n\nPOST /b\nAuthorization: Bearer other\n@dir/empty\n\nGET http://other:1/c\n",
			defaults: defaults,
			want: []Request{
				{Method: "GET", URL: "http://127.0.0.1:8080/a", Header: defaults.Header, Body: []byte("default")},
				{Method: "POST", URL: "http://127.0.0.1:8080/b", Header: http.Header{"Authorization": {"Bearer other"}, "X-Global": {"g"}}, Body: []byte{}},
				{Method: "GET", URL: "http://other:1/c", Header: defaults.Header, Body: []byte("default")},
			},
		},
		{name: "header with a colon in its value", in: "GET http://h/\nX-Url: http://x:1/\n", want: []Request{{Method: "GET", URL: "http://h/", Header: http.Header{"X-Url": {"http://x:1/"}}}}},

		{name: "empty", in: "", wantErr: "targets: no requests"},
		{name: "comments only", in: "# nothing\n\n", wantErr: "targets: no requests"},
		{name: "header before any request", in: "X-A: 1\nGET http://h/\n", wantErr: `targets line 1: "X-A: 1": want a request line "METHOD URL"`},
		{name: "header after a blank line", in: "GET http://h/\n\nX-A: 1\n", wantErr: "targets line 3: "},
		{name: "header after a body", in: "POST http://h/\n@item.json\nX-A: 1\n", wantErr: "targets line 3: "},
		{name: "header without colon", in: "GET http://h/\nX-A 1\n", wantErr: `targets line 2: header "X-A 1" has no colon`},
		{name: "header with blank in name", in: "GET http://h/\nX A: 1\n", wantErr: `targets line 2: header "X A": character ' '`},
		{name: "header with empty name", in: "GET http://h/\n: 1\n", wantErr: "targets line 2: header with an empty name"},
		{name: "missing body file", in: "\n\nPOST http://h/\n@missing.json\n", wantErr: "targets line 4: read body: open missing.json: file does not exist"},
		{name: "at without a name", in: "POST http://h/\n@\n", wantErr: "targets line 2: @ without a file name"},
		{name: "relative URL", in: "GET http://h/\n\nGET h/x\n", wantErr: `targets line 3: URL "h/x": not absolute`},
		{name: "path without base", in: "GET /x\n", wantErr: `targets line 1: URL "/x" is a path`},
		{name: "bad scheme", in: "GET ftp://h/\n", wantErr: `targets line 1: URL "ftp://h/": scheme "ftp" is not http or https`},
		{name: "unknown placeholder", in: "GET http://h/{id}\n", wantErr: "targets line 1: URL \"http://h/{id}\": unknown placeholder {id}"},
		{name: "method alone", in: "GET\n", wantErr: `targets line 1: "GET": want a request line`},
		{name: "three fields", in: "GET http://h/ HTTP/1.1\n", wantErr: `targets line 1: "GET http://h/ HTTP/1.1": want a request line`},
		{name: "lower-case method", in: "get http://h/\n", wantErr: `targets line 1: "get http://h/": want a request line`},
		{name: "line too long", in: "GET http://h/" + strings.Repeat("a", maxTargetsLine) + "\n", wantErr: "targets line 1: longer than 65536 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTargets(strings.NewReader(tt.in), tt.defaults, bodyFiles)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error has several lines: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if len(got[i].Header) == 0 {
					got[i].Header = nil
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestParseTargets_defaultsNotShared(t *testing.T) {
	defaults := Request{Header: http.Header{"X-A": {"1"}}}
	got, err := ParseTargets(strings.NewReader("GET http://h/\nX-A: 2\n\nGET http://h/b\n"), defaults, bodyFiles)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Header.Get("X-A") != "2" || got[1].Header.Get("X-A") != "1" || defaults.Header.Get("X-A") != "1" {
		t.Errorf("headers %v, %v and defaults %v: want 2, 1 and 1 untouched", got[0].Header, got[1].Header, defaults.Header)
	}
}

func FuzzParseTargets(f *testing.F) {
	for _, s := range []string{
		"GET http://h/\n",
		"GET http://h/a\nX-A: 1\n\nPOST http://h/b/{seq}\n@item.json\n",
		"# c\nGET /x\n",
		"GET http://h/{pick:x}\n",
		"X: y\n",
		"POST http://h/\n@\n",
		"GET http://[::1]:80/\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		reqs, err := ParseTargets(strings.NewReader(in), Request{URL: "http://base:1"}, func(name string) ([]byte, error) {
			if name == "item.json" {
				return []byte("{}"), nil
			}
			return nil, errors.New("no such file")
		})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error has several lines: %q", err)
			}
			return
		}
		if len(reqs) == 0 {
			t.Fatal("no requests and no error")
		}
		for _, r := range reqs {
			if err := r.Validate(); err != nil {
				t.Fatalf("request %+v from %q does not validate: %v", r, in, err)
			}
		}
	})
}
