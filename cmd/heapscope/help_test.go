package main

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// TestHelpPages checks that every page under help/ is a command's, that
// it has a description, and that no placeholder is left unreplaced.
func TestHelpPages(t *testing.T) {
	var commands []string
	for _, c := range visibleCommands(newRootCmd(&env{})) {
		name := strings.ReplaceAll(strings.TrimPrefix(c.CommandPath(), "heapscope "), " ", "_")
		commands = append(commands, name+".txt")
		if strings.Contains(c.Long+c.Example, "{{") {
			t.Errorf("%s: a placeholder is left in its help:\n%s\n%s", c.CommandPath(), c.Long, c.Example)
		}
	}
	pages, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil || len(pages) == 0 {
		t.Fatalf("help pages %v, %v", pages, err)
	}
	for _, p := range pages {
		name := strings.TrimPrefix(p, "help/")
		if !slices.Contains(commands, name) {
			t.Errorf("%s: no command has this page; remove it", p)
		}
		data, _ := helpFiles.ReadFile(p)
		if long, _, _ := strings.Cut(string(data), "\n---\n"); strings.TrimSpace(long) == "" {
			t.Errorf("%s: no description before its examples", p)
		}
	}
}
