// Package units is heapscope's one grammar of durations and sizes, for
// the watch config, the triggers' expressions and the command line's
// flags alike: 15m, 1h30m, 1.5s, 7d, 1w, 1y; 64MiB, 512Mi, 1.5GB, 4096.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxDuration bounds durations: a century is beyond any schedule,
// retention or projection.
const MaxDuration = 100 * 365 * 24 * time.Hour

// durationUnits are the units of ParseDuration: Go's, and days, weeks and
// years of 24 hours, 7 days and 365 days, as Prometheus has them.
var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "us": time.Microsecond, "µs": time.Microsecond, "μs": time.Microsecond,
	"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
	"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour,
}

const durationUnitList = "ms, s, m, h, d, w or y"

// ParseDuration reads a duration: one or more numbers, each with its unit
// (ns, us, ms, s, m, h, d, w, y), as in 300ms, 1.5s, 1h30m, 7d, 1d12h,
// 1y; or 0. A negative duration, a number without its unit and a
// duration past MaxDuration are errors.
func ParseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		if _, err := ParseDuration(rest); err == nil {
			return 0, fmt.Errorf("%s is negative", s)
		}
	}
	if s == "" {
		return 0, fmt.Errorf("no duration (want e.g. 15m, 1h, 7d)")
	}
	var total float64
	for rest := s; rest != ""; {
		i := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i < 0 {
			return 0, fmt.Errorf("%q is not a duration: %s has no unit (want %s)", s, rest, durationUnitList)
		}
		j := strings.IndexAny(rest[i:], "0123456789.")
		if j < 0 {
			j = len(rest) - i
		}
		num, unit := rest[:i], strings.TrimSpace(rest[i:i+j])
		rest = rest[i+j:]
		v, err := ParseNumber(num)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		mult, ok := durationUnits[unit]
		if !ok {
			return 0, fmt.Errorf("%q is not a duration: unknown unit %q (want %s)", s, unit, durationUnitList)
		}
		if total += v * float64(mult); total > float64(MaxDuration) {
			return 0, fmt.Errorf("%q is out of range", s)
		}
	}
	return time.Duration(math.Round(total)), nil
}

// ParseNumber reads a non-negative decimal number as durations and sizes
// write theirs: digits with at most one point, "80", "1.5", ".5".
func ParseNumber(s string) (float64, error) {
	digits, points := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			points++
		default:
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	if digits == 0 || points > 1 {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return strconv.ParseFloat(s, 64)
}

// sizeUnits are the units of sizes, lower-cased: KB, MB, GB and TB are
// powers of 1000; KiB, MiB, GiB, TiB (and Kubernetes' Ki, Mi, Gi, Ti)
// powers of 1024.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40,
}

// SizeUnits lists the size units for messages.
const SizeUnits = "B, KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti), KB, MB, GB or TB"

// SizeUnit returns the bytes of a size unit, its case aside: 1 for B or
// none, 1<<20 for MiB and Mi, 1e6 for MB.
func SizeUnit(unit string) (float64, bool) {
	v, ok := sizeUnits[asciiLower(unit)]
	return v, ok
}

// ParseSize reads a size in bytes: a number with a unit (SizeUnit), 64MiB,
// 1.5GiB, 512MB, 512Mi, a space allowed between, or a number of bytes.
func ParseSize(s string) (int64, error) {
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		if _, err := ParseSize(rest); err == nil {
			return 0, fmt.Errorf("%s is negative", s)
		}
	}
	bad := fmt.Errorf("bad size %q (want e.g. 64MiB, 20GiB, 500MB, or a number of bytes)", s)
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(s)
	}
	num, unit := s[:end], strings.TrimLeft(s[end:], " ")
	mult, ok := SizeUnit(unit)
	if num == "" || !ok {
		return 0, bad
	}
	if !strings.Contains(num, ".") {
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || v > math.MaxInt64/int64(mult) {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return v * int64(mult), nil
	}
	v, err := ParseNumber(num)
	if err != nil {
		return 0, bad
	}
	if b := v * mult; b < math.MaxInt64 {
		return int64(b), nil
	}
	return 0, fmt.Errorf("size %q is too large", s)
}

// asciiLower lower-cases ASCII letters only: the Kelvin sign is no k.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Duration is a duration flag's value read by ParseDuration, for a
// command line's flag set (its Set, String and Type are pflag.Value's):
// flags take what the config and the triggers take.
type Duration struct{ d *time.Duration }

// NewDuration sets *d to value and returns the flag value that sets it.
func NewDuration(d *time.Duration, value time.Duration) Duration {
	*d = value
	return Duration{d}
}

// Set reads s with ParseDuration.
func (v Duration) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// String writes the duration as time.Duration does, and none as 0 (a
// flag's usage leaves out a default of 0).
func (v Duration) String() string {
	if v.d == nil || *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

// Type names the value in a flag's usage.
func (v Duration) Type() string { return "duration" }
