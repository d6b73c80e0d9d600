package sysmem

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCgroupFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []CgroupEntry
	}{
		{"v2", "0::/system.slice/kv.service\n", []CgroupEntry{{Path: "/system.slice/kv.service"}}},
		{"hybrid", "11:memory:/user.slice\n10:cpu,cpuacct:/\n1:name=systemd:/user.slice\n0::/user.slice\n", []CgroupEntry{
			{HierarchyID: 11, Controllers: []string{"memory"}, Path: "/user.slice"},
			{HierarchyID: 10, Controllers: []string{"cpu", "cpuacct"}, Path: "/"},
			{HierarchyID: 1, Controllers: []string{"name=systemd"}, Path: "/user.slice"},
			{HierarchyID: 0, Path: "/user.slice"},
		}},
		{"path with colon", "0::/a:b\n", []CgroupEntry{{Path: "/a:b"}}},
		{"deleted", "0::/gone (deleted)\n", []CgroupEntry{{Path: "/gone (deleted)"}}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCgroupFile(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseCgroupFile = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseCgroupFile_errors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantLine int
	}{
		{"one colon", "0:/x\n", 1},
		{"bad id", "0::/\nx:memory:/\n", 2},
		{"relative path", "0::x\n", 1},
		{"no path", "4:memory:\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCgroupFile(strings.NewReader(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line != tt.wantLine {
				t.Errorf("ParseCgroupFile error = %v, want a syntax error at line %d", err, tt.wantLine)
			}
		})
	}
}

func TestParseMemoryStat(t *testing.T) {
	got, err := ParseMemoryStat(strings.NewReader("anon 4096\nfile 8192\n\npgfault 12\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"anon": 4096, "file": 8192, "pgfault": 12}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseMemoryStat = %v, want %v", got, want)
	}
	for _, bad := range []string{"anon\n", "anon x\n", "anon 1 2\n", "anon -1\n"} {
		if _, err := ParseMemoryStat(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseMemoryStat(%q) succeeded", bad)
		}
	}
}

func TestCgroup_Split(t *testing.T) {
	tests := []struct {
		name               string
		stat               map[string]uint64
		wantAnon, wantFile uint64
	}{
		{"v2", map[string]uint64{"anon": 200, "file": 90, "shmem": 5}, 200, 90},
		{"v1 hierarchical totals first", map[string]uint64{"rss": 1, "cache": 2, "total_rss": 200, "total_cache": 90}, 200, 90},
		{"v1 without totals", map[string]uint64{"rss": 200, "cache": 90, "mapped_file": 7}, 200, 90},
		{"a pair is read together", map[string]uint64{"anon": 200, "total_cache": 90}, 200, 0},
		{"no page cache", map[string]uint64{"anon": 5}, 5, 0},
		{"no memory.stat", nil, 0, 0},
		{"neither pair", map[string]uint64{"pgfault": 12}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg := Cgroup{Stat: tt.stat}
			anon, file := cg.Split()
			if anon != tt.wantAnon || file != tt.wantFile {
				t.Errorf("Split() = %d, %d, want %d, %d", anon, file, tt.wantAnon, tt.wantFile)
			}
		})
	}
}

