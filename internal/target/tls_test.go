package target

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"log"
	"math/big"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeFile writes data to name under a fresh temporary directory and
// returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// selfSignedCA returns a PEM CA certificate that signed nothing the test
// servers present.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "unrelated test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestClient_Profile_tls(t *testing.T) {
	srv := httptest.NewUnstartedServer(pprofMux())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // rejected handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile := writeFile(t, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	otherCA := writeFile(t, "other.pem", selfSignedCA(t))

	tests := []struct {
		name    string
		opts    Options
		wantErr []string
	}{
		{name: "unknown CA", wantErr: []string{"fetch heap profile", "certificate", "--cacert", "--insecure"}},
		{name: "wrong CA", opts: Options{CACertFile: otherCA}, wantErr: []string{"certificate", "--cacert"}},
		{name: "CA file", opts: Options{CACertFile: caFile}},
		{name: "insecure", opts: Options{Insecure: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.BaseURL = srv.URL
			opts.Timeout = 5 * time.Second
			c := newClient(t, opts)
			body, err := c.Profile(t.Context(), "heap", nil)
			if tc.wantErr != nil {
				checkErr(t, err, tc.wantErr...)
				var ue *UnreachableError
				if errors.As(err, &ue) {
					t.Errorf("a certificate problem is reported as unreachable: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Profile: %v", err)
			}
			wantSampleTypes("inuse_space")(t, body)
		})
	}
}

func TestNew_caCertFile(t *testing.T) {
	tests := []struct {
		name   string
		file   func(t *testing.T) string
		wantIs error
		want   []string
	}{
		{
			name: "no PEM in the file",
			file: func(t *testing.T) string { return writeFile(t, "ca.pem", []byte("this is not a certificate\n")) },
			want: []string{"read CA certificates from", "ca.pem", "no PEM certificate found"},
		},
		{
			name: "empty file",
			file: func(t *testing.T) string { return writeFile(t, "empty.pem", nil) },
			want: []string{"no PEM certificate found"},
		},
		{
			name:   "missing file",
			file:   func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing.pem") },
			wantIs: fs.ErrNotExist,
			want:   []string{"read CA certificates", "missing.pem"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Options{BaseURL: "https://127.0.0.1:1", CACertFile: tc.file(t)})
			if err == nil {
				t.Fatalf("New = %v, want an error", c)
			}
			checkErr(t, err, tc.want...)
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
		})
	}
}
