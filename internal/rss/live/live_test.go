package live_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/rss/live"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/target"
)

// fakeProc is a process read from recorded smaps, with errors where a
// test wants them; calls records what was read, in order.
type fakeProc struct {
	smaps                         string
	ports                         []int
	portsErr, smapsErr, statusErr error
	cgroupErr, exeErr             error
	calls                         *[]string
}

func (p fakeProc) record(call string) {
	if p.calls != nil {
		*p.calls = append(*p.calls, call)
	}
}

func (p fakeProc) ScanSmaps(pid int, fn func(*sysmem.Mapping)) error {
	p.record("smaps")
	if p.smapsErr != nil {
		return p.smapsErr
	}
	f, err := os.Open(p.smaps)
	if err != nil {
		return err
	}
	defer f.Close()
	return sysmem.ScanSmaps(f, fn)
}

func (p fakeProc) Status(int) (sysmem.Status, error) {
	p.record("status")
	return sysmem.Status{VmRSS: 1 << 20}, p.statusErr
}

func (p fakeProc) Cgroup(int) (sysmem.Cgroup, error) {
	p.record("cgroup")
	return sysmem.Cgroup{Version: 2, Unlimited: true}, p.cgroupErr
}

func (p fakeProc) Exe(int) (string, error) { p.record("exe"); return "/srv/kvservice", p.exeErr }

func (p fakeProc) ListeningPorts(int) ([]int, error) {
	p.record("ports")
	return p.ports, p.portsErr
}

func TestGather(t *testing.T) {
	const smaps = "../../sysmem/testdata/smaps/service.txt"
	ms := &gcstats.MemStats{HeapSys: 103 << 20, Sys: 110 << 20}
	var calls []string
	given := func(context.Context) (*gcstats.MemStats, error) {
		calls = append(calls, "memstats")
		return ms, nil
	}
	found := func(_ context.Context, ports []int) (*gcstats.MemStats, string, error) {
		calls = append(calls, fmt.Sprint("find ", ports))
		return ms, "http://127.0.0.1:6060/debug/pprof/", nil
	}
	notFound := func(context.Context, []int) (*gcstats.MemStats, string, error) {
		return nil, "", errors.New("none of the process's listening ports (8080) serves pprof")
	}
	tests := []struct {
		name       string
		proc       fakeProc
		look       live.Lookup
		wantCalls  string // in order, for the cases that record them
		wantURL    string
		discovered bool
		unknown    string // a substring of RuntimeUnknown
		warnings   []string
	}{
		{
			name: "given pprof, read before the mappings", proc: fakeProc{smaps: smaps},
			look:      live.Lookup{Given: given, GivenURL: "http://127.0.0.1:6060/debug/pprof/", Find: found},
			wantCalls: "memstats exe smaps status cgroup", wantURL: "http://127.0.0.1:6060/debug/pprof/",
		},
		{
			name: "found on a listening port", proc: fakeProc{smaps: smaps, ports: []int{8080, 6060}}, look: live.Lookup{Find: found},
			wantCalls: "ports find [8080 6060] exe smaps status cgroup", wantURL: "http://127.0.0.1:6060/debug/pprof/", discovered: true,
		},
		{
			name: "no port serves pprof", proc: fakeProc{smaps: smaps, ports: []int{8080}}, look: live.Lookup{Find: notFound},
			unknown: "none of the process's listening ports (8080) serves pprof; give --target URL",
		},
		{
			name: "listens on no port", proc: fakeProc{smaps: smaps}, look: live.Lookup{Find: found},
			unknown: "the process listens on no TCP port of a loopback or wildcard address; give --target URL",
		},
		{
			name: "ports unreadable", proc: fakeProc{smaps: smaps, portsErr: fs.ErrPermission}, look: live.Lookup{Find: found},
			unknown: "its listening ports could not be listed (permission denied); give --target URL",
		},
		{
			name: "not looked for", proc: fakeProc{smaps: smaps},
			unknown: "not looked for (--no-discover); give --target URL",
		},
		{
			name: "status, cgroup and exe unreadable are warnings",
			proc: fakeProc{smaps: smaps, statusErr: errors.New("read /proc/42/status: odd"), cgroupErr: errors.New("no v2 entry"), exeErr: errors.New("read /proc/42/exe: odd")},
			look: live.Lookup{Given: given}, wantURL: "",
			warnings: []string{"read /proc/42/exe: odd", "read /proc/42/status: odd", "cgroup: no v2 entry"},
		},
		{
			name: "an exe that may not be read is no warning", proc: fakeProc{smaps: smaps, exeErr: fs.ErrPermission},
			look: live.Lookup{Given: given},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = nil
			tt.proc.calls = &calls
			in, err := live.Gather(t.Context(), tt.proc, tt.look, 42)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantCalls != "" && strings.Join(calls, " ") != tt.wantCalls {
				t.Errorf("calls %q, want %q", strings.Join(calls, " "), tt.wantCalls)
			}
			if in.PID != 42 || in.Mappings.Total.Mappings == 0 {
				t.Errorf("input %+v: no mappings", in)
			}
			if tt.unknown != "" {
				if in.MemStats != nil || !strings.Contains(in.RuntimeUnknown, tt.unknown) || !strings.HasSuffix(in.RuntimeUnknown, "give --target URL, the process's pprof") {
					t.Errorf("runtime %v, unknown %q, want unknown with %q and how to give them", in.MemStats, in.RuntimeUnknown, tt.unknown)
				}
			} else if in.MemStats != ms || in.MemStatsURL != tt.wantURL || in.MemStatsDiscovered != tt.discovered || in.RuntimeUnknown != "" {
				t.Errorf("runtime from %q (discovered %v, unknown %q), want %q (discovered %v)", in.MemStatsURL, in.MemStatsDiscovered, in.RuntimeUnknown, tt.wantURL, tt.discovered)
			}
			if fmt.Sprint(in.Warnings) != fmt.Sprint(tt.warnings) {
				t.Errorf("warnings %q, want %q", in.Warnings, tt.warnings)
			}
			if (in.Status == nil) != (tt.proc.statusErr != nil) || (in.Cgroup == nil) != (tt.proc.cgroupErr != nil) {
				t.Errorf("status %v, cgroup %v: want them unless unreadable", in.Status, in.Cgroup)
			}
		})
	}
}