func TestProc_Cgroup(t *testing.T) {
	tests := []struct {
		name  string
		root  string
		want  Cgroup // Dir and LimitDir relative to root; Stat only checked for the keys given
		notes []string
	}{
		{
			name: "v2",
			root: "v2",
			want: Cgroup{
				Version: 2, Path: "/system.slice/kv.service", Dir: "sys/fs/cgroup/system.slice/kv.service",
				Limit: 512 << 20, LimitDir: "sys/fs/cgroup/system.slice/kv.service", Usage: 210763776,
				Stat: map[string]uint64{"anon": 193540096, "file": 12582912, "anon_thp": 2097152},
			},
		},
		{
			name: "v2 limit set by an ancestor",
			root: "v2-inherited",
			want: Cgroup{
				Version: 2, Path: "/kubepods.slice/pod7.slice/ctr.scope", Dir: "sys/fs/cgroup/kubepods.slice/pod7.slice/ctr.scope",
				Limit: 1 << 30, LimitDir: "sys/fs/cgroup/kubepods.slice/pod7.slice", Usage: 100 << 20,
				Stat: map[string]uint64{"anon": 90 << 20},
			},
		},
		{
			name: "v2 root cgroup",
			root: "v2-root",
			want: Cgroup{
				Version: 2, Path: "/", Dir: "sys/fs/cgroup", Unlimited: true,
				Stat: map[string]uint64{"anon": 1 << 30},
			},
			notes: []string{"no memory.max in", "no memory.current in"},
		},
		{
			name: "v2 in another cgroup namespace",
			root: "v2-namespace",
			want: Cgroup{
				Version: 2, Path: "/kubepods/burstable/pod9/abc123", Dir: "sys/fs/cgroup",
				Limit: 2 << 30, LimitDir: "sys/fs/cgroup", Usage: 700 << 20,
				Stat: map[string]uint64{"anon": 600 << 20},
			},
			notes: []string{"cgroup /kubepods/burstable/pod9/abc123 is not under"},
		},
		{
			name: "v1 unlimited",
			root: "v1",
			want: Cgroup{
				Version: 1, Path: "/docker/4f2a", Dir: "sys/fs/cgroup/memory/docker/4f2a", Unlimited: true, Usage: 50 << 20,
				Stat: map[string]uint64{"rss": 40 << 20, "cache": 8 << 20, "hierarchical_memory_limit": 9223372036854771712},
			},
		},
		{
			name: "hybrid: memory on v1, limit on an ancestor",
			root: "hybrid",
			want: Cgroup{
				Version: 1, Path: "/user.slice/session-3.scope", Dir: "sys/fs/cgroup/memory/user.slice/session-3.scope",
				Limit: 256 << 20, LimitDir: "sys/fs/cgroup/memory/user.slice", Usage: 150 << 20,
				Stat: map[string]uint64{"rss": 100 << 20},
			},
		},
		{
			name: "hybrid: memory on the unified hierarchy",
			root: "hybrid-unified",
			want: Cgroup{
				Version: 2, Path: "/app", Dir: "sys/fs/cgroup/unified/app",
				Limit: 64 << 20, LimitDir: "sys/fs/cgroup/unified/app", Usage: 32 << 20,
				Stat: map[string]uint64{"anon": 30000000},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join("testdata", "cgroup", tt.root)
			got, err := Proc{Root: root}.Cgroup(42)
			if err != nil {
				t.Fatal(err)
			}
			rel := func(dir string) string {
				if dir == "" {
					return ""
				}
				r, err := filepath.Rel(root, dir)
				if err != nil {
					t.Fatal(err)
				}
				return filepath.ToSlash(r)
			}
			if got.Version != tt.want.Version || got.Path != tt.want.Path || rel(got.Dir) != tt.want.Dir ||
				got.Limit != tt.want.Limit || rel(got.LimitDir) != tt.want.LimitDir || got.Unlimited != tt.want.Unlimited ||
				got.Usage != tt.want.Usage {
				t.Errorf("Cgroup\n got %+v\nwant %+v", got, tt.want)
			}
			for k, v := range tt.want.Stat {
				if got.Stat[k] != v {
					t.Errorf("Stat[%q] = %d, want %d", k, got.Stat[k], v)
				}
			}
			if len(got.Notes) != len(tt.notes) {
				t.Fatalf("Notes = %q, want %d like %q", got.Notes, len(tt.notes), tt.notes)
			}
			for i, n := range tt.notes {
				if !strings.Contains(got.Notes[i], n) {
					t.Errorf("Notes[%d] = %q, want it to contain %q", i, got.Notes[i], n)
				}
			}
		})
	}
}

func TestProc_Cgroup_errors(t *testing.T) {
	t.Run("malformed limit", func(t *testing.T) {
		root := filepath.Join("testdata", "cgroup", "malformed")
		_, err := Proc{Root: root}.Cgroup(42)
		want := "read " + filepath.Join(root, "sys", "fs", "cgroup", "app", "memory.max") + `: "lots" is not a number of bytes`
		if err == nil || err.Error() != want {
			t.Errorf("Cgroup error = %v, want %q", err, want)
		}
	})
	t.Run("no memory hierarchy", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "42", "cgroup"), "3:cpu:/x\n1:name=systemd:/x\n")
		_, err := Proc{Root: root}.Cgroup(42)
		if err == nil || !strings.Contains(err.Error(), "no cgroup v2 entry and no v1 memory controller") {
			t.Errorf("Cgroup error = %v, want one about the missing memory controller", err)
		}
	})
	t.Run("v1 not mounted", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "42", "cgroup"), "4:memory:/x\n")
		_, err := Proc{Root: root}.Cgroup(42)
		if err == nil || !strings.Contains(err.Error(), "no cgroup v1 memory hierarchy") {
			t.Errorf("Cgroup error = %v, want one about the missing hierarchy", err)
		}
	})
	t.Run("path escaping the hierarchy", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "proc", "42", "cgroup"), "0::/../../../proc\n")
		writeFile(t, filepath.Join(root, "sys", "fs", "cgroup", "cgroup.controllers"), "memory\n")
		cg, err := Proc{Root: root}.Cgroup(42)
		if err != nil {
			t.Fatal(err)
		}
		if cg.Dir != filepath.Join(root, "sys", "fs", "cgroup") || len(cg.Notes) == 0 {
			t.Errorf("Cgroup read %s (notes %q), want the hierarchy's root", cg.Dir, cg.Notes)
		}
	})
	t.Run("missing process", func(t *testing.T) {
		_, err := Proc{Root: "testdata/root"}.Cgroup(999)
		assertNotFound(t, err, 999)
	})
}

