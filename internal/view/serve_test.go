package view

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLoopbackAddr(t *testing.T) {
	tests := []struct {
		addr, want, wantErr string
	}{
		{addr: "127.0.0.1:0", want: "127.0.0.1:0"},
		{addr: "localhost:8080", want: "127.0.0.1:8080"},
		{addr: "0.0.0.0:0", wantErr: `"0.0.0.0:0": view serves on 127.0.0.1 only; give 127.0.0.1:PORT`},
		{addr: ":8080", wantErr: "serves on 127.0.0.1 only"},
		{addr: "[::1]:8080", wantErr: "serves on 127.0.0.1 only"},
		{addr: "8080", wantErr: `"8080": want 127.0.0.1:PORT`},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, err := LoopbackAddr(tt.addr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("LoopbackAddr = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestServe_UntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	urls := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, "127.0.0.1:0", h, func(url string) { urls <- url }) }()

	var url string
	select {
	case url = <-urls:
	case err := <-served:
		t.Fatalf("Serve returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not listening after 10s")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/") {
		t.Errorf("URL %q", url)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello" {
		t.Errorf("body %q", body)
	}

	// A second server cannot take the same port.
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	if err := Serve(ctx, addr, h, nil); err == nil || !strings.HasPrefix(err.Error(), "listen on "+addr) {
		t.Errorf("a port in use: error %v", err)
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after cancellation: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of cancellation")
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("still listening after Serve returned")
	}
}

func TestServe_RefusesOtherInterfaces(t *testing.T) {
	if err := Serve(t.Context(), "0.0.0.0:0", http.NotFoundHandler(), nil); err == nil || !strings.Contains(err.Error(), "127.0.0.1 only") {
		t.Errorf("error %v", err)
	}
}
