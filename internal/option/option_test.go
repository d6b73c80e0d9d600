package option

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestError_Text(t *testing.T) {
	flags := func(path string) string { return "--" + strings.ToLower(strings.ReplaceAll(path, ".", "-")) }
	tests := []struct {
		name   string
		err    error
		field  string
		byPath string
		byFlag string
	}{
		{
			name:   "value and another option",
			err:    Errorf("Rate", "{Rate} %g: give a positive rate, or {Connections} N for the closed model", -1.0),
			field:  "Rate",
			byPath: "Rate -1: give a positive rate, or Connections N for the closed model",
			byFlag: "--rate -1: give a positive rate, or --connections N for the closed model",
		},
		{
			name:   "no option named",
			err:    Errorf("Repeat", "repeat %d: give between 1 and %d windows", 2000, 1000),
			field:  "Repeat",
			byPath: "repeat 2000: give between 1 and 1000 windows",
			byFlag: "repeat 2000: give between 1 and 1000 windows",
		},
		{
			name:   "nested",
			err:    Within("Load", Errorf("Ramp", "{Ramp} applies to the open model: give {Rate}")),
			field:  "Load.Ramp",
			byPath: "Load.Ramp applies to the open model: give Load.Rate",
			byFlag: "--load-ramp applies to the open model: give --load-rate",
		},
		{
			name:   "nested twice",
			err:    Within("A", Within("B", Errorf("C", "{C} is wrong"))),
			field:  "A.B.C",
			byPath: "A.B.C is wrong",
			byFlag: "--a-b-c is wrong",
		},
		{
			name:   "braces in a value are the value's",
			err:    Errorf("URL", "{URL} %q: unknown placeholder", "http://h/{id}"),
			field:  "URL",
			byPath: `URL "http://h/{id}": unknown placeholder`,
			byFlag: `--url "http://h/{id}": unknown placeholder`,
		},
		{
			name:   "an unclosed brace is text",
			err:    Errorf("N", "{N} %d {not closed", 3),
			field:  "N",
			byPath: "N 3 {not closed",
			byFlag: "--n 3 {not closed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *Error
			if !errors.As(tt.err, &e) {
				t.Fatalf("%v is not an *Error", tt.err)
			}
			if e.Field != tt.field {
				t.Errorf("Field = %q, want %q", e.Field, tt.field)
			}
			if got := e.Error(); got != tt.byPath {
				t.Errorf("Error() = %q, want %q", got, tt.byPath)
			}
			if got := e.Text(flags); got != tt.byFlag {
				t.Errorf("Text(flags) = %q, want %q", got, tt.byFlag)
			}
		})
	}
}

func TestError_Unwrap(t *testing.T) {
	err := Errorf("BodyFile", "{BodyFile}: %w", &fs.PathError{Op: "open", Path: "b.json", Err: fs.ErrNotExist})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v does not wrap fs.ErrNotExist", err)
	}
	if got, want := err.Error(), "BodyFile: open b.json: file does not exist"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if errors.Unwrap(Errorf("Rate", "{Rate} %g: negative", -1.0)) != nil {
		t.Error("an Error without %w unwraps to something")
	}
}

func TestWithin_otherErrors(t *testing.T) {
	plain := errors.New("no request to send")
	if got := Within("Load", plain); got != plain {
		t.Errorf("Within of a plain error = %v, want it unchanged", got)
	}
	wrapped := fmt.Errorf("context: %w", Errorf("Rate", "{Rate} is wrong"))
	if got := Within("Load", wrapped); got != wrapped {
		t.Errorf("Within of a wrapped Error = %v, want it unchanged", got)
	}
	if Within("Load", nil) != nil {
		t.Error("Within(nil) is not nil")
	}
}

func TestKebab(t *testing.T) {
	for name, want := range map[string]string{
		"Rate": "rate", "MaxInFlight": "max-in-flight", "PID": "pid", "CACertFile": "ca-cert-file",
		"LoadTimeout": "load-timeout", "BaseRequests": "base-requests", "HTTP2": "http2", "": "",
	} {
		if got := Kebab(name); got != want {
			t.Errorf("Kebab(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestNames(t *testing.T) {
	flags := map[string]bool{"rate": true, "timeout": true, "load-timeout": true, "requests": true}
	name := Names(func(n string) bool { return flags[n] }, map[string]string{"MaxRequests": "requests"})
	for path, want := range map[string]string{
		"Rate":             "rate",
		"Load.Rate":        "rate",
		"Load.Timeout":     "load-timeout",
		"Target.Timeout":   "timeout",
		"MaxRequests":      "requests",
		"Load.MaxRequests": "requests",
		"Load.Ramp":        "Load.Ramp",
	} {
		if got := name(path); got != want {
			t.Errorf("name(%q) = %q, want %q", path, got, want)
		}
	}
}

func ExampleError_Text() {
	err := Within("Load", Errorf("Rate", "{Rate} %g: give a positive rate, or {Connections} N for the closed model", -1.0))
	fmt.Println(err)
	var e *Error
	if errors.As(err, &e) {
		flags := map[string]string{"Load.Rate": "--rate", "Load.Connections": "--connections"}
		fmt.Println(e.Text(func(field string) string { return flags[field] }))
	}
	// Output:
	// Load.Rate -1: give a positive rate, or Load.Connections N for the closed model
	// --rate -1: give a positive rate, or --connections N for the closed model
}
