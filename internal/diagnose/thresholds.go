package diagnose

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Thresholds are every number that decides whether a check fires and how
// severe its finding is. DefaultThresholds holds the defaults and the
// reasons for them; a YAML file (ParseThresholds) overrides any of them,
// with the same names as the yaml tags below. docs/findings.md documents
// the file.
type Thresholds struct {
	Leak       LeakThresholds       `yaml:"leak"`
	Goroutines GoroutineThresholds  `yaml:"goroutines"`
	HotSpot    HotSpotThresholds    `yaml:"hot_spot"`
	Patterns   PatternThresholds    `yaml:"patterns"`
	GC         GCThresholds         `yaml:"gc"`
	RSS        RSSThresholds        `yaml:"rss"`
	Contention ContentionThresholds `yaml:"contention"`
}

// Series are the thresholds that tell steady growth from warm-up, noise
// and a sawtooth, for heap and goroutine series alike.
type Series struct {
	// MinSnapshots is the shortest series a growth check looks at.
	MinSnapshots int `yaml:"min_snapshots"`
	// MinR2 is the least fit (R²) of the least-squares line.
	MinR2 float64 `yaml:"min_r2"`
	// MinRisingSteps is the least share of steps between consecutive
	// snapshots that go up.
	MinRisingSteps float64 `yaml:"min_rising_steps"`
	// LateSlopeRatio is the least slope of the series' later half, as a
	// share of the whole series' slope.
	LateSlopeRatio float64 `yaml:"late_slope_ratio"`
}

// LeakThresholds drive leak.inuse-growth.
type LeakThresholds struct {
	Series `yaml:",inline"`
	// MinGrowthBytes is the least growth over the series for a site to
	// count; a site must also grow by at least two heap sampling periods
	// (MemProfileRate), below which its figure is sampling noise.
	MinGrowthBytes float64 `yaml:"min_growth_bytes"`
	// MinLiveGrowthBytes and MinLiveGrowthShare are the least rise of the
	// exact live heap (HeapAlloc after each forced GC) across a window,
	// in bytes and as a share of its first figure, for it to count as
	// growth: below them it is what requests in flight hold at the moment
	// of the snapshot.
	MinLiveGrowthBytes float64 `yaml:"min_live_growth_bytes"`
	MinLiveGrowthShare float64 `yaml:"min_live_growth_share"`
	// SlopeBytesPerMinute rates the growth.
	SlopeBytesPerMinute Levels `yaml:"slope_bytes_per_minute"`
	// HighWithinHours and MediumWithinHours raise a finding when the
	// growth reaches a known memory limit that soon.
	HighWithinHours   float64 `yaml:"high_within_hours"`
	MediumWithinHours float64 `yaml:"medium_within_hours"`
	// MaxSites caps the findings.
	MaxSites int `yaml:"max_sites"`
}

// GoroutineThresholds drive leak.goroutine-growth.
type GoroutineThresholds struct {
	Series `yaml:",inline"`
	// MinGrowth is the least growth in goroutines of one stack.
	MinGrowth float64 `yaml:"min_growth"`
	// PerMinute rates the growth in goroutines per minute.
	PerMinute Levels `yaml:"per_minute"`
	// MaxStacks caps the findings.
	MaxStacks int `yaml:"max_stacks"`
}

// HotSpotThresholds drive alloc.hot-spot.
type HotSpotThresholds struct {
	// MaxSites caps the findings.
	MaxSites int `yaml:"max_sites"`
	// MinShare is the least share of the window's allocated bytes or
	// objects for a site to be listed at all; its severity comes from
	// the absolute figures below, never from the share.
	MinShare float64 `yaml:"min_share"`
	// MinSamples is the least number of samples behind a hot spot
	// shown by default: below it the site's share is chance.
	MinSamples float64 `yaml:"min_samples"`
	// BytesPerSecond, ObjectsPerSecond and GCCores (the site's estimated
	// GC cost in cores) rate a site; the highest level wins.
	BytesPerSecond   Levels `yaml:"bytes_per_second"`
	ObjectsPerSecond Levels `yaml:"objects_per_second"`
	GCCores          Levels `yaml:"gc_cores"`
	// BytesPerRequest and ObjectsPerRequest raise a site's severity by
	// one level at most, and only when its rate is at least low: a costly
	// request that comes once a minute costs nothing.
	BytesPerRequest   Levels `yaml:"bytes_per_request"`
	ObjectsPerRequest Levels `yaml:"objects_per_request"`
}

