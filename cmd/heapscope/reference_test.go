package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

// referenceDir holds one page per command, each the command's own help.
var referenceDir = filepath.Join("..", "..", "docs", "reference")

// TestReference keeps docs/reference equal to what the commands say of
// themselves, so the reference cannot drift from the code:
//
//	go test ./cmd/heapscope -run TestReference -update
//
// rewrites it.
func TestReference(t *testing.T) {
	root := newRootCmd(&env{})
	var index bytes.Buffer
	index.WriteString("# heapscope command reference\n\n" +
		"Each page is the command's `--help`, generated from the command itself\n" +
		"(`go test ./cmd/heapscope -run TestReference -update`). The guide to\n" +
		"what each command does and why is [../commands.md](../commands.md).\n\n")
	pages := []string{"README.md"}
	for _, c := range visibleCommands(root) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
		pages = append(pages, name)
		fmt.Fprintf(&index, "- [`%s`](%s): %s\n", c.CommandPath(), name, c.Short)
		t.Run(c.CommandPath(), func(t *testing.T) {
			args := append(strings.Fields(c.CommandPath())[1:], "--help")
			got := heapscope(t, args...)
			if got.code != exitOK || got.stdout == "" {
				t.Fatalf("%s --help: exit %d, stdout %q, stderr %s", c.CommandPath(), got.code, got.stdout, got.stderr)
			}
			page := "# `" + c.CommandPath() + "`\n\n```\n" + got.stdout + "```\n"
			goldenfile.Check(t, filepath.Join(referenceDir, name), []byte(page))
		})
	}
	if goldenfile.Update() {
		if err := os.MkdirAll(referenceDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	goldenfile.Check(t, filepath.Join(referenceDir, "README.md"), index.Bytes())

	// A page whose command has gone is stale.
	entries, err := os.ReadDir(referenceDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(pages, e.Name()) && !strings.HasSuffix(e.Name(), ".got") {
			t.Errorf("%s: no command has this page; remove it", filepath.Join(referenceDir, e.Name()))
		}
	}
}

// visibleCommands lists the commands a user sees in help, depth first,
// the root first.
func visibleCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		out = append(out, visibleCommands(sub)...)
	}
	return out
}
