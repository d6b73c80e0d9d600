package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// The tests in this file keep docs/watch-config.schema.json honest: it
// is valid draft 2020-12, it accepts every documented and tested config,
// its keys are exactly those the decoder takes, and its defaults are the
// decoder's. FuzzParse checks that whatever Load accepts, it accepts.

var (
	schemaPath  = filepath.Join("..", "..", "..", "docs", "watch-config.schema.json")
	examplePath = filepath.Join("..", "..", "..", "docs", "examples", "heapscope.yaml")
)

// compileSchema compiles the schema, checking it against its metaschema.
func compileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc := readSchema(t)
	c := jsonschema.NewCompiler()
	id := doc.(map[string]any)["$id"].(string)
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatalf("compile %s: %v", schemaPath, err)
	}
	return s
}

func readSchema(t testing.TB) any {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	return doc
}

// yamlAsJSON reads a YAML document as the JSON value a schema validates.
func yamlAsJSON(data []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

func TestSchema_AcceptsTheExamples(t *testing.T) {
	s := compileSchema(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "good", "*.yaml"))
	for _, file := range append(files, examplePath) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		v, err := yamlAsJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s does not match the schema: %v", file, err)
		}
	}
}

// TestSchema_Rejects checks that the schema is no formality: it rejects
// what an editor should underline.
func TestSchema_Rejects(t *testing.T) {
	s := compileSchema(t)
	group := "groups: [{name: api, static: [{targets: [h:1]}]}]\n"
	for _, doc := range []string{
		"concurrency: 2\n",
		"storage: x\n" + group,
		"groups: [{name: api, evry: 5m, static: [{targets: [h:1]}]}]\n",
		"groups: [{name: api}]\n",
		"groups: [{static: [{targets: [h:1]}]}]\n",
		"defaults: {every: 15x}\n" + group,
		"defaults: {every: 15}\n" + group,
		"defaults: {max_body: 64XB}\n" + group,
		"defaults: {profiles: [heap, trace]}\n" + group,
		"defaults: {profiles: [heap, heap]}\n" + group,
		"defaults: {triggers: [{cooldown: 5m}]}\n" + group,
		"defaults: {pprof_path: debug/pprof}\n" + group,
		"concurrency: 0\n" + group,
		"webhook: {url: ftp://x}\n" + group,
		"webhook: {timeout: 5s}\n" + group,
		"pyroscope: {url: ftp://x}\n" + group,
		"pyroscope: {timeout: 5s}\n" + group,
		"pyroscope: {url: http://x, tenant_id: 'a|b'}\n" + group,
		"pyroscope: {url: http://x, basic_auth: {username: u}}\n" + group,
		"pyroscope: {url: http://x, retries: -1}\n" + group,
		"groups: [{name: api, labels: {instance: x}, static: [{targets: [h:1]}]}]\n",
		"groups: [{name: api, labels: {__x: x}, static: [{targets: [h:1]}]}]\n",
		"groups: [{name: api, file_sd: [{files: [targets.txt]}]}]\n",
		"groups: [{name: 'my api', static: [{targets: [h:1]}]}]\n",
		"groups: [{name: api, static: [{targets: []}]}]\n",
	} {
		v, err := yamlAsJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if s.Validate(v) == nil {
			t.Errorf("the schema accepts %q", doc)
		}
		if _, err := parse([]byte(doc), "c.yaml", Options{}); err == nil {
			t.Errorf("Load accepts %q, which the schema rejects", doc)
		}
	}
}

// schemaObjects are the objects of the schema, by their place in it, and
// the keys the decoder takes for each.
var schemaObjects = map[string][]string{
	"":                     keysOf(configFields),
	"properties/retention": keysOf(retentionFields),
	"properties/webhook":   keysOf(webhookFields),
	"properties/pyroscope": keysOf(pyroscopeFields),
	"properties/pyroscope/properties/basic_auth": keysOf(basicAuthFields),
	"properties/defaults":                        keysOf(settingsFields),
	"$defs/group":                                keysOf(groupFields),
	"$defs/static":                               keysOf(staticFields),
	"$defs/file_sd":                              keysOf(fileSDFields),
	"$defs/kubernetes":                           keysOf(kubernetesFields),
	"$defs/trigger/anyOf/1":                      keysOf(triggerFields),
}