// PatternThresholds drive the pattern.* findings.
type PatternThresholds struct {
	// MinShare is the least share of the window's allocated bytes or
	// objects, or of CPU samples, at a site for a pattern there to be
	// reported.
	MinShare float64 `yaml:"min_share"`
	// LargeAllocBytes is the object size from which an allocation is
	// large: the runtime allocates it in its own span and zeroes it whole.
	LargeAllocBytes float64 `yaml:"large_alloc_bytes"`
}

// GCThresholds drive gc.pressure and gc.pause.
type GCThresholds struct {
	// CyclesPerSecond counts the cycles the runtime started by itself.
	CyclesPerSecond Levels `yaml:"cycles_per_second"`
	// CPUShare is the GC's share of the process's CPU over the window.
	CPUShare Levels `yaml:"cpu_share"`
	// PauseP99Seconds rates stop-the-world pauses.
	PauseP99Seconds Levels `yaml:"pause_p99_seconds"`
	// MinPauses is the least number of pauses for gc.pause to go above
	// low: the p99 of a handful of pauses is their maximum.
	MinPauses int `yaml:"min_pauses"`
}

// RSSThresholds drive rss.breakdown.
type RSSThresholds struct {
	// GapShare and MinGapBytes: a part of RSS the Go heap does not
	// explain (memory the runtime does not know, idle heap not returned)
	// raises the finding to low when it is at least GapShare of RSS and
	// MinGapBytes, to medium at twice both.
	GapShare    float64 `yaml:"gap_share"`
	MinGapBytes float64 `yaml:"min_gap_bytes"`
	// HeadroomHigh and HeadroomMedium: the cgroup's usage within this
	// share of its limit makes the finding high or medium.
	HeadroomHigh   float64 `yaml:"headroom_high"`
	HeadroomMedium float64 `yaml:"headroom_medium"`
}

