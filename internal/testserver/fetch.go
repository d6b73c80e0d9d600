package testserver

import (
	"io"
	"net/http"
	"testing"
)

// RemoteHost is the Host a request from beyond loopback names, for
// Fetch.
const RemoteHost = "heapscope.example:7071"

// Fetch GETs url with the given headers (name, value pairs) as a client
// from beyond loopback would, naming RemoteHost, unless a "Host" header
// is given ("" for url's own host). It returns the status and the body.
func Fetch(t testing.TB, client *http.Client, url string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = RemoteHost
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			if req.Host == "" {
				req.Host = req.URL.Host
			}
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
