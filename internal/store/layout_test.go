package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTargetSlug(t *testing.T) {
	tests := []struct {
		key, prefix string
	}{
		{"http://127.0.0.1:6060", "127.0.0.1_6060-"},
		{"https://api.example.com/debug/pprof/", "api.example.com-"},
		{"http://[::1]:6060", "1_6060-"},
		{"job/instance 42", "job_instance_42-"},
		{"../../etc", "etc-"},
		{"", "target-"},
		{strings.Repeat("x", 300), strings.Repeat("x", maxSlug) + "-"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got := TargetSlug(tt.key)
			if !strings.HasPrefix(got, tt.prefix) || len(got) != len(tt.prefix)+12 {
				t.Errorf("TargetSlug(%q) = %q, want %q and 12 hex digits", tt.key, got, tt.prefix)
			}
			if got != TargetSlug(tt.key) {
				t.Errorf("TargetSlug(%q) changes from call to call", tt.key)
			}
			if other, ok := seen[got]; ok {
				t.Errorf("TargetSlug(%q) = TargetSlug(%q)", tt.key, other)
			}
			seen[got] = tt.key
			if err := os.Mkdir(filepath.Join(t.TempDir(), got), 0o755); err != nil {
				t.Errorf("not a directory name: %v", err)
			}
		})
	}
	// Keys that differ only in what the readable part leaves out.
	if TargetSlug("http://127.0.0.1:6060/a") == TargetSlug("http://127.0.0.1:6060/b") {
		t.Error("two keys of the same host share a directory")
	}
}

func TestTriggerSlug(t *testing.T) {
	tests := []struct {
		trigger *Trigger
		want    string
	}{
		{&Trigger{Expr: "memory>=80%"}, "memory-ge-80pct"},
		{&Trigger{Expr: "goroutines >= 10000"}, "goroutines-ge-10000"},
		{&Trigger{Expr: "gc_cpu>0.25"}, "gc_cpu-gt-0.25"},
		{&Trigger{Expr: "time_to_limit<2h"}, "time_to_limit-lt-2h"},
		{&Trigger{Expr: "rss/step"}, "rss_step"},
		{&Trigger{}, "bundle"},
		{nil, "bundle"},
	}
	for _, tt := range tests {
		if got := triggerSlug(tt.trigger); got != tt.want {
			t.Errorf("triggerSlug(%+v) = %q, want %q", tt.trigger, got, tt.want)
		}
	}
}

func TestPlace_NeverReplaces(t *testing.T) {
	root := t.TempDir()
	var got []string
	for range 3 {
		src := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(src, 0o755); err != nil {
			t.Fatal(err)
		}
		name, err := place(root, src, "runs/x/20260301T120000Z")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	want := []string{"runs/x/20260301T120000Z", "runs/x/20260301T120000Z-2", "runs/x/20260301T120000Z-3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("place: %v, want %v", got, want)
	}
	// An empty directory of the name is taken too: rename(2) would replace it.
	if err := os.MkdirAll(filepath.Join(root, "runs", "y", "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if name, err := place(root, src, "runs/y/t"); err != nil || name != "runs/y/t-2" {
		t.Errorf("place beside an empty directory of the name: %q, %v", name, err)
	}
}
