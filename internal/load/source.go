package load

import (
	"fmt"
	"net/http"
	"os"

	"github.com/heapscope/heapscope/internal/option"
)

// Source says where a run's requests come from, as a command line gives
// them: one request, or a targets file of requests in vegeta's format,
// each carrying Header and the body of Body or BodyFile.
type Source struct {
	// Request is the one request as "METHOD URL" or "URL"
	// (ParseRequestOn), a URL that is a path being on Base. Without it,
	// Method and URL give the one request.
	Request     string
	Method, URL string
	// Base is what the paths of Request and of the targets file are on,
	// such as a service's "http://host:port".
	Base string
	// Header is sent with every request; a targets file's own header lines
	// replace its fields of the same name.
	Header http.Header
	// Body, or the contents of the file BodyFile, is every request's body
	// unless a targets file's @body replaces it.
	Body, BodyFile string
	// TargetsFile names a targets file (ParseTargets), whose requests
	// replace the one request.
	TargetsFile string
}

// Requests reads the requests: the targets file's, or the one request,
// validated. Its errors about the source's fields are *option.Error.
func (s Source) Requests() ([]Request, error) {
	switch {
	case s.Request != "" && s.TargetsFile != "":
		return nil, option.Errorf("Request", "{Request} and {TargetsFile} both set: give one")
	case s.Body != "" && s.BodyFile != "":
		return nil, option.Errorf("Body", "{Body} and {BodyFile} both set: give one")
	}
	method, url := s.Method, s.URL
	if s.Request != "" {
		r, err := ParseRequestOn(s.Request, s.Base)
		if err != nil {
			return nil, option.Errorf("Request", "{Request}: %w", err)
		}
		method, url = r.Method, r.URL
	}
	var body []byte
	if s.Body != "" {
		body = []byte(s.Body)
	}
	if s.BodyFile != "" {
		b, err := os.ReadFile(s.BodyFile)
		if err != nil {
			return nil, option.Errorf("BodyFile", "{BodyFile}: %w", err)
		}
		body = b
	}
	if s.TargetsFile != "" {
		return s.targets(body)
	}
	header := s.Header
	if len(header) == 0 {
		header = nil
	}
	r := Request{Method: method, URL: url, Header: header, Body: body}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	return []Request{r}, nil
}

// targets reads the targets file, its requests carrying body unless they
// have their own.
func (s Source) targets(body []byte) ([]Request, error) {
	f, err := os.Open(s.TargetsFile)
	if err != nil {
		return nil, option.Errorf("TargetsFile", "{TargetsFile}: %w", err)
	}
	defer f.Close()
	reqs, err := ParseTargets(f, Request{URL: s.Base, Header: s.Header, Body: body}, nil)
	if err != nil {
		return nil, option.Errorf("TargetsFile", "{TargetsFile} %s: %w", s.TargetsFile, err)
	}
	return reqs, nil
}
