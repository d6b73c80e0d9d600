package s3test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// gone says whether no process has the PID any more.
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestStart_roundTripThenStopped(t *testing.T) {
	var s *Server
	t.Run("server", func(t *testing.T) {
		began := time.Now()
		s = Start(t)
		t.Logf("versitygw started in %s (%s, pid %d)", time.Since(began).Round(time.Millisecond), s.Binary, s.PID())
		if !strings.HasPrefix(s.Endpoint, "http://127.0.0.1:") || !strings.HasPrefix(s.AdminEndpoint, "http://127.0.0.1:") || s.Endpoint == s.AdminEndpoint {
			t.Errorf("Endpoint %q, AdminEndpoint %q: want two ports of 127.0.0.1", s.Endpoint, s.AdminEndpoint)
		}
		roundTrip(t, s)
	})
	if s == nil {
		return
	}
	if !gone(s.PID()) {
		t.Errorf("versitygw (pid %d) still running after the test's cleanup", s.PID())
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server directory %s still there after the test's cleanup: %v", s.Dir, err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop again: %v", err)
	}
}

// roundTrip puts, lists, gets and deletes objects in a new bucket.
func roundTrip(t *testing.T, s *Server) {
	t.Helper()
	ctx := t.Context()
	c := s.Client()
	bucket := s.NewBucket(t)
	objects := map[string][]byte{
		"runs/api/001/result.json.gz": []byte(`{"target":"api"}`),
		"runs/api/002/result.json.gz": bytes.Repeat([]byte("heap"), 64<<10),
		"bundles/worker/001/dump.txt": []byte("goroutine 1 [running]:"),
	}
	for key, body := range objects {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("runs/api/")})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	if want := []string{"runs/api/001/result.json.gz", "runs/api/002/result.json.gz"}; !slices.Equal(keys, want) {
		t.Errorf("list runs/api/ = %q, want %q", keys, want)
	}
	for key, want := range objects {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("get %s = %d bytes (%v), want the %d put", key, len(got), err, len(want))
		}
	}
	key := "bundles/worker/001/dump.txt"
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil {
		t.Errorf("get %s after delete: no error, want NoSuchKey", key)
	}
}

func TestServer_NewBucket(t *testing.T) {
	s := Shared(t)
	if again := Shared(t); again != s {
		t.Fatalf("Shared started a second server (%s, then %s)", s.Endpoint, again.Endpoint)
	}
	a, b := s.NewBucket(t), s.NewBucket(t)
	if a == b {
		t.Fatalf("NewBucket gave %s twice", a)
	}
	c := s.Client()
	if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(a), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(b)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != 0 {
		t.Errorf("bucket %s holds %d objects, want a new bucket empty", b, len(list.Contents))
	}
}

func TestServer_refusesOtherKeys(t *testing.T) {
	s := Shared(t)
	bucket := s.NewBucket(t)
	other := &Server{Endpoint: s.Endpoint, Region: s.Region, AccessKey: s.AccessKey, SecretKey: strings.Repeat("0", 40), transport: s.transport}
	_, err := other.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err == nil {
		t.Errorf("a wrong secret listed bucket %s, want the request refused", bucket)
	}
}

func TestBucketName(t *testing.T) {
	for _, tc := range []struct {
		test string
		n    int64
		want string
	}{
		{"TestStore", 1, "t-teststore-1"},
		{"TestStore/Put_then_Get", 12, "t-teststore-put-then-get-12"},
		{"Test" + strings.Repeat("X", 80), 3, "t-test" + strings.Repeat("x", 63-len("t-test-3")) + "-3"},
	} {
		got := bucketName(tc.test, tc.n)
		if got != tc.want {
			t.Errorf("bucketName(%q, %d) = %q, want %q", tc.test, tc.n, got, tc.want)
		}
		if len(got) > 63 {
			t.Errorf("bucketName(%q, %d) is %d bytes, more than S3's 63", tc.test, tc.n, len(got))
		}
	}
}

func TestBinary(t *testing.T) {
	gopath := t.TempDir()
	found := filepath.Join(gopath, "bin", "versitygw")
	if err := os.MkdirAll(filepath.Dir(found), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(found, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	goDir := t.TempDir() // the go command alone on PATH
	goBin, err := findGo()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(goBin, filepath.Join(goDir, "go")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		versitygw string // $VERSITYGW
		path      string // $PATH
		gopath    string
		want      string // the binary, or "" for an error naming Install
	}{
		{name: "VERSITYGW first", versitygw: found, path: goDir, gopath: t.TempDir(), want: found},
		{name: "GOPATH/bin", path: goDir, gopath: gopath, want: found},
		{name: "VERSITYGW not a file", versitygw: filepath.Join(gopath, "none"), path: goDir, gopath: gopath},
		{name: "nowhere", path: goDir, gopath: t.TempDir()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("VERSITYGW", tc.versitygw)
			t.Setenv("PATH", tc.path)
			t.Setenv("GOPATH", tc.gopath)
			t.Setenv("GOBIN", "")
			t.Setenv("GOFLAGS", "")
			got, err := Binary()
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), Install) {
					t.Errorf("Binary() = %q, %v; want an error naming %q", got, err, Install)
				}
				return
			}
			if got != tc.want || err != nil {
				t.Errorf("Binary() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// findGo finds the go command the test runs under.
func findGo() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// TestInstall_inTestScript holds scripts/test.sh to the version the
// package names.
func TestInstall_inTestScript(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "..", "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(script, []byte("github.com/versity/versitygw/cmd/versitygw@"+Version)) {
		t.Errorf("scripts/test.sh does not install versitygw %s (%s)", Version, Install)
	}
}
