package main

import (
	"embed"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heapscope/heapscope/internal/store/location"
)

// helpFiles hold the commands' help, one page a command: its
// description, then, after a line "---", its examples. A page is named by
// the command's path after heapscope, words joined by "_" (bench_run.txt),
// heapscope.txt for heapscope itself. docs/reference is generated from
// the help they make (TestReference).
//
//go:embed help/*.txt
var helpFiles embed.FS

// withHelp sets the Long description and Example of cmd from its page,
// help/name.txt, with each placeholder of vars (pairs such as
// "{{figures}}", "…") replaced by its text.
func withHelp(cmd *cobra.Command, name string, vars ...string) *cobra.Command {
	page, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("heapscope has no help page " + name + ": " + err.Error())
	}
	text := strings.NewReplacer(vars...).Replace(strings.TrimSuffix(string(page), "\n"))
	cmd.Long, cmd.Example, _ = strings.Cut(text, "\n---\n")
	return cmd
}

// storeFlags adds the flags that name a store (location.Flags) to fs.
func storeFlags(fs *pflag.FlagSet, l *location.Location, data string) {
	for _, f := range l.Flags(data) {
		fs.StringVar(f.Value, f.Name, "", f.Usage)
	}
}
