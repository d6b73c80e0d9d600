// Package option reports invalid options of heapscope's packages one way.
// The check of an option is written once, beside the options struct it
// belongs to, and its Error names the option by its field path in that
// struct ("Load.Rate"), in braces wherever the message names one:
//
//	option.Errorf("Rate", "{Rate} %g: give a positive rate, or {Connections} N for the closed model", rate)
//
// Each caller then names the options in its own words with Error.Text: the
// command line by its flags ("--rate -1: give a positive rate, or
// --connections N for the closed model"), a configuration file or an HTTP
// API by its keys. Error.Error names them by their field paths.
package option

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Error is an invalid option.
type Error struct {
	// Field is the field path of the option at fault, such as "Rate" or,
	// from a nested struct, "Load.Rate".
	Field string

	// format and args make the message; format names options as
	// {FieldPath}, relative to prefix.
	format string
	args   []any
	prefix string
}

// Errorf returns an Error about the option at field, its message
// formatted as fmt.Errorf does (%w wraps) after the options named in
// braces in format, such as {Rate}, are named.
func Errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, format: format, args: args}
}

// Within returns err, if it is an *Error, with its field paths under
// prefix: a struct's check of a nested struct's options, such as
// run.Config's of Load, returns Within("Load", err). Any other error
// comes back as it is.
func Within(prefix string, err error) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	c := *e
	c.Field = prefix + "." + e.Field
	c.prefix = prefix + "." + e.prefix
	return &c
}

// Error names the options by their field paths.
func (e *Error) Error() string { return e.Text(nil) }

// Text is the message with the options named by name, which is given
// their field paths; nil names them by their paths.
func (e *Error) Text(name func(field string) string) string {
	return e.err(name).Error()
}

// Unwrap returns the error the message wraps with %w, if any.
func (e *Error) Unwrap() error { return errors.Unwrap(e.err(nil)) }

func (e *Error) err(name func(string) string) error {
	var b strings.Builder
	rest := e.format
	for {
		before, after, ok := strings.Cut(rest, "{")
		field, tail, closed := strings.Cut(after, "}")
		if !ok || !closed {
			break
		}
		path := e.prefix + field
		if name != nil {
			path = name(path)
		}
		b.WriteString(before)
		b.WriteString(strings.ReplaceAll(path, "%", "%%"))
		rest = tail
	}
	b.WriteString(rest)
	return fmt.Errorf(b.String(), e.args...)
}

// Names returns the namer for Text of a caller whose option names are
// kebab case: a field path is named by its last elements in kebab case,
// the longest that known accepts ("Load.Timeout" is load-timeout where
// that is known, else timeout), or as renamed says of them ({"MaxRequests":
// "requests"}); by the path itself when known accepts none.
func Names(known func(name string) bool, renamed map[string]string) func(field string) string {
	return func(path string) string {
		parts := strings.Split(path, ".")
		for i := range parts {
			name, ok := renamed[strings.Join(parts[i:], ".")]
			if !ok {
				name = Kebab(strings.Join(parts[i:], ""))
			}
			if known(name) {
				return name
			}
		}
		return path
	}
}

// Kebab spells a Go name in kebab case: MaxInFlight is max-in-flight, PID
// is pid, CACertFile is ca-cert-file.
func Kebab(name string) string {
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		lowerNext := i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if i > 0 && unicode.IsUpper(r) && (!unicode.IsUpper(rs[i-1]) || lowerNext) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
