package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds any bytes to the config decoder (make fuzz runs it; the
// corpus under testdata/fuzz/FuzzParse is replayed by go test). An error
// is one line naming the file; a config it accepts is whole — every
// group named, its settings passing their checks, its static targets
// unique — and matches the JSON Schema.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "good", "*.yaml"))
	for _, file := range append(files, examplePath) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"groups: [{name: a, static: [{targets: [h:1]}]}]",
		"groups: [{name: a, static: [{targets: [h:1, H:1]}]}]",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n",
		"defaults: {every: 1y2w3d, window: 1.5h, max_body: .5GiB}\ngroups: [{name: a, file_sd: [{files: [x/*.json]}]}]",
		"groups:\n- name: a\n  labels: {x: 2024-01-01, y: .inf, z: !!binary aGk=}\n  static: [{targets: ['[::1]:1']}]\n",
		"groups: [{name: k, kubernetes: {namespaces: [a, b-1], selector: 'x in (y)', node: n, cgroup_root: /c, kubeconfig: k}}]",
		"groups: [{name: k, kubernetes: }]",
	} {
		f.Add([]byte(s))
	}
	schema := compileSchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse(data, "fuzz.yaml", Options{Pods: &fakePods{}})
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "fuzz.yaml") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q is not one line naming the file", msg)
			}
			if c != nil {
				t.Fatal("a config returned with an error")
			}
			return
		}
		if len(c.Groups) == 0 {
			t.Fatal("a config without groups accepted")
		}
		for _, g := range c.Groups {
			s := g.Settings
			if g.Name == "" || checkSettings(&s, func(k string) string { return k }) != nil {
				t.Fatalf("group %+v accepted with bad settings: %v", g, checkSettings(&s, func(k string) string { return k }))
			}
		}
		if s := c.Defaults; checkSettings(&s, func(k string) string { return k }) != nil {
			t.Fatalf("defaults %+v accepted", s)
		}
		static := &discovery{c: c}
		if _, problems := static.targets(); len(problems) > 0 {
			t.Fatalf("accepted static targets have problems: %v", problems)
		}
		v, err := yamlAsJSON(data)
		if err != nil {
			return // YAML that JSON cannot hold (.inf): no schema speaks of it
		}
		if err := schema.Validate(v); err != nil {
			t.Fatalf("Load accepts what the schema rejects: %v", err)
		}
	})
}
