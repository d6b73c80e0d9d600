package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/heapscope/heapscope/internal/goldenfile"
	"github.com/heapscope/heapscope/internal/result"
)

func TestLoad_golden(t *testing.T) {
	open := &result.Load{
		Model: "open", Protocol: "HTTP/1.1", Method: "GET", URL: "http://127.0.0.1:8080/items/{rand:1000}",
		RequestedRate: 5000, RampSeconds: 2, MaxInFlight: 512, PeakInFlight: 37, Connections: 41,
		DurationSeconds: 10, ElapsedSeconds: 10.002, Requests: 45000, Completed: 44990, Errors: 25, Dropped: 0,
		AchievedRate: 4500, SuccessRatio: 0.99944, BytesIn: 6_300_000, BytesOut: 3_150_000,
		BytesInPerSecond: 630_000, BytesOutPerSecond: 315_000,
		StatusCodes:    map[string]uint64{"200": 44975, "503": 15},
		ErrorKinds:     map[string]uint64{"status_5xx": 15, "timeout": 10},
		LatencySeconds: result.Latency{Min: 0.000041, Mean: 0.00042, P50: 0.00031, P90: 0.00072, P99: 0.0031, P999: 0.012, Max: 0.0471},
		Lag:            &result.LoadLag{MeanSeconds: 0.00003, P99Seconds: 0.0011, MaxSeconds: 0.0042},
	}
	behind := *open
	behind.Lag = &result.LoadLag{MeanSeconds: 0.2, P99Seconds: 0.9, MaxSeconds: 1.2, FellBehind: true}
	behind.Dropped, behind.AchievedRate, behind.RampSeconds = 3000, 4200, 0
	held := *open
	held.Lag = &result.LoadLag{MeanSeconds: 1.2, P99Seconds: 3.6, MaxSeconds: 3.6, FellBehind: true, HeldBack: "max_in_flight"}
	held.MaxInFlight, held.PeakInFlight, held.Connections, held.Opened = 20, 20, 20, 59
	held.Requests, held.Completed, held.Errors, held.Dropped, held.AchievedRate, held.SuccessRatio = 60, 0, 60, 440, 12, 0
	held.StatusCodes, held.ErrorKinds = nil, map[string]uint64{"timeout": 40, "unfinished": 20}
	late := *open
	late.Lag = &result.LoadLag{MeanSeconds: 0.001, P99Seconds: 0.014, MaxSeconds: 0.025, FellBehind: true}
	closed := &result.Load{
		Model: "closed", Protocol: "HTTP/2", Method: "POST", URL: "https://127.0.0.1:8443/items", Targets: 3,
		Connections: 64, NoKeepAlive: true, DurationSeconds: 5, ElapsedSeconds: 5.001, Interrupted: true,
		Requests: 200000, Completed: 200000, AchievedRate: 40000, SuccessRatio: 1,
		BytesIn: 25_000_000, BytesOut: 12_000_000, BytesInPerSecond: 5_000_000, BytesOutPerSecond: 2_400_000,
		StatusCodes:    map[string]uint64{"201": 200000},
		LatencySeconds: result.Latency{Min: 0.00011, Mean: 0.0016, P50: 0.0015, P90: 0.0021, P99: 0.0038, P999: 0.0091, Max: 0.021},
		Series: []result.LoadSecond{
			{Second: 0, Sent: 40010, Done: 39990, LatencyP50Seconds: 0.0015, LatencyP90Seconds: 0.002, LatencyP99Seconds: 0.0037, LatencyMaxSeconds: 0.02},
			{Second: 1, Sent: 39990, Done: 40010, Errors: 0, LatencyP50Seconds: 0.0016, LatencyP90Seconds: 0.0022, LatencyP99Seconds: 0.0039, LatencyMaxSeconds: 0.021},
		},
	}
	tests := []struct {
		name   string
		load   *result.Load
		format Format
	}{
		{"open.txt", open, FormatText},
		{"open-behind.txt", &behind, FormatText},
		{"open-late.txt", &late, FormatText},
		{"open-held.txt", &held, FormatText},
		{"closed-series.txt", closed, FormatText},
		{"closed-series.md", closed, FormatMarkdown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tt.format, Load{Load: tt.load}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "load", tt.name), b.Bytes())
		})
	}
}
