package allocbench

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/option"
)

func TestRunOptions_Validate(t *testing.T) {
	valid := RunOptions{MatrixOptions: MatrixOptions{Count: 1}, Live: 8 << 20, Analysis: Options{Alpha: 0.05, MinEffect: 0.25}}
	with := func(f func(*RunOptions)) RunOptions { o := valid; f(&o); return o }
	tests := []struct {
		name  string
		opts  RunOptions
		field string // "" for valid options
		want  string
	}{
		{"valid", valid, "", ""},
		{"largest live", with(func(o *RunOptions) { o.Live = 4096 << 20 }), "", ""},
		{"zero alpha", with(func(o *RunOptions) { o.Analysis.Alpha = 0 }), "Analysis.Alpha", "Analysis.Alpha 0: give a level between 0 and 1, such as 0.05"},
		{"zero min effect", with(func(o *RunOptions) { o.Analysis.MinEffect = 0 }), "Analysis.MinEffect", "Analysis.MinEffect 0: give a relative difference above 0, such as 0.25"},
		{"bad confidence", with(func(o *RunOptions) { o.Analysis.Confidence = 1 }), "Analysis.Confidence", "Analysis.Confidence 1: give a level"},
		{"zero count", with(func(o *RunOptions) { o.Count = 0 }), "Count", "Count 0: give a number ≥ 1"},
		{"too little live", with(func(o *RunOptions) { o.Live = 4 << 20 }), "Live", "Live 4: give a number of MiB from 8 to 4096"},
		{"too much live", with(func(o *RunOptions) { o.Live = 5000 << 20 }), "Live", "Live 5000: give a number of MiB from 8 to 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var oe *option.Error
			if !errors.As(err, &oe) || oe.Field != tt.field || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want the %s error %q…", err, tt.field, tt.want)
			}
		})
	}
}

func TestAnalyseSaved(t *testing.T) {
	r, err := Analyse(regressionSamples(5), []Pattern{sparsePtr, sparseNoptr}, threeChains, 64<<20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := AnalyseSaved(bytes.NewReader(mustJSON(t, r)), Options{MinEffect: 100})
	if err != nil {
		t.Fatal(err)
	}
	if again.MinEffect != 100 || len(again.Patterns) != 2 || again.Patterns[0].Flagged() {
		t.Errorf("analysed again with a min effect of 100: %v, %d patterns, first flagged %v: want the new threshold and nothing flagged",
			again.MinEffect, len(again.Patterns), again.Patterns[0].Flagged())
	}
	if _, err := AnalyseSaved(strings.NewReader("{}"), Options{}); err == nil {
		t.Error("AnalyseSaved of an empty report: no error")
	}
	if _, err := AnalyseSaved(bytes.NewReader(mustJSON(t, r)), Options{Alpha: 2}); err == nil || !strings.Contains(err.Error(), "Alpha 2") {
		t.Errorf("AnalyseSaved with alpha 2: %v, want the option's error", err)
	}
}

func TestMatrixRun_Err(t *testing.T) {
	if err := (&MatrixRun{Samples: make([]Sample, 3)}).Err(); err != nil {
		t.Errorf("no failure: %v", err)
	}
	first := errors.New("child exited 2")
	err := (&MatrixRun{Samples: make([]Sample, 3), Failures: []error{first, errors.New("later")}}).Err()
	if err == nil || err.Error() != "2 of 5 runs failed; the first: child exited 2" || !errors.Is(err, first) {
		t.Errorf("Err() = %v, want the count and the first failure", err)
	}
}
