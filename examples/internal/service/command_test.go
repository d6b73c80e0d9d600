package service

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestValidateAddr(t *testing.T) {
	tests := []struct {
		name    string
		addr    string
		wantErr string
	}{
		{name: "loopback", addr: "127.0.0.1:6060"},
		{name: "port zero", addr: "127.0.0.1:0"},
		{name: "all interfaces", addr: ":8080"},
		{name: "host name", addr: "localhost:65535"},
		{name: "ipv6", addr: "[::1]:6060"},
		{name: "no port", addr: "localhost", wantErr: "missing port in address"},
		{name: "empty", addr: "", wantErr: "missing port in address"},
		{name: "port too large", addr: "127.0.0.1:65536", wantErr: `port "65536" is not a number from 0 to 65535`},
		{name: "negative port", addr: "127.0.0.1:-1", wantErr: `port "-1" is not a number`},
		{name: "named port", addr: "127.0.0.1:http", wantErr: `port "http" is not a number`},
		{name: "empty port", addr: "127.0.0.1:", wantErr: `port "" is not a number`},
		{name: "url", addr: "http://127.0.0.1:80", wantErr: "too many colons"},
		{name: "space in host", addr: "local host:80", wantErr: `invalid host "local host"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateAddr(tt.addr)
			checkErr(t, err, tt.wantErr)
		})
	}
}

// checkErr fails unless err is nil and want empty, or err contains want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q, want one containing %q", err, want)
	}
}

func TestEnvName(t *testing.T) {
	tests := []struct{ command, flag, want string }{
		{"leakycache", "addr", "LEAKYCACHE_ADDR"},
		{"naivekv", "mutex-profile-fraction", "NAIVEKV_MUTEX_PROFILE_FRACTION"},
		{"kv-tuned", "preload", "KV_TUNED_PRELOAD"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := EnvName(tt.command, tt.flag); got != tt.want {
				t.Errorf("EnvName(%q, %q) = %q, want %q", tt.command, tt.flag, got, tt.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantAddr  string
		wantCount int
		wantErr   string
	}{
		{name: "defaults", wantAddr: "127.0.0.1:1", wantCount: 5},
		{name: "flags", args: []string{"--addr", ":2", "-count=7"}, wantAddr: ":2", wantCount: 7},
		{name: "environment", env: map[string]string{"SVC_ADDR": ":3", "SVC_COUNT": "8"}, wantAddr: ":3", wantCount: 8},
		{name: "flag beats environment", args: []string{"--count", "9"}, env: map[string]string{"SVC_COUNT": "1"}, wantAddr: "127.0.0.1:1", wantCount: 9},
		{name: "empty environment ignored", env: map[string]string{"SVC_COUNT": ""}, wantAddr: "127.0.0.1:1", wantCount: 5},
		{name: "bad flag value", args: []string{"--count", "x"}, wantErr: `invalid value "x" for flag -count: not an integer`},
		{name: "flag out of range", args: []string{"--count", "11"}, wantErr: `invalid value "11" for flag -count: must be from 0 to 10`},
		{name: "bad environment value", env: map[string]string{"SVC_COUNT": "-1"}, wantErr: `invalid value "-1" for SVC_COUNT: must be from 0 to 10`},
		{name: "bad environment addr", env: map[string]string{"SVC_ADDR": "nope"}, wantErr: `invalid value "nope" for SVC_ADDR: missing port in address`},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "flag provided but not defined: -nope"},
		{name: "positional argument", args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
		{name: "help", args: []string{"-h"}, wantErr: flag.ErrHelp.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("svc", flag.ContinueOnError)
			var out bytes.Buffer
			fs.SetOutput(&out)
			addr := AddrFlag(fs, "addr", "127.0.0.1:1", "")
			count := IntFlag(fs, "count", 5, 0, 10, "")
			err := ParseFlags(fs, tt.args, "svc", func(k string) string { return tt.env[k] })
			checkErr(t, err, tt.wantErr)
			if err == nil && (*addr != tt.wantAddr || *count != tt.wantCount) {
				t.Errorf("addr, count = %q, %d; want %q, %d", *addr, *count, tt.wantAddr, tt.wantCount)
			}
			if out.Len() > 0 {
				t.Errorf("ParseFlags wrote to the flag set's output: %q", out.String())
			}
		})
	}
}

func TestIntFlag_Messages(t *testing.T) {
	tests := []struct {
		name     string
		min, max int
		value    string
		wantErr  string
	}{
		{name: "lower bound only", min: 1, max: math.MaxInt, value: "0", wantErr: "must be at least 1"},
		{name: "range", min: 0, max: 3, value: "4", wantErr: "must be from 0 to 3"},
		{name: "in range", min: 0, max: 3, value: "3"},
		{name: "not a number", min: 0, max: 3, value: "1.5", wantErr: "not an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("svc", flag.ContinueOnError)
			IntFlag(fs, "n", tt.min, tt.min, tt.max, "")
			checkErr(t, fs.Set("n", tt.value), tt.wantErr)
		})
	}
}

// testCommand is a Command whose service answers /hello and takes --greeting.
func testCommand() Command {
	return Command{
		Name: "svc",
		Addr: "127.0.0.1:0",
		Options: func(fs *flag.FlagSet) func() (http.Handler, error) {
			greeting := fs.String("greeting", "hello", "what /hello says")
			return func() (http.Handler, error) {
				if *greeting == "fail" {
					return nil, errors.New("invalid --greeting: fail")
				}
				mux := http.NewServeMux()
				mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.WriteString(w, *greeting)
				})
				return mux, nil
			}
		},
	}
}

func TestCommand_RunUsageErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantOut  string // a regular expression for the whole of stderr
	}{
		{name: "bad addr", args: []string{"--addr", "nope"}, wantCode: ExitUsage,
			wantOut: `^svc: invalid value "nope" for flag -addr: missing port in address \(see --help\)\n$`},
		{name: "bad env addr", env: map[string]string{"SVC_ADDR": "1.2.3.4"}, wantCode: ExitUsage,
			wantOut: `^svc: invalid value "1.2.3.4" for SVC_ADDR: missing port in address \(see --help\)\n$`},
		{name: "negative mutex fraction", args: []string{"--mutex-profile-fraction=-1"}, wantCode: ExitUsage,
			wantOut: `^svc: invalid value "-1" for flag -mutex-profile-fraction: must be from 0 to \d+ \(see --help\)\n$`},
		{name: "build error", args: []string{"--greeting", "fail"}, wantCode: ExitUsage,
			wantOut: `^svc: invalid --greeting: fail\n$`},
		{name: "unknown flag", args: []string{"--nope"}, wantCode: ExitUsage,
			wantOut: `^svc: flag provided but not defined: -nope \(see --help\)\n$`},
		{name: "help", args: []string{"--help"}, wantCode: ExitOK,
			wantOut: `(?s)^usage: svc \[flags\].*SVC_ADDR.*-addr address.*-greeting.*-mutex-profile-fraction N`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := testCommand().Run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if !regexp.MustCompile(tt.wantOut).MatchString(stderr.String()) {
				t.Errorf("stderr %q, want it to match %s", stderr.String(), tt.wantOut)
			}
		})
	}
}

// lineWriter is a concurrency-safe writer that hands over each line written.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line)
			return len(p), nil
		}
		w.lines <- line
	}
}

func TestCommand_RunServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lineWriter{lines: make(chan string, 10)}
	code := make(chan int, 1)
	go func() {
		code <- testCommand().Run(ctx, []string{"--greeting", "hi"}, func(k string) string {
			if k == "SVC_MUTEX_PROFILE_FRACTION" {
				return "0"
			}
			return ""
		}, stderr)
	}()

	var line string
	select {
	case line = <-stderr.lines:
	case c := <-code:
		t.Fatalf("Run returned %d before listening", c)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not announce its address within 10s")
	}
	m := regexp.MustCompile(`^svc: listening on (http://127\.0\.0\.1:\d+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("announcement %q, want \"svc: listening on http://127.0.0.1:PORT\"", line)
	}
	client := newClient()
	for path, want := range map[string]string{"/hello": "hi", "/health": "ok\n"} {
		resp, err := client.Get(m[1] + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want {
			t.Errorf("GET %s: %q, want %q", path, body, want)
		}
	}

	cancel()
	select {
	case c := <-code:
		if c != ExitOK {
			t.Errorf("exit code after cancellation %d, want %d", c, ExitOK)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancellation")
	}
}

func TestCommand_RunListenFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stderr bytes.Buffer
	code := testCommand().Run(context.Background(), []string{"--addr", ln.Addr().String()}, nil, &stderr)
	if code != ExitFailure {
		t.Errorf("exit code %d, want %d", code, ExitFailure)
	}
	if want := "svc: listen on " + ln.Addr().String() + ": "; !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("stderr %q, want one line starting %q", stderr.String(), want)
	}
}

func TestCommand_Handler(t *testing.T) {
	h, err := testCommand().Handler()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/hello": "hello", "/health": "ok\n"} {
		if got := record(t, h, http.MethodGet, path).Body.String(); got != want {
			t.Errorf("GET %s: %q, want %q", path, got, want)
		}
	}
}
