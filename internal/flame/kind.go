package flame

import (
	"strings"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// Kind tells whose code a frame runs: the runtime's, the standard
// library's, the application's or a dependency's. Renderers colour frames
// by kind.
type Kind uint8

// The kinds of frames.
const (
	// KindApp is the application's own code: package main, and any module
	// path when the application's module is not known.
	KindApp Kind = iota
	// KindStd is the standard library, except the runtime.
	KindStd
	// KindRuntime is the runtime: package runtime and internal/runtime/….
	KindRuntime
	// KindDependency is code of another module than Options.Module, when
	// it is set.
	KindDependency
	// KindUnknown is a frame without a function name (an address).
	KindUnknown
)

var kindNames = [...]string{"application", "standard library", "runtime", "dependency", "unknown"}

// String returns the kind's name in the legends: "application",
// "standard library", "runtime", "dependency" or "unknown".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// ShortName returns a function name without the directories of its
// package path: "run.(*collector).addTop" for
// "github.com/heapscope/heapscope/internal/run.(*collector).addTop".
func ShortName(function string) string {
	prefix := function
	if i := strings.IndexByte(prefix, '['); i >= 0 {
		prefix = prefix[:i]
	}
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		return function[i+1:]
	}
	return function
}

// classify returns the kind of a function, given the application's
// module path (empty when unknown).
func classify(function, module string) Kind {
	if function == "" || strings.HasPrefix(function, "0x") {
		return KindUnknown
	}
	pkg := pprofx.PackagePath(function)
	switch {
	case pkg == "runtime" || strings.HasPrefix(pkg, "internal/runtime/") || strings.HasPrefix(pkg, "runtime/internal/"):
		return KindRuntime
	case pkg == "main" || pkg == "command-line-arguments":
		return KindApp
	}
	first, _, _ := strings.Cut(pkg, "/")
	if !strings.Contains(first, ".") {
		return KindStd
	}
	if module != "" && pkg != module && !strings.HasPrefix(pkg, module+"/") {
		return KindDependency
	}
	return KindApp
}
