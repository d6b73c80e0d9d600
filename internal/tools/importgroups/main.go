// Command importgroups checks that Go files group their imports as
// goimports -local does: the standard library first, then other modules,
// then the module's own packages, each kind in groups of its own separated
// by blank lines. goimports -l alone lets a standard-library group stand
// after another one; this check does not.
//
//	go run ./internal/tools/importgroups -local github.com/heapscope/heapscope $(git ls-files '*.go')
//
// It prints one line per misplaced import, file:line first, and exits 1
// when there is one.
package main

import (
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	local := flag.String("local", "", "import path prefix of the module's own packages")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: importgroups [-local PREFIX] FILE.go...")
		flag.PrintDefaults()
	}
	flag.Parse()
	os.Exit(run(os.Stdout, os.Stderr, *local, flag.Args()))
}

// run checks the files and returns the exit code.
func run(stdout, stderr io.Writer, local string, files []string) int {
	code := 0
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(stderr, "importgroups: %v\n", err)
			return 2
		}
		problems, err := check(name, src, local)
		if err != nil {
			fmt.Fprintf(stderr, "importgroups: %v\n", err)
			return 2
		}
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
			code = 1
		}
	}
	return code
}

// kind is the kind of an import, in the order the groups come in.
type kind int

const (
	std kind = iota
	external
	own
)

func (k kind) String() string {
	return [...]string{"the standard library", "other modules", "this module"}[k]
}

// kindOf classifies an import path: the standard library's have no dot in
// their first element.
func kindOf(path, local string) kind {
	switch first, _, _ := strings.Cut(path, "/"); {
	case !strings.Contains(first, "."):
		return std
	case local != "" && (path == local || strings.HasPrefix(path, strings.TrimSuffix(local, "/")+"/")):
		return own
	}
	return external
}

// check returns the misplaced imports of one file, as "file:line: what".
func check(name string, src []byte, local string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(src), "\n")
	var problems []string
	var (
		prevEnd   = -1 // line of the end of the previous import
		groupKind kind // kind of the current group
		lastKind  kind // kind of the last group before it
		inGroup   bool
	)
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, err
		}
		start, end := fset.Position(spec.Pos()).Line, fset.Position(spec.End()).Line
		k := kindOf(path, local)
		newGroup := !inGroup || blankBetween(lines, prevEnd, start)
		prevEnd = end
		switch {
		case newGroup:
			if inGroup {
				lastKind = groupKind
			}
			if inGroup && k < lastKind {
				problems = append(problems, fmt.Sprintf("%s:%d: %q (%s) comes after a group of %s: group the standard library first, other modules next, this module last",
					name, start, path, k, lastKind))
			}
			inGroup, groupKind = true, k
		case k != groupKind:
			problems = append(problems, fmt.Sprintf("%s:%d: %q (%s) is in a group of %s: give each kind a group of its own, separated by a blank line",
				name, start, path, k, groupKind))
		}
	}
	return problems, nil
}

// blankBetween reports whether a blank line lies between lines after and
// before (1-based, both excluded): what separates import groups.
func blankBetween(lines []string, after, before int) bool {
	for l := after + 1; l < before; l++ {
		if l >= 1 && l <= len(lines) && strings.TrimSpace(lines[l-1]) == "" {
			return true
		}
	}
	return false
}
