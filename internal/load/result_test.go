package load

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestResult_MarshalJSON(t *testing.T) {
	tests := []struct {
		name string
		res  Result
	}{
		{name: "empty", res: Result{}},
		{name: "full", res: Result{
			Requests: 1000, Completed: 990, Errors: 20, Dropped: 4,
			Duration: 10*time.Second + 250*time.Millisecond, TargetRate: 100, Rate: 96.58536585365853,
			StatusCodes: map[int]uint64{200: 980, 404: 3, 500: 2, 503: 5},
			ErrorKinds:  map[string]uint64{ErrorKindTimeout: 7, ErrorKindConnectionReset: 3, "status_4xx": 3, "status_5xx": 7},
			BytesIn:     123456, BytesOut: 4000,
			Latency: LatencySummary{
				Min: 120 * time.Microsecond, Mean: 3500 * time.Microsecond, P50: 2100 * time.Microsecond,
				P90: 8 * time.Millisecond, P99: 41 * time.Millisecond, P999: 250 * time.Millisecond, Max: 2*time.Second + 1,
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.MarshalIndent(tt.res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden(t, filepath.Join("testdata", "result-"+tt.name+".json"), got)

			var back Result
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			want := tt.res
			if want.StatusCodes == nil {
				want.StatusCodes = map[int]uint64{}
			}
			if want.ErrorKinds == nil {
				want.ErrorKinds = map[string]uint64{}
			}
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", back, want)
			}
		})
	}
}

// golden compares got with the file at path, or rewrites the file with
// -update. On a mismatch it writes got beside it with a .got suffix.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		if err := os.WriteFile(path+".got", got, 0o644); err != nil {
			t.Error(err)
		}
		t.Errorf("%s differs from the output, written to %s.got:\n got %s\nwant %s", path, path, got, want)
	}
}
