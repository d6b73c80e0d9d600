package trigger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRemoteSample(t *testing.T) {
	// /metrics of the leaky cache example started with GOMEMLIMIT=256MiB,
	// as served (client_golang's Go and process collectors).
	recorded, err := os.ReadFile(filepath.Join("testdata", "metrics", "leakycache.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		metrics string
		limit   uint64
		want    Sample
	}{
		{
			name:    "recorded",
			metrics: string(recorded),
			limit:   512 << 20,
			want: Sample{
				Known: KnownRSS | KnownMemory | KnownMemoryLimit | KnownStart | KnownGoroutines | KnownGoMemory | KnownGoMemLimit,
				RSS:   10727424, Memory: 10727424, MemoryLimit: 512 << 20,
				Start:      time.Unix(1795622183, 910e6),
				Goroutines: 9,
				GoMemory:   7821576 - 2015232,
				GoMemLimit: 256 << 20,
			},
		},
		{
			name:    "no limit configured, no GOMEMLIMIT",
			metrics: "process_resident_memory_bytes 4e+07\ngo_gc_gomemlimit_bytes 9.223372036854776e+18\n",
			want:    Sample{Known: KnownRSS | KnownMemory, RSS: 4e7, Memory: 4e7},
		},
		{
			name:    "not a Go service",
			metrics: "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 123456\nprocess_start_time_seconds 1700000000\n",
			limit:   1 << 30,
			want: Sample{Known: KnownRSS | KnownMemory | KnownMemoryLimit | KnownStart, RSS: 123456, Memory: 123456,
				MemoryLimit: 1 << 30, Start: time.Unix(1700000000, 0)},
		},
		{
			name:    "unreadable values stay unknown",
			metrics: "process_resident_memory_bytes -1\ngo_goroutines NaN\ngo_memstats_sys_bytes 10\ngo_memstats_heap_released_bytes 20\nprocess_start_time_seconds 0\n",
		},
		{
			name:    "empty",
			metrics: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RemoteSample([]byte(tt.metrics), tt.limit)
			if !sameSample(got, tt.want) {
				t.Errorf("RemoteSample\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// sameSample compares two samples field by field, times by Equal.
func sameSample(a, b Sample) bool {
	return a.Time.Equal(b.Time) && a.Known == b.Known && a.PID == b.PID && a.Start.Equal(b.Start) &&
		a.RSS == b.RSS && a.Memory == b.Memory && a.MemoryLimit == b.MemoryLimit &&
		a.CgroupUsage == b.CgroupUsage && a.Cgroup == b.Cgroup && a.OOMKills == b.OOMKills &&
		a.GoMemLimit == b.GoMemLimit && a.GoMemory == b.GoMemory && a.HeapAfterGC == b.HeapAfterGC &&
		a.Goroutines == b.Goroutines && a.GCCPUFraction == b.GCCPUFraction && a.LastGC.Equal(b.LastGC) &&
		len(a.Warnings) == len(b.Warnings)
}

func TestRemoteSample_restart(t *testing.T) {
	before := RemoteSample([]byte("process_start_time_seconds 1.70000000012e+09\n"), 0)
	same := RemoteSample([]byte("process_start_time_seconds 1.70000000051e+09\n"), 0) // rounded otherwise
	after := RemoteSample([]byte("process_start_time_seconds 1.70000009e+09\n"), 0)
	if r := DetectRestart(before, same); r.Restarted {
		t.Errorf("start times 0.39 s apart: %+v", r)
	}
	if r := DetectRestart(before, after); !r.Restarted || !strings.Contains(r.Reason, "start time changed") {
		t.Errorf("start time 90 s later: %+v", r)
	}
}