// at returns the part of the schema at a slash-separated place.
func at(t *testing.T, doc any, place string) map[string]any {
	t.Helper()
	if place == "" {
		return doc.(map[string]any)
	}
	for _, part := range strings.Split(place, "/") {
		switch v := doc.(type) {
		case map[string]any:
			doc = v[part]
		case []any:
			i := int(part[0] - '0')
			doc = v[i]
		}
	}
	m, ok := doc.(map[string]any)
	if !ok {
		t.Fatalf("schema has no object at %s", place)
	}
	return m
}

func TestSchema_KeysAreTheDecoders(t *testing.T) {
	doc := readSchema(t)
	for place, want := range schemaObjects {
		obj := at(t, doc, place)
		props, _ := obj["properties"].(map[string]any)
		got := slices.Sorted(func(yield func(string) bool) {
			for k := range props {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("schema %q has keys %v, the decoder takes %v", place, got, slices.Sorted(slices.Values(want)))
		}
		if obj["additionalProperties"] != false {
			t.Errorf("schema %q allows keys it does not list", place)
		}
	}
	// Every object the schema describes is one of the above.
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["properties"]; ok {
				n++
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	if n != len(schemaObjects) {
		t.Errorf("the schema describes %d objects, the test knows %d: add the new one to schemaObjects", n, len(schemaObjects))
	}
}

// TestSchema_DefaultsAreTheDecoders writes every default of the schema
// into a config and checks that it loads as the config without them.
func TestSchema_DefaultsAreTheDecoders(t *testing.T) {
	doc := readSchema(t)
	defs := at(t, doc, "$defs")
	// defaultOf finds a property's default, through $ref.
	var defaultOf func(p map[string]any) (any, bool)
	defaultOf = func(p map[string]any) (any, bool) {
		if d, ok := p["default"]; ok {
			if n, ok := d.(json.Number); ok {
				i, err := n.Int64()
				if err != nil {
					t.Fatalf("default %v is not an integer", n)
				}
				return i, true
			}
			return d, true
		}
		if ref, ok := p["$ref"].(string); ok {
			return defaultOf(defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any))
		}
		return nil, false
	}
	base := func() map[string]any {
		return map[string]any{
			"webhook":   map[string]any{"url": "http://h/"},
			"pyroscope": map[string]any{"url": "http://h:4040"},
			"groups": []any{map[string]any{
				"name":     "g",
				"static":   []any{map[string]any{"targets": []any{"h:1"}}},
				"file_sd":  []any{map[string]any{"files": []any{"x.json"}}},
				"triggers": []any{map[string]any{"expr": "memory>=80%"}},
			}},
		}
	}
	withDefaults := base()
	g := withDefaults["groups"].([]any)[0].(map[string]any)
	fill := map[string]map[string]any{
		"": withDefaults, "properties/retention": {}, "properties/webhook": withDefaults["webhook"].(map[string]any),
		"properties/pyroscope": withDefaults["pyroscope"].(map[string]any),
		"properties/defaults":  {}, "$defs/group": g, "$defs/file_sd": g["file_sd"].([]any)[0].(map[string]any),
		"$defs/trigger/anyOf/1": g["triggers"].([]any)[0].(map[string]any),
	}
	withDefaults["retention"], withDefaults["defaults"] = fill["properties/retention"], fill["properties/defaults"]
	filled := 0
	for place, m := range fill {
		for key, p := range at(t, doc, place)["properties"].(map[string]any) {
			if d, ok := defaultOf(p.(map[string]any)); ok {
				if _, given := m[key]; !given {
					m[key] = d
					filled++
				}
			}
		}
	}
	if filled < 20 {
		t.Errorf("only %d defaults found in the schema", filled)
	}
	load := func(v map[string]any) *Config {
		data, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		c, err := parse(data, "c.yaml", Options{})
		if err != nil {
			t.Fatalf("%v in\n%s", err, data)
		}
		// Where things were written differs, not what they are.
		forget := func(s *Settings) {
			for i := range s.Triggers {
				s.Triggers[i].Pos = ""
			}
		}
		forget(&c.Defaults)
		for i := range c.Groups {
			c.Groups[i].Pos = ""
			forget(&c.Groups[i].Settings)
			for j := range c.Groups[i].Static {
				c.Groups[i].Static[j].pos = nil
			}
		}
		return c
	}
	got, want := load(withDefaults), load(base())
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with the schema's defaults written:\n%+v\nwithout:\n%+v", got, want)
	}
	// And the defaults are Default's.
	def := Default()
	def.File, def.opts = want.File, want.opts
	want.Groups, want.Webhook, want.Pyroscope = nil, nil, nil
	if !reflect.DeepEqual(want, def) {
		t.Errorf("a config of defaults loads as\n%+v\nDefault() is\n%+v", want, def)
	}
}
