package pyroscope

import (
	"fmt"
	"strings"
	"testing"

	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

func TestServiceName(t *testing.T) {
	tests := []struct {
		name   string
		target string
		labels map[string]string
		want   string
	}{
		{"service_name label", "http://10.0.0.1:6060/debug/pprof/",
			map[string]string{"service_name": "checkout", "job": "shop", "instance": "10.0.0.1:6060"}, "checkout"},
		{"job label", "http://10.0.0.1:6060/debug/pprof/",
			map[string]string{"job": "shop", "namespace": "prod", "container": "app"}, "shop"},
		{"kubernetes pod", "http://10.0.0.1:6060/debug/pprof/",
			map[string]string{"namespace": "prod", "pod": "app-7d9f-x2", "container": "app", "group": "pods"}, "prod/app"},
		{"pod without its container", "http://10.0.0.1:6060/debug/pprof/",
			map[string]string{"namespace": "prod", "group": "pods"}, "10.0.0.1:6060"},
		{"the host otherwise", "https://api.internal:8443/admin/debug/pprof/",
			map[string]string{"group": "api", "instance": "api.internal:8443"}, "api.internal:8443"},
		{"empty labels count as none", "http://h:1/debug/pprof/",
			map[string]string{"service_name": "", "job": ""}, "h:1"},
		{"no key: the instance", "", map[string]string{"instance": "h:2"}, "h:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ServiceName(Meta{Target: tt.target, Labels: tt.labels}); got != tt.want {
				t.Errorf("ServiceName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	tests := []struct {
		name     string
		meta     Meta
		want     string // name=value, sorted, comma-separated
		warnings []string
	}{
		{"a static target's run",
			Meta{Target: "http://127.0.0.1:6060/debug/pprof/", Kind: "run",
				Labels: map[string]string{"instance": "127.0.0.1:6060", "group": "api", "env": "prod"}},
			"__delta__=false,env=prod,group=api,heapscope_kind=run,instance=127.0.0.1:6060,service_name=127.0.0.1:6060", nil},
		{"a pod's bundle",
			Meta{Target: "http://10.1.2.3:6060/debug/pprof/", Kind: "bundle", Trigger: "memory>=80%",
				Labels: map[string]string{"namespace": "shop", "pod": "cart-5f6-abc", "container": "cart", "node": "n1", "group": "pods", "instance": "10.1.2.3:6060"}},
			"__delta__=false,container=cart,group=pods,heapscope_kind=bundle,heapscope_trigger=memory>=80%,instance=10.1.2.3:6060,namespace=shop,node=n1,pod=cart-5f6-abc,service_name=shop/cart", nil},
		{"names made valid",
			Meta{Target: "http://h:1/debug/pprof/", Labels: map[string]string{
				"app.kubernetes.io/name": "cart", "team-name": "x", "9lives": "y", "ünï": "z"}},
			"_9lives=y,__delta__=false,_n_=z,app_kubernetes_io_name=cart,service_name=h:1,team_name=x",
			[]string{"label 9lives renamed _9lives", "label app.kubernetes.io/name renamed app_kubernetes_io_name",
				"label team-name renamed team_name", "label ünï renamed _n_"}},
		{"a valid name wins over one that becomes it",
			Meta{Target: "http://h:1/debug/pprof/", Labels: map[string]string{"a.b": "dotted", "a_b": "plain", "a-b": "dashed"}},
			"__delta__=false,a_b=plain,service_name=h:1",
			[]string{"label a-b dropped: a_b already gives a_b", "label a.b dropped: a_b already gives a_b"}},
		{"reserved and heapscope's names are not overridden",
			Meta{Target: "http://h:1/debug/pprof/", Kind: "run", Labels: map[string]string{
				"__name__": "x", "__delta__": "true", "heapscope_kind": "bundle", "service.name": "y", "service_name": "svc"}},
			"__delta__=false,heapscope_kind=run,service_name=svc",
			[]string{"label __delta__ dropped: names beginning with __ are reserved", "label __name__ dropped: names beginning with __ are reserved",
				"label heapscope_kind dropped: heapscope sets heapscope_kind", "label service.name dropped: heapscope sets service_name"}},
		{"empty values are no labels",
			Meta{Target: "http://h:1/debug/pprof/", Labels: map[string]string{"env": "", "team": "t"}},
			"__delta__=false,service_name=h:1,team=t", nil},
		{"values made valid UTF-8",
			Meta{Target: "http://h:1/debug/pprof/", Labels: map[string]string{"note": "a\xffb"}},
			"__delta__=false,note=a\uFFFDb,service_name=h:1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings := Labels(tt.meta)
			if s := pairs(got); s != tt.want {
				t.Errorf("labels\n  %s\nwant\n  %s", s, tt.want)
			}
			if strings.Join(warnings, "\n") != strings.Join(tt.warnings, "\n") {
				t.Errorf("warnings\n  %q\nwant\n  %q", warnings, tt.warnings)
			}
		})
	}
}

func TestLabels_BoundedToPyroscopesLimits(t *testing.T) {
	labels := map[string]string{"a_long": strings.Repeat("é", MaxLabelValueLength)}
	for i := range 40 {
		labels[fmt.Sprintf("l%02d", i)] = "v"
	}
	got, warnings := Labels(Meta{Target: "http://h:1/debug/pprof/", Kind: "bundle", Trigger: "goroutines>=1e4", Labels: labels})
	if n := len(got) + 1; n != MaxLabels { // and __name__
		t.Errorf("%d labels with __name__, want Pyroscope's limit %d", n, MaxLabels)
	}
	for _, l := range got {
		if len(l.Value) > MaxLabelValueLength {
			t.Errorf("label %s: value of %d bytes, over %d", l.Name, len(l.Value), MaxLabelValueLength)
		}
		if strings.ContainsRune(l.Value, '\uFFFD') {
			t.Errorf("label %s: value cut inside a rune", l.Name)
		}
	}
	for _, own := range []string{LabelServiceName, LabelDelta, LabelKind, LabelTrigger} {
		if value(got, own) == "" {
			t.Errorf("heapscope's %s was dropped to make room", own)
		}
	}
	if len(warnings) != 2 || !strings.HasPrefix(warnings[0], "labels l24, l25,") ||
		!strings.Contains(warnings[0], "Pyroscope takes at most 30 labels") || warnings[1] != "label a_long: value cut to 2048 bytes" {
		t.Errorf("warnings %q, want the labels dropped and the value cut", warnings)
	}
}

func pairs(ls []*typesv1.LabelPair) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = l.Name + "=" + l.Value
	}
	return strings.Join(s, ",")
}

func value(ls []*typesv1.LabelPair, name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}
