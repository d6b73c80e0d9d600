package diagnose

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/pprofx"
)

// appSite is one site of the service's own code with what was allocated
// under it in the window.
type appSite struct {
	at             site
	bytes, objects float64
	// samples estimates the samples behind the figures (see rawSamples).
	samples float64
}

// cost is what an allocation site costs, in absolute terms.
type cost struct {
	bytes, objects float64
	// sinceStart: the figures count since the process started (one heap
	// profile), not over a window.
	sinceStart                             bool
	bytesPerSecond, objectsPerSecond       float64
	bytesPerRequest, objectsPerRequest     float64
	byteShare, objectShare                 float64
	gcCPUShare, gcCores                    float64
	haveRate, havePerRequest, haveGCFigure bool
}

// costOf returns the cost of bytes and objects allocated in the window.
func (d *diagnosis) costOf(bytes, objects float64) cost {
	c := cost{bytes: bytes, objects: objects, sinceStart: d.allocsSinceStart}
	if d.allocBytes > 0 {
		c.byteShare = bytes / d.allocBytes
	}
	if d.allocObjects > 0 {
		c.objectShare = objects / d.allocObjects
	}
	if d.window > 0 {
		c.bytesPerSecond, c.objectsPerSecond, c.haveRate = bytes/d.window, objects/d.window, true
	}
	if d.requests > 0 {
		c.bytesPerRequest, c.objectsPerRequest, c.havePerRequest = bytes/d.requests, objects/d.requests, true
	}
	if d.haveGCCPU {
		// The GC's work grows with the bytes allocated (each cycle is
		// triggered by allocation), so a site's share of the bytes is
		// its share of the GC's CPU.
		c.gcCPUShare = c.byteShare * d.gcCPU
		c.gcCores = c.gcCPUShare * max(d.procs, 1)
		c.haveGCFigure = true
	}
	return c
}

// severity rates a cost by the hot-spot thresholds: the highest level of
// the rates and the GC estimate; per-request figures raise it by one
// level at most, and only when the rate is worth a look already. Without
// a rate (one profile, counts since the process started) it rates the
// share of all bytes: half or more is medium, a fifth low.
func (d *diagnosis) severity(c cost) Severity {
	th := d.th.HotSpot
	if !c.haveRate {
		switch {
		case c.byteShare >= 0.5:
			return Medium
		case c.byteShare >= 0.2:
			return Low
		}
		return Info
	}
	sev := max(th.BytesPerSecond.of(c.bytesPerSecond), th.ObjectsPerSecond.of(c.objectsPerSecond))
	if c.haveGCFigure {
		sev = max(sev, th.GCCores.of(c.gcCores))
	}
	if c.havePerRequest && sev >= Low {
		per := max(th.BytesPerRequest.of(c.bytesPerRequest), th.ObjectsPerRequest.of(c.objectsPerRequest))
		if per > sev {
			sev++
		}
	}
	return sev
}

func (c cost) evidence(ev map[string]float64) map[string]float64 {
	if ev == nil {
		ev = map[string]float64{}
	}
	ev["alloc_bytes_share"] = c.byteShare
	ev["alloc_objects_share"] = c.objectShare
	if c.haveRate {
		ev["bytes_per_second"] = c.bytesPerSecond
		ev["objects_per_second"] = c.objectsPerSecond
	}
	if c.havePerRequest {
		ev["bytes_per_request"] = c.bytesPerRequest
		ev["objects_per_request"] = c.objectsPerRequest
	}
	if c.haveGCFigure {
		ev["gc_cpu_share_estimate"] = c.gcCPUShare
		ev["gc_cores_estimate"] = c.gcCores
	}
	return ev
}

// describe says the cost in words for a title.
func (c cost) describe() string {
	var b strings.Builder
	if c.haveRate {
		fmt.Fprintf(&b, "%s/s in %s objects/s", humanize.Bytes(c.bytesPerSecond), humanize.Count(c.objectsPerSecond))
	} else {
		when := "in the window"
		if c.sinceStart {
			when = "since the process started"
		}
		fmt.Fprintf(&b, "%s in %s objects %s", humanize.Bytes(c.bytes), humanize.Count(c.objects), when)
		if c.objects > 0 {
			fmt.Fprintf(&b, ", %s each on average", humanize.Bytes(c.bytes/c.objects))
		}
	}
	fmt.Fprintf(&b, " (%s of the bytes, %s of the objects", humanize.Percent(c.byteShare), humanize.Percent(c.objectShare))
	if c.havePerRequest {
		fmt.Fprintf(&b, "; %s and %s objects per request", humanize.Bytes(c.bytesPerRequest), humanize.Count(c.objectsPerRequest))
	}
	if c.haveGCFigure && c.gcCores > 0 {
		fmt.Fprintf(&b, "; GC ≈ %s of one core", humanize.Percent(c.gcCores))
	}
	b.WriteString(")")
	return strings.TrimSpace(b.String())
}

// appSites aggregates the window's allocations by the innermost frame of
// the service's own code. Allocations with no such frame (the HTTP
// server's own per-request work) are left out.
func (d *diagnosis) appSites() []appSite {
	p := d.allocs
	bi, oi := index(p, pprofx.AllocSpace), index(p, pprofx.AllocObjects)
	if bi < 0 || oi < 0 {
		return nil
	}
	m := map[site]*appSite{}
	for _, s := range p.Sample {
		fs := frames(s)
		if fromProfiler(fs) {
			continue
		}
		f, ok := d.app.firstApp(fs)
		if !ok {
			continue
		}
		a := m[f.site()]
		if a == nil {
			a = &appSite{at: f.site()}
			m[f.site()] = a
		}
		a.bytes += float64(s.Value[bi])
		a.objects += float64(s.Value[oi])
		a.samples += rawSamples(s.Value[oi], s.Value[bi], p.Period)
	}
	out := make([]appSite, 0, len(m))
	for _, a := range m {
		if a.bytes > 0 || a.objects > 0 {
			out = append(out, *a)
		}
	}
	slices.SortFunc(out, func(a, b appSite) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.at.where(), b.at.where())
	})
	return out
}

// hotSpots is check 3: the service's sites that allocate the most in the
// window, rated by what they cost.
func (d *diagnosis) hotSpots() {
	if d.allocs == nil {
		return
	}
	if d.window <= 0 && !d.allocsSinceStart {
		d.note("allocation hot spots: the window's length is unknown, so rates cannot be measured; sites are rated by their share of the bytes")
	}
	th := d.th.HotSpot
	sites := d.appSites()
	var picked []appSite
	for _, a := range sites {
		if len(picked) == th.MaxSites {
			break
		}
		if a.bytes >= th.MinShare*d.allocBytes || a.objects >= th.MinShare*d.allocObjects {
			picked = append(picked, a)
		}
	}
	for _, a := range picked {
		c := d.costOf(a.bytes, a.objects)
		sev := d.severity(c)
		ev := c.evidence(map[string]float64{"samples": math.Round(a.samples*10) / 10})
		title := fmt.Sprintf("allocation hot spot at %s: %s", a.at.where(), c.describe())
		fix := "allocate less here: reuse buffers (keep one per worker, or a sync.Pool), preallocate slices and maps to their final size, keep values on the stack (no pointer returned or stored), and avoid string↔[]byte conversions"
		if src, ok := d.sourceLine(a.at); ok {
			fix = "the line is `" + strings.TrimSpace(src) + "`: " + fix
		}
		// Sampled: each sample stands for about MemProfileRate bytes.
		conf := min(1, a.samples/20)
		d.add(newFinding("alloc.hot-spot", sev, a.at, title, ev, fix, conf))
	}
}
