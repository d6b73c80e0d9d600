package load

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/option"
)

func TestSource_Requests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	item := write("item.json", `{"id":1}`)
	targets := write("targets.txt", "GET /a\n\nPOST http://other:81/b\nX-Own: 1\n")
	badTargets := write("bad.txt", "nonsense line\n")
	auth := http.Header{"Authorization": {"Bearer t"}}

	tests := []struct {
		name    string
		src     Source
		want    []Request
		field   string // of the *option.Error wanted
		wantErr string
	}{
		{
			name: "one request",
			src:  Source{Method: "POST", URL: "http://h/items", Header: auth, Body: "{}"},
			want: []Request{{Method: "POST", URL: "http://h/items", Header: auth, Body: []byte("{}")}},
		},
		{
			name: "one request without headers",
			src:  Source{Method: "GET", URL: "http://h/", Header: http.Header{}},
			want: []Request{{Method: "GET", URL: "http://h/"}},
		},
		{
			name: "a request line on a base",
			src:  Source{Request: "PUT /items/{seq}", Base: "http://h:8080/api", BodyFile: item},
			want: []Request{{Method: "PUT", URL: "http://h:8080/api/items/{seq}", Body: []byte(`{"id":1}`)}},
		},
		{
			name: "a targets file on a base, with the default body and headers",
			src:  Source{TargetsFile: targets, Base: "http://h:8080", Header: auth, Body: "d"},
			want: []Request{
				{Method: "GET", URL: "http://h:8080/a", Header: auth, Body: []byte("d")},
				{Method: "POST", URL: "http://other:81/b", Header: http.Header{"Authorization": {"Bearer t"}, "X-Own": {"1"}}, Body: []byte("d")},
			},
		},
		{name: "request and targets", src: Source{Request: "GET /", TargetsFile: targets}, field: "Request", wantErr: "Request and TargetsFile both set: give one"},
		{name: "body and body file", src: Source{URL: "http://h/", Body: "x", BodyFile: item}, field: "Body", wantErr: "Body and BodyFile both set: give one"},
		{name: "bad request line", src: Source{Request: "GET /{nope}", Base: "http://h"}, field: "Request", wantErr: `Request: parse request "GET http://h/{nope}"`},
		{name: "missing body file", src: Source{URL: "http://h/", BodyFile: filepath.Join(dir, "none")}, field: "BodyFile", wantErr: "BodyFile: open "},
		{name: "missing targets file", src: Source{TargetsFile: filepath.Join(dir, "none")}, field: "TargetsFile", wantErr: "TargetsFile: open "},
		{name: "bad targets file", src: Source{TargetsFile: badTargets}, field: "TargetsFile", wantErr: "TargetsFile " + badTargets + ": targets line 1:"},
		{name: "bad URL", src: Source{URL: "ftp://x"}, wantErr: `request: URL "ftp://x": scheme "ftp" is not http or https`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.src.Requests()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Requests() = %+v, want %+v", got, tt.want)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Requests() error = %v, want %q…", err, tt.wantErr)
			}
			var oe *option.Error
			if isOption := errors.As(err, &oe); isOption != (tt.field != "") || isOption && oe.Field != tt.field {
				t.Errorf("error %v: an *option.Error about %q, want one about %q", err, oe, tt.field)
			}
		})
	}
	if _, err := (Source{URL: "http://h/", BodyFile: filepath.Join(dir, "none")}).Requests(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing body file: %v, want it to wrap fs.ErrNotExist", err)
	}
}
