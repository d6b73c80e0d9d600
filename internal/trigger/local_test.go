package trigger

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTree writes files, by path relative to a new directory, and
// returns the directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// procFiles are the /proc files of process 42, started 123456 ticks
// (1234.56 s) after a boot at 1700000000, with RSS 50 MiB and
// GOMEMLIMIT=256MiB, in cgroup cgroupLine.
func procFiles(cgroupLine string) map[string]string {
	return map[string]string{
		"proc/stat":       "cpu  10 0 5 100\nbtime 1700000000\nprocesses 77\n",
		"proc/42/status":  "Name:\tkv\nVmHWM:\t 60000 kB\nVmRSS:\t 51200 kB\nRssAnon:\t 40000 kB\nThreads:\t7\n",
		"proc/42/stat":    "42 (kv) S 1 42 42 0 -1 4194560 12871 0 3 0 250 75 0 0 20 0 12 0 123456 1293803520 12800 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 2 0 0 0 0 0\n",
		"proc/42/environ": "HOME=/\x00GOMEMLIMIT=256MiB\x00GOGC=200\x00",
		"proc/42/cgroup":  cgroupLine,
	}
}

func TestLocal_Sample(t *testing.T) {
	started := time.Unix(1700000000, 0).Add(1234560 * time.Millisecond)
	tests := []struct {
		name  string
		files map[string]string
		want  Sample // Time and Cgroup (relative to the root) aside
	}{
		{
			name: "cgroup v1",
			files: merge(procFiles("9:memory:/app\n1:name=systemd:/app\n"), map[string]string{
				"sys/fs/cgroup/memory/memory.limit_in_bytes":     "9223372036854771712\n",
				"sys/fs/cgroup/memory/app/memory.limit_in_bytes": "268435456\n",
				"sys/fs/cgroup/memory/app/memory.usage_in_bytes": "209715200\n",
				"sys/fs/cgroup/memory/app/memory.stat":           "cache 62914560\nrss 146800640\ninactive_file 1\ntotal_inactive_file 52428800\ntotal_active_file 10485760\n",
				"sys/fs/cgroup/memory/app/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
			}),
			want: Sample{
				Known: KnownPID | KnownRSS | KnownStart | KnownMemory | KnownMemoryLimit | KnownCgroupUsage | KnownOOMKills | KnownGoMemLimit,
				PID:   42, RSS: 50 << 20, Start: started,
				Memory: 150 << 20, MemoryLimit: 256 << 20, CgroupUsage: 200 << 20, Cgroup: "sys/fs/cgroup/memory/app",
				OOMKills: 2, GoMemLimit: 256 << 20,
			},
		},
		{
			name: "cgroup v2",
			files: merge(procFiles("0::/svc\n"), map[string]string{
				"sys/fs/cgroup/cgroup.controllers":     "cpu io memory pids\n",
				"sys/fs/cgroup/svc/memory.max":         "536870912\n",
				"sys/fs/cgroup/svc/memory.current":     "104857600\n",
				"sys/fs/cgroup/svc/memory.stat":        "anon 73400320\nfile 31457280\ninactive_file 20971520\nactive_file 10485760\n",
				"sys/fs/cgroup/svc/memory.events":      "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n",
				"sys/fs/cgroup/svc/cgroup.controllers": "memory\n",
			}),
			want: Sample{
				Known: KnownPID | KnownRSS | KnownStart | KnownMemory | KnownMemoryLimit | KnownCgroupUsage | KnownOOMKills | KnownGoMemLimit,
				PID:   42, RSS: 50 << 20, Start: started,
				Memory: 80 << 20, MemoryLimit: 512 << 20, CgroupUsage: 100 << 20, Cgroup: "sys/fs/cgroup/svc",
				OOMKills: 1, GoMemLimit: 256 << 20,
			},
		},
		{
			name: "cgroup v2 root: no usage, limit or counter",
			files: merge(procFiles("0::/\n"), map[string]string{
				"sys/fs/cgroup/cgroup.controllers": "cpu io memory pids\n",
				"sys/fs/cgroup/memory.stat":        "anon 1\n",
				"proc/42/environ":                  "GOMEMLIMIT=off\x00",
			}),
			want: Sample{
				Known: KnownPID | KnownRSS | KnownStart,
				PID:   42, RSS: 50 << 20, Start: started, Cgroup: "sys/fs/cgroup",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, tt.files)
			before := time.Now()
			got, err := Local{PID: 42, Root: root}.Sample(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got.Time.Before(before) || got.Time.After(time.Now()) {
				t.Errorf("Time = %v, want the time of sampling", got.Time)
			}
			if len(got.Warnings) != 0 {
				t.Errorf("Warnings = %v", got.Warnings)
			}
			want := tt.want
			want.Time, want.Cgroup = got.Time, filepath.Join(root, filepath.FromSlash(want.Cgroup))
			if !sameSample(got, want) {
				t.Errorf("Sample\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLocal_Sample_partial(t *testing.T) {
	files := procFiles("4:memory:/x\n")
	delete(files, "proc/stat")
	files["sys/fs/cgroup/memory/x/memory.limit_in_bytes"] = "lots\n"
	root := writeTree(t, files)
	got, err := Local{PID: 42, Root: root}.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got.Known != KnownPID|KnownRSS|KnownGoMemLimit || len(got.Warnings) != 2 {
		t.Fatalf("Sample %+v, want RSS and GOMEMLIMIT known, two warnings", got)
	}
	for i, want := range []string{filepath.Join(root, "proc", "stat"), `"lots" is not a number of bytes`} {
		if !strings.Contains(got.Warnings[i].Error(), want) {
			t.Errorf("warning %d = %v, want it to say %q", i, got.Warnings[i], want)
		}
	}
}

func TestLocal_Sample_errors(t *testing.T) {
	t.Run("no process", func(t *testing.T) {
		_, err := Local{PID: 42, Root: t.TempDir()}.Sample(t.Context())
		if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "sample process 42: ") {
			t.Errorf("Sample error = %v, want one matching fs.ErrNotExist", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := (Local{PID: os.Getpid()}).Sample(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Sample error = %v, want context.Canceled", err)
		}
	})
}

// TestLocal_Sample_self samples this process, on whatever host runs the
// tests.
func TestLocal_Sample_self(t *testing.T) {
	s, err := Local{PID: os.Getpid()}.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
	if !s.Has(KnownPID|KnownRSS|KnownStart) || s.RSS < 1<<20 {
		t.Errorf("Sample %+v: want the PID, an RSS of at least 1 MiB and a start time", s)
	}
	if s.Start.After(time.Now()) || time.Since(s.Start) > 24*time.Hour {
		t.Errorf("Start = %v, not this test's", s.Start)
	}
	if s.Has(KnownMemory) && (s.Cgroup == "" || !s.Has(KnownCgroupUsage) || s.Memory > s.CgroupUsage) {
		t.Errorf("Sample %+v: a working set above the usage, or without its cgroup", s)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("Warnings = %v", s.Warnings)
	}
}

// merge returns the files of a and b together, b's winning.
func merge(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

func TestContainer_Sample(t *testing.T) {
	tests := []struct {
		name       string
		files      map[string]string
		mount, dir string // relative to the tree
		want       Sample // Time and Cgroup aside
	}{
		{
			name: "v2, a pod's limit",
			files: map[string]string{
				"cgroup/cgroup.controllers":                   "cpu memory\n",
				"cgroup/kubepods/podu/memory.max":             "268435456\n",
				"cgroup/kubepods/podu/ctr/memory.max":         "max\n",
				"cgroup/kubepods/podu/ctr/memory.current":     "209715200\n",
				"cgroup/kubepods/podu/ctr/memory.stat":        "anon 167772160\nfile 41943040\ninactive_file 41943040\n",
				"cgroup/kubepods/podu/ctr/memory.events":      "oom 2\noom_kill 2\n",
				"cgroup/kubepods/podu/ctr/cgroup.controllers": "memory\n",
			},
			mount: "cgroup", dir: "cgroup/kubepods/podu/ctr",
			want: Sample{Known: KnownMemory | KnownMemoryLimit | KnownCgroupUsage | KnownOOMKills,
				Memory: 160 << 20, MemoryLimit: 256 << 20, CgroupUsage: 200 << 20, OOMKills: 2},
		},
		{
			name: "v1 memory controller",
			files: map[string]string{
				"cgroup/memory/memory.limit_in_bytes":                   "9223372036854771712\n",
				"cgroup/memory/kubepods/podu/ctr/memory.limit_in_bytes": "536870912\n",
				"cgroup/memory/kubepods/podu/ctr/memory.usage_in_bytes": "104857600\n",
				"cgroup/memory/kubepods/podu/ctr/memory.stat":           "total_inactive_file 10485760\n",
				"cgroup/memory/kubepods/podu/ctr/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
			},
			mount: "cgroup/memory", dir: "cgroup/memory/kubepods/podu/ctr",
			want: Sample{Known: KnownMemory | KnownMemoryLimit | KnownCgroupUsage | KnownOOMKills,
				Memory: 90 << 20, MemoryLimit: 512 << 20, CgroupUsage: 100 << 20},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, tt.files)
			dir := filepath.Join(root, tt.dir)
			got, err := Container{Mount: filepath.Join(root, tt.mount), Dir: dir}.Sample(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.Time, want.Cgroup = got.Time, dir
			if !sameSample(got, want) || len(got.Warnings) > 0 {
				t.Errorf("Sample\n got %+v\nwant %+v", got, want)
			}
		})
	}
	t.Run("gone", func(t *testing.T) {
		root := t.TempDir()
		_, err := Container{Mount: root, Dir: filepath.Join(root, "ctr")}.Sample(t.Context())
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Sample of a removed cgroup = %v, want fs.ErrNotExist", err)
		}
	})
}