func TestGather_errors(t *testing.T) {
	failing := func(context.Context) (*gcstats.MemStats, error) {
		return nil, errors.New("fetch MemStats: cannot reach http://127.0.0.1:1/debug/pprof/heap?debug=1")
	}
	tests := []struct {
		name string
		proc fakeProc
		look live.Lookup
		is   error
		want string
	}{
		{"given pprof fails", fakeProc{}, live.Lookup{Given: failing}, nil, "rss of process 42: fetch MemStats: cannot reach"},
		{"smaps not readable", fakeProc{smapsErr: fmt.Errorf("read /proc/42/smaps: %w", fs.ErrPermission)}, live.Lookup{}, fs.ErrPermission,
			"rss of process 42: read /proc/42/smaps: permission denied (run as the process's user, or as root)"},
		{"process gone", fakeProc{smapsErr: fmt.Errorf("process 42 not found: %w", fs.ErrNotExist)}, live.Lookup{}, fs.ErrNotExist,
			"rss of process 42: process 42 not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := live.Gather(t.Context(), tt.proc, tt.look, 42)
			if err == nil || err.Error() != tt.want && !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
		})
	}
}

func TestNewLookup(t *testing.T) {
	tests := []struct {
		name              string
		opts              target.Options
		discover          bool
		given, find       bool
		givenURL, wantErr string
	}{
		{name: "named pprof", opts: target.Options{BaseURL: "http://127.0.0.1:6060", PprofPath: "/admin/pprof"}, discover: true, given: true, givenURL: "http://127.0.0.1:6060/admin/pprof/"},
		{name: "discovered", discover: true, find: true},
		{name: "neither", discover: false},
		{name: "bad URL", opts: target.Options{BaseURL: "ftp://x"}, wantErr: "scheme must be http or https"},
		{name: "bad timeout", opts: target.Options{BaseURL: "http://h", Timeout: -1}, wantErr: "Timeout -1ns: give a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			look, err := live.NewLookup(tt.opts, tt.discover)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (look.Given != nil) != tt.given || (look.Find != nil) != tt.find || look.GivenURL != tt.givenURL {
				t.Errorf("lookup given %v (%q), find %v; want given %v (%q), find %v",
					look.Given != nil, look.GivenURL, look.Find != nil, tt.given, tt.givenURL, tt.find)
			}
		})
	}
}

func TestSupported(t *testing.T) {
	if err := live.Supported(); (err == nil) != (runtime.GOOS == "linux") || err != nil && !strings.Contains(err.Error(), "Linux only") {
		t.Errorf("Supported() = %v on %s", err, runtime.GOOS)
	}
}
