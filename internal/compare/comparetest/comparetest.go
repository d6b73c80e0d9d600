// Package comparetest builds the inputs of compare.Compare for tests:
// result.Run values with chosen headline figures and allocs-delta profiles
// with chosen sites, deterministic so rendered comparisons can be golden.
package comparetest

import (
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/result"
)

// Start is the fixed start of every run built here.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// RunOptions chooses a run's figures. Zero Requests means no load.
type RunOptions struct {
	URL      string
	Duration float64
	Requests uint64
	Rate     float64
	// HeapInuse, Sys and RSS are bytes; AllocRate bytes per second.
	HeapInuse, Sys, RSS uint64
	AllocRate           float64
	GCPerSecond         float64
	PauseP99, PauseMax  float64
	GCCPU               float64
	LatencyP50          float64
	LatencyP99          float64
	GoVersion           string
	Dependencies        []result.Module
	Env                 map[string]string
	Findings            []result.Finding
	Status              result.Status
}

// Run returns a result.json value with the options' figures. Bytes and
// objects per request are left for Sample to fill from the sites.
func Run(o RunOptions) *result.Run {
	if o.URL == "" {
		o.URL = "http://127.0.0.1:8080"
	}
	if o.Duration == 0 {
		o.Duration = 10
	}
	if o.Status == "" {
		o.Status = result.StatusComplete
	}
	r := &result.Run{
		SchemaVersion: result.SchemaVersion,
		Status:        o.Status,
		Heapscope:     result.Tool{Version: "test", GoVersion: "go1.26.0"},
		Target: result.Target{URL: o.URL, PprofURL: o.URL + "/debug/pprof/", Local: o.GoVersion != "",
			GoVersion: o.GoVersion, Dependencies: o.Dependencies, Env: o.Env},
		Window: result.Window{Start: Start, End: Start.Add(time.Duration(o.Duration * float64(time.Second))), DurationSeconds: o.Duration},
		MemStats: result.MemStats{
			HeapInuseBytes: o.HeapInuse, SysBytes: o.Sys,
			AllocatedBytesPerSecond: o.AllocRate,
			GCCyclesPerSecond:       o.GCPerSecond, GCPauseP99Seconds: o.PauseP99, GCPauseMaxSeconds: o.PauseMax,
			GCPausesCovered: int(o.GCPerSecond*o.Duration) + 1, GCCPUFraction: o.GCCPU, GCCPUFractionScope: "window",
		},
		RSS:      result.RSS{Source: "unknown"},
		Findings: o.Findings,
	}
	if o.RSS > 0 {
		r.RSS = result.RSS{Source: "proc", RSSBytes: o.RSS}
	}
	if r.Findings == nil {
		r.Findings = []result.Finding{}
	}
	if o.Requests > 0 {
		r.Load = &result.Load{Model: "open", Method: "GET", URL: o.URL + "/process?id={rand:1000}", RequestedRate: o.Rate,
			DurationSeconds: o.Duration, Requests: o.Requests, Completed: o.Requests,
			AchievedRate: float64(o.Requests) / o.Duration, SuccessRatio: 1,
			LatencySeconds: result.Latency{P50: o.LatencyP50, P99: o.LatencyP99}}
		r.PerRequest = &result.PerRequest{Requests: o.Requests}
	}
	return r
}

// Alloc is one site of an allocs-delta profile: what the window allocated
// at file:line in function.
type Alloc struct {
	Function, File string
	Line           int64
	Bytes, Objects int64
}

// Allocs builds an allocs-delta profile as a run writes it: alloc_objects
// and alloc_space, each site called from main.main.
func Allocs(allocs ...Alloc) *profile.Profile {
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		DefaultSampleType: "alloc_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            512 * 1024,
	}
	mainFn := &profile.Function{ID: 1, Name: "main.main", Filename: "/src/app/main.go"}
	mainLoc := &profile.Location{ID: 1, Line: []profile.Line{{Function: mainFn, Line: 10}}}
	p.Function = append(p.Function, mainFn)
	p.Location = append(p.Location, mainLoc)
	funcs := map[string]*profile.Function{}
	for _, a := range allocs {
		f := funcs[a.Function]
		if f == nil {
			f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: a.Function, Filename: a.File}
			funcs[a.Function] = f
			p.Function = append(p.Function, f)
		}
		loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f, Line: a.Line}}}
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc, mainLoc}, Value: []int64{a.Objects, a.Bytes}})
	}
	return p
}

// Sample pairs a run with its allocs-delta profile and fills the run's
// bytes and objects per request from the profile's totals.
func Sample(label string, r *result.Run, allocs ...Alloc) compare.Sample {
	s := compare.Sample{Label: label, Run: r}
	if len(allocs) == 0 {
		return s
	}
	s.Allocs = Allocs(allocs...)
	if r.PerRequest != nil {
		var bytes, objects int64
		for _, a := range allocs {
			bytes += a.Bytes
			objects += a.Objects
		}
		r.PerRequest.BytesPerRequest = float64(bytes) / float64(r.PerRequest.Requests)
		r.PerRequest.ObjectsPerRequest = float64(objects) / float64(r.PerRequest.Requests)
	}
	return s
}
