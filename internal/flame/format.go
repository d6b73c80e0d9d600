package flame

import (
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// formatValue renders a value of unit for people: bytes in binary
// multiples, nanoseconds as durations, counts with thousands separators.
// The HTML page's script formats the same way.
func formatValue(v float64, unit string) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	switch unit {
	case "bytes":
		units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
		i := 0
		for v >= 1024 && i < len(units)-1 {
			v /= 1024
			i++
		}
		if i == 0 {
			return sign + trimFloat(v, 0) + " B"
		}
		return sign + threeDigits(v) + " " + units[i]
	case "nanoseconds":
		switch {
		case v >= 1e9:
			return sign + threeDigits(v/1e9) + " s"
		case v >= 1e6:
			return sign + threeDigits(v/1e6) + " ms"
		case v >= 1e3:
			return sign + threeDigits(v/1e3) + " µs"
		}
		return sign + trimFloat(v, 0) + " ns"
	}
	if v == math.Trunc(v) && v < 1e15 {
		return sign + thousands(int64(v))
	}
	return sign + threeDigits(v)
}

// threeDigits shows about three significant digits.
func threeDigits(v float64) string {
	switch {
	case v >= 100:
		return trimFloat(v, 0)
	case v >= 10:
		return trimFloat(v, 1)
	}
	return trimFloat(v, 2)
}

func trimFloat(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func thousands(v int64) string {
	s := strconv.FormatInt(v, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// formatShare renders a share (0.1234 is "12.34%").
func formatShare(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return "–"
	}
	return strconv.FormatFloat(s*100, 'f', 2, 64) + "%"
}

// nameHash is a stable hash of a name in [0, 1), to vary colours within a
// kind's palette.
func nameHash(name string) float64 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return float64(h.Sum32()) / (1 << 32)
}

// rgb is a colour.
type rgb struct{ r, g, b uint8 }

func (c rgb) String() string { return string(c.appendTo(nil)) }

func (c rgb) appendTo(b []byte) []byte {
	b = append(b, "rgb("...)
	b = strconv.AppendInt(b, int64(c.r), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(c.g), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(c.b), 10)
	return append(b, ')')
}

// kindColour returns the fill of a frame of a plain graph: warm for the
// application, yellow for the standard library, lavender for the runtime,
// green for dependencies, grey for unknown frames. The shade varies with
// the name, so neighbours stand apart.
func kindColour(k Kind, name string) rgb {
	v := nameHash(name)
	mix := func(lo, hi uint8) uint8 { return uint8(float64(lo) + v*float64(int(hi)-int(lo))) }
	switch k {
	case KindStd:
		return rgb{mix(215, 240), mix(190, 220), mix(60, 110)}
	case KindRuntime:
		return rgb{mix(165, 195), mix(150, 180), mix(215, 240)}
	case KindDependency:
		return rgb{mix(110, 150), mix(190, 220), mix(110, 140)}
	case KindUnknown:
		return rgb{mix(180, 200), mix(180, 200), mix(180, 200)}
	}
	return rgb{mix(225, 250), mix(100, 170), mix(40, 80)}
}

// Neutral, grown and shrunk colours of differential graphs.
var (
	neutralColour = rgb{222, 222, 222}
	grewColour    = rgb{225, 45, 45}
	shrankColour  = rgb{45, 95, 225}
)

// changeColour blends the neutral colour towards red (c > 0) or blue
// (c < 0) by |c|.
func changeColour(c float64) rgb {
	to := grewColour
	if c < 0 {
		to, c = shrankColour, -c
	}
	c = min(c, 1)
	blend := func(a, b uint8) uint8 { return uint8(math.Round(float64(a) + c*(float64(b)-float64(a)))) }
	return rgb{blend(neutralColour.r, to.r), blend(neutralColour.g, to.g), blend(neutralColour.b, to.b)}
}