func TestProc_Cgroup_self(t *testing.T) {
	cg, err := Proc{}.Cgroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cgroup v%d %s in %s: limit %d (unlimited %v), usage %d; notes %q", cg.Version, cg.Path, cg.Dir, cg.Limit, cg.Unlimited, cg.Usage, cg.Notes)
	if cg.Version != 1 && cg.Version != 2 {
		t.Errorf("Version = %d", cg.Version)
	}
	if cg.Unlimited == (cg.Limit != 0) {
		t.Errorf("Unlimited %v with Limit %d", cg.Unlimited, cg.Limit)
	}
	// A process is charged to its cgroup: usage covers at least its own
	// resident anonymous memory, unless it is the root's (not counted).
	st, err := Proc{}.Status(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if cg.Usage != 0 && cg.Usage < st.RssAnon/2 {
		t.Errorf("cgroup usage %d is below half of this process's RssAnon %d", cg.Usage, st.RssAnon)
	}
}

func FuzzParseCgroupFile(f *testing.F) {
	f.Add(readTestdata(f, "cgroup", "hybrid", "proc", "42", "cgroup"))
	f.Add(readTestdata(f, "cgroup", "v2", "proc", "42", "cgroup"))
	f.Add([]byte("0::/\n::\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseCgroupFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Path, "/") || e.HierarchyID < 0 {
				t.Fatalf("bad entry %+v", e)
			}
		}
	})
}

func TestCgroup_WorkingSet(t *testing.T) {
	tests := []struct {
		name  string
		usage uint64
		stat  map[string]uint64
		want  uint64
	}{
		{"v2", 1000, map[string]uint64{"anon": 600, "file": 400, "inactive_file": 300, "active_file": 100}, 700},
		{"v1 hierarchical total first", 1000, map[string]uint64{"inactive_file": 50, "total_inactive_file": 300}, 700},
		{"v1 without totals", 1000, map[string]uint64{"inactive_file": 300}, 700},
		{"cache above usage", 100, map[string]uint64{"inactive_file": 300}, 0},
		{"no memory.stat", 1000, nil, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg := Cgroup{Usage: tt.usage, Stat: tt.stat}
			if got := cg.WorkingSet(); got != tt.want {
				t.Errorf("WorkingSet() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReadOOMKills(t *testing.T) {
	tests := []struct {
		name    string
		root    string
		want    uint64
		wantErr string
	}{
		// memory.oom_control of a v1 cgroup after one kill, recorded on
		// Linux 6.18; memory.events of a v2 cgroup in the kernel's format.
		{name: "v1", root: "v1", want: 1},
		{name: "v2", root: "v2", want: 3},
		{name: "v2 root cgroup", root: "v2-root", wantErr: "no such file"},
		{name: "v1 before Linux 4.13", root: "hybrid", wantErr: "no oom_kill counter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg, err := Proc{Root: filepath.Join("testdata", "cgroup", tt.root)}.Cgroup(42)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadOOMKills(cg)
			if tt.wantErr != "" {
				if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ReadOOMKills error = %v, want one matching fs.ErrNotExist with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ReadOOMKills = %d, %v, want %d", got, err, tt.want)
			}
		})
	}
}

func TestCgroupAt_readsWhatProcCgroupReads(t *testing.T) {
	for _, tree := range []string{"v1", "v2", "v2-inherited", "hybrid"} {
		t.Run(tree, func(t *testing.T) {
			root := filepath.Join("testdata", "cgroup", tree)
			byPID, err := Proc{Root: root}.Cgroup(42)
			if err != nil {
				t.Fatal(err)
			}
			mount := byPID.Dir
			for mount != root && !exists(filepath.Join(mount, "cgroup.controllers")) && filepath.Base(mount) != "memory" {
				mount = filepath.Dir(mount)
			}
			got, err := CgroupAt(mount, byPID.Dir)
			if err != nil {
				t.Fatalf("CgroupAt(%s, %s): %v", mount, byPID.Dir, err)
			}
			if !reflect.DeepEqual(got, byPID) {
				t.Errorf("CgroupAt(%s, %s) =\n%+v\nwant what Proc.Cgroup read:\n%+v", mount, byPID.Dir, got, byPID)
			}
		})
	}
}

func TestCgroupAt_errors(t *testing.T) {
	mount := filepath.Join("testdata", "cgroup", "v2", "sys", "fs", "cgroup")
	tests := []struct {
		name, dir, want string
		notExist        bool
	}{
		{"outside the mount", filepath.Join("testdata", "cgroup"), "not under the hierarchy", false},
		{"gone", filepath.Join(mount, "kubepods", "gone"), "no such file", true},
		{"a file", filepath.Join(mount, "cgroup.controllers"), "not a directory", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CgroupAt(mount, tt.dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CgroupAt(%s) = %v, want an error with %q", tt.dir, err, tt.want)
			}
			if errors.Is(err, fs.ErrNotExist) != tt.notExist {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, !tt.notExist, tt.notExist)
			}
		})
	}
}
