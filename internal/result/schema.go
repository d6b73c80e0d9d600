package result

import (
	"reflect"
	"strings"
	"time"
)

// Schema returns the JSON Schema (draft 2020-12) of result.json, derived
// from the Go types so the two cannot drift apart. docs/result-schema.json
// is its rendering, checked by a test.
func Schema() map[string]any {
	s := schemaOf(reflect.TypeFor[Run]())
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["$id"] = "https://github.com/heapscope/heapscope/docs/result-schema.json"
	s["title"] = "heapscope result.json"
	s["description"] = "Summary of one heapscope profiling run. Bytes are integers, durations are seconds (_seconds), timestamps RFC 3339 UTC, rates per second."
	props := s["properties"].(map[string]any)
	props["schema_version"] = map[string]any{"const": SchemaVersion}
	props["status"] = map[string]any{"enum": []string{string(StatusComplete), string(StatusPartial), string(StatusFailed)}}
	return s
}

var timeType = reflect.TypeFor[time.Time]()

func schemaOf(t reflect.Type) map[string]any {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.Struct:
		props := map[string]any{}
		var required []string
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			props[name] = schemaOf(f.Type)
			if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
				required = append(required, name)
			}
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	case t.Kind() == reflect.Slice:
		return map[string]any{"type": []string{"array", "null"}, "items": schemaOf(t.Elem())}
	case t.Kind() == reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case t.Kind() == reflect.String:
		return map[string]any{"type": "string"}
	case t.Kind() == reflect.Bool:
		return map[string]any{"type": "boolean"}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return map[string]any{"type": "number"}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		s := map[string]any{"type": "integer"}
		if t.Kind() >= reflect.Uint {
			s["minimum"] = 0
		}
		return s
	}
	return map[string]any{}
}