// ContentionThresholds drive contention.lock.
type ContentionThresholds struct {
	// DelayPerSecond rates a site by the seconds goroutines spent waiting
	// there per second of the window: the average number of goroutines
	// waiting.
	DelayPerSecond Levels `yaml:"delay_per_second"`
	// MaxSites caps the findings.
	MaxSites int `yaml:"max_sites"`
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

// DefaultThresholds returns the thresholds heapscope uses unless told
// otherwise. The reasons:
func DefaultThresholds() Thresholds {
	series := Series{
		// Two points always fit a line; three are the fewest that can
		// show a trend and its later half.
		MinSnapshots: 3,
		// A steady leak fits a line closely (R² near 1 on real services);
		// noise and a sawtooth do not. Three points fit a line easily,
		// so the bar is high: per-connection state that follows a
		// closed-model load reaches 0.86 over three snapshots.
		MinR2: 0.9,
		// A leak rises at most steps; an evicting cache falls as often as
		// it rises.
		MinRisingSteps: 0.7,
		// Warm-up (a cache filling once, then flat) grows early and not
		// late: the later half must keep at least half the pace.
		LateSlopeRatio: 0.5,
	}
	return Thresholds{
		Leak: LeakThresholds{
			Series: series,
			// Below 16 KiB a site's growth is a few objects.
			MinGrowthBytes: 16 * kib,
			// What a few hundred requests in flight hold, and 5 % of the
			// heap: growth below both is the moment's traffic.
			MinLiveGrowthBytes: 256 * kib,
			MinLiveGrowthShare: 0.05,
			SlopeBytesPerMinute: Levels{
				// Any steady growth above the noise floor is worth
				// knowing.
				Low: 1,
				// 32 KiB/min is 45 MiB a day: a small container's
				// headroom within weeks.
				Medium: 32 * kib,
				// 512 KiB/min is 720 MiB a day: a 1 GiB container dies
				// within a day or two of its start.
				High: 512 * kib,
			},
			// A limit reached within a day is an outage before the next
			// deploy; within a week, before the next few.
			HighWithinHours:   24,
			MediumWithinHours: 7 * 24,
			MaxSites:          5,
		},
		Goroutines: GoroutineThresholds{
			Series: series,
			// Ten goroutines more is beyond the ebb and flow of a
			// server's connections in a short window.
			MinGrowth: 10,
			// Each goroutine holds at least a 2 KiB stack plus what it
			// references; 100 a minute is 144,000 a day.
			PerMinute: Levels{Low: 1, Medium: 10, High: 100},
			MaxStacks: 3,
		},
		HotSpot: HotSpotThresholds{
			MaxSites: 8,
			// Sites under 2 % of the window's allocations are left to
			// the top tables.
			MinShare: 0.02,
			// 4 samples put a share within about ±50 %.
			MinSamples: 4,
			// 1 MiB/s makes a GC cycle every few seconds on a small heap;
			// 16 MiB/s several a second; 128 MiB/s keeps a core busy
			// allocating and collecting.
			BytesPerSecond: Levels{Low: 1 * mib, Medium: 16 * mib, High: 128 * mib},
			// Each object costs about 20–50 ns to allocate and more to
			// scan: 100k/s is a few percent of a core, 1M/s tens.
			ObjectsPerSecond: Levels{Low: 10_000, Medium: 100_000, High: 1_000_000},
			// The site's estimated share of GC work, in cores.
			GCCores: Levels{Low: 0.02, Medium: 0.1, High: 0.5},
			// A request that allocates 16 KiB or 100 objects is typical
			// of net/http and JSON; ten times that is worth a look.
			BytesPerRequest:   Levels{Low: 16 * kib, Medium: 256 * kib, High: 4 * mib},
			ObjectsPerRequest: Levels{Low: 100, Medium: 1000, High: 10_000},
		},
		Patterns: PatternThresholds{
			// A pattern at a site with less than 1 % of the window's
			// allocations or CPU is not worth changing code for.
			MinShare: 0.01,
			// The runtime's size classes end at 32 KiB: larger objects
			// get spans of their own, zeroed in full when they hold
			// pointers.
			LargeAllocBytes: 32 * kib,
		},
		GC: GCThresholds{
			// Every 500 ms is busy, every 100 ms is what the issue tracker
			// calls GC thrash, every 20 ms leaves little time between.
			CyclesPerSecond: Levels{Low: 2, Medium: 10, High: 50},
			// The pacer aims at 25 % of GOMAXPROCS during a cycle; 5 %
			// over a window is noticeable, 25 % is all of it, always.
			CPUShare: Levels{Low: 0.05, Medium: 0.10, High: 0.25},
			// Go's stop-the-world pauses are usually well under 1 ms.
			PauseP99Seconds: Levels{Low: 0.005, Medium: 0.020, High: 0.100},
			MinPauses:       20,
		},
		RSS: RSSThresholds{
			GapShare:       0.25,
			MinGapBytes:    64 * mib,
			HeadroomHigh:   0.05,
			HeadroomMedium: 0.15,
		},
		Contention: ContentionThresholds{
			// 1 ms of waiting per second is one goroutine blocked 0.1 %
			// of the time: visible in tail latency under load. 100 ms/s
			// is a tenth of a goroutine always waiting; 1 s/s one
			// goroutine always waiting, the lock a bottleneck.
			DelayPerSecond: Levels{Low: 0.001, Medium: 0.1, High: 1},
			MaxSites:       5,
		},
	}
}

// ParseThresholds reads a YAML thresholds file: the defaults, overridden
// by whatever the file sets. Unknown keys are an error (a misspelt key
// would silently keep its default), and so are values Validate refuses.
func ParseThresholds(data []byte) (Thresholds, error) {
	t := DefaultThresholds()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			// One line, as every heapscope error: "line 2: field x not
			// found in type …; line 5: …".
			return Thresholds{}, fmt.Errorf("parse thresholds: %s", strings.Join(trimAll(te.Errors), "; "))
		}
		return Thresholds{}, fmt.Errorf("parse thresholds: %s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Thresholds{}, errors.New("parse thresholds: more than one YAML document")
	}
	if err := t.Validate(); err != nil {
		return Thresholds{}, err
	}
	return t, nil
}

