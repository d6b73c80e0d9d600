package pyroscope

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

// The labels the exporter sets itself. A target's labels cannot override
// them.
const (
	// LabelName is the profile type's name (process_cpu, memory, …).
	LabelName = "__name__"
	// LabelDelta "false" tells Pyroscope that the values are the window's
	// own, not cumulative: it must not subtract the previous push.
	LabelDelta = "__delta__"
	// LabelServiceName is the application, Pyroscope's first selector.
	LabelServiceName = "service_name"
	// LabelKind is the capture's kind: run (scheduled) or bundle (a
	// trigger fired).
	LabelKind = "heapscope_kind"
	// LabelTrigger is a bundle's trigger expression.
	LabelTrigger = "heapscope_trigger"
)

// Pyroscope's default validation limits (validation.max-label-names-per-
// series, max-length-label-name, max-length-label-value): a series beyond
// them is refused whole, so the labels are cut to fit before the push.
const (
	MaxLabels           = 30
	MaxLabelNameLength  = 1024
	MaxLabelValueLength = 2048
)

// Meta is what heapscope knows of a capture besides its files: whose it is
// and why it was made.
type Meta struct {
	// Target is the target's key, its canonical pprof URL.
	Target string
	// Labels are the target's labels (the config's, instance and group,
	// Kubernetes' namespace, pod, container…).
	Labels map[string]string
	// Kind is "run" or "bundle"; empty leaves the label out.
	Kind string
	// Trigger is a bundle's trigger expression; empty for a run.
	Trigger string
	// ID names the capture (its path in the store); the pushed profiles'
	// IDs are derived from it, so a capture pushed twice has the same IDs.
	ID string
}

// ServiceName is the service_name a capture is pushed under: the target's
// service_name label, else its job label, else namespace/container for a
// Kubernetes pod (as Grafana Alloy names a pod it scrapes), else the
// target's host:port.
func ServiceName(m Meta) string {
	l := m.Labels
	switch {
	case l[LabelServiceName] != "":
		return l[LabelServiceName]
	case l["job"] != "":
		return l["job"]
	case l["namespace"] != "" && l["container"] != "":
		return l["namespace"] + "/" + l["container"]
	}
	if u, err := url.Parse(m.Target); err == nil && u.Host != "" {
		return u.Host
	}
	if l["instance"] != "" {
		return l["instance"]
	}
	return "unknown"
}

// Labels returns the labels of every series of a capture, sorted by name,
// without __name__ (each series adds its own): service_name, __delta__,
// heapscope_kind and heapscope_trigger, and the target's labels made
// valid for Pyroscope. Label names take Prometheus' form: any other
// character becomes _, a leading digit gets a _ before it, names starting
// with __ are reserved and dropped, as are empty values; values are made
// valid UTF-8. Where two names become one, the one already in that form
// wins, else the first in sorted order. Whatever is dropped or changed
// comes back as a warning.
func Labels(m Meta) ([]*typesv1.LabelPair, []string) {
	var warnings []string
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }

	own := map[string]string{
		LabelServiceName: ServiceName(m),
		LabelDelta:       "false",
	}
	if m.Kind != "" {
		own[LabelKind] = m.Kind
	}
	if m.Trigger != "" {
		own[LabelTrigger] = m.Trigger
	}

	names := make([]string, 0, len(m.Labels))
	for name := range m.Labels {
		names = append(names, name)
	}
	// Names already valid come first, so that they win over one that
	// becomes theirs; then sorted, so the outcome never depends on map
	// order.
	sort.Slice(names, func(i, j int) bool {
		vi, vj := validName(names[i]), validName(names[j])
		if vi != vj {
			return vi
		}
		return names[i] < names[j]
	})
	target := map[string]string{}
	from := map[string]string{}
	for _, name := range names {
		value := m.Labels[name]
		if name == LabelServiceName {
			continue // it is service_name's value already
		}
		clean := sanitizeName(name)
		switch {
		case value == "":
			continue // an empty label is no label, as in Prometheus
		case strings.HasPrefix(clean, "__"):
			warn("label %s dropped: names beginning with __ are reserved", name)
			continue
		case len(clean) > MaxLabelNameLength:
			warn("label %.40s… dropped: its name is over %d bytes", name, MaxLabelNameLength)
			continue
		}
		if _, ok := own[clean]; ok {
			warn("label %s dropped: heapscope sets %s", name, clean)
			continue
		}
		if prev, ok := from[clean]; ok {
			warn("label %s dropped: %s already gives %s", name, prev, clean)
			continue
		}
		if clean != name {
			warn("label %s renamed %s", name, clean)
		}
		target[clean], from[clean] = value, name
	}
	if room := MaxLabels - 1 - len(own); len(target) > room { // 1: __name__
		kept := make([]string, 0, len(target))
		for name := range target {
			kept = append(kept, name)
		}
		sort.Strings(kept)
		for _, name := range kept[room:] {
			delete(target, name)
		}
		warn("labels %s dropped: Pyroscope takes at most %d labels a series", strings.Join(kept[room:], ", "), MaxLabels)
	}

	out := make([]*typesv1.LabelPair, 0, len(own)+len(target))
	add := func(name, value string) {
		v := strings.ToValidUTF8(value, "\uFFFD")
		if len(v) > MaxLabelValueLength {
			v = truncateUTF8(v, MaxLabelValueLength)
			warn("label %s: value cut to %d bytes", name, MaxLabelValueLength)
		}
		out = append(out, &typesv1.LabelPair{Name: name, Value: v})
	}
	for name, value := range own {
		add(name, value)
	}
	for name, value := range target {
		add(name, value)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, warnings
}

// validName reports whether name is a Prometheus label name as it is.
func validName(name string) bool { return name != "" && sanitizeName(name) == name }

// sanitizeName gives name Prometheus' form, [a-zA-Z_][a-zA-Z0-9_]*:
// every other character (a dot, a slash, a dash, any non-ASCII rune)
// becomes _, and a leading digit gets a _ before it.
func sanitizeName(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