// Validate checks that the thresholds make sense: shares between 0 and 1,
// counts positive, levels increasing.
func (t Thresholds) Validate() error {
	var errs []error
	share := func(name string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("%s %g: give a share between 0 and 1", name, v))
		}
	}
	positive := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, fmt.Errorf("%s %g: give a number ≥ 0", name, v))
		}
	}
	atLeast := func(name string, v, least int) {
		if v < least {
			errs = append(errs, fmt.Errorf("%s %d: give at least %d", name, v, least))
		}
	}
	levels := func(name string, l Levels) {
		if err := l.validate(name); err != nil {
			errs = append(errs, err)
		}
	}
	series := func(prefix string, s Series) {
		atLeast(prefix+".min_snapshots", s.MinSnapshots, 3)
		share(prefix+".min_r2", s.MinR2)
		share(prefix+".min_rising_steps", s.MinRisingSteps)
		positive(prefix+".late_slope_ratio", s.LateSlopeRatio)
	}
	series("leak", t.Leak.Series)
	positive("leak.min_growth_bytes", t.Leak.MinGrowthBytes)
	levels("leak.slope_bytes_per_minute", t.Leak.SlopeBytesPerMinute)
	positive("leak.high_within_hours", t.Leak.HighWithinHours)
	positive("leak.medium_within_hours", t.Leak.MediumWithinHours)
	if t.Leak.HighWithinHours > t.Leak.MediumWithinHours {
		errs = append(errs, fmt.Errorf("leak.high_within_hours %g is longer than leak.medium_within_hours %g", t.Leak.HighWithinHours, t.Leak.MediumWithinHours))
	}
	atLeast("leak.max_sites", t.Leak.MaxSites, 1)

	series("goroutines", t.Goroutines.Series)
	positive("goroutines.min_growth", t.Goroutines.MinGrowth)
	levels("goroutines.per_minute", t.Goroutines.PerMinute)
	atLeast("goroutines.max_stacks", t.Goroutines.MaxStacks, 1)

	atLeast("hot_spot.max_sites", t.HotSpot.MaxSites, 1)
	share("hot_spot.min_share", t.HotSpot.MinShare)
	levels("hot_spot.bytes_per_second", t.HotSpot.BytesPerSecond)
	levels("hot_spot.objects_per_second", t.HotSpot.ObjectsPerSecond)
	levels("hot_spot.gc_cores", t.HotSpot.GCCores)
	levels("hot_spot.bytes_per_request", t.HotSpot.BytesPerRequest)
	levels("hot_spot.objects_per_request", t.HotSpot.ObjectsPerRequest)

	share("patterns.min_share", t.Patterns.MinShare)
	positive("patterns.large_alloc_bytes", t.Patterns.LargeAllocBytes)

	levels("gc.cycles_per_second", t.GC.CyclesPerSecond)
	levels("gc.cpu_share", t.GC.CPUShare)
	levels("gc.pause_p99_seconds", t.GC.PauseP99Seconds)
	atLeast("gc.min_pauses", t.GC.MinPauses, 1)

	share("rss.gap_share", t.RSS.GapShare)
	positive("rss.min_gap_bytes", t.RSS.MinGapBytes)
	share("rss.headroom_high", t.RSS.HeadroomHigh)
	share("rss.headroom_medium", t.RSS.HeadroomMedium)
	if t.RSS.HeadroomHigh > t.RSS.HeadroomMedium {
		errs = append(errs, fmt.Errorf("rss.headroom_high %g is more than rss.headroom_medium %g", t.RSS.HeadroomHigh, t.RSS.HeadroomMedium))
	}

	levels("contention.delay_per_second", t.Contention.DelayPerSecond)
	atLeast("contention.max_sites", t.Contention.MaxSites, 1)
	if len(errs) > 0 {
		// One line, as every heapscope error.
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		return fmt.Errorf("check thresholds: %s", strings.Join(msgs, "; "))
	}
	return nil
}

func trimAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.Join(strings.Fields(s), " ")
	}
	return out
}
