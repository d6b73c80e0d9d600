package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/report"
)

// versionInfo is what heapscope version prints.
type versionInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	Module    string `json:"module,omitempty"`
	Revision  string `json:"revision,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	BuildTime string `json:"build_time,omitempty"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module = bi.Main.Path
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs.time":
			v.BuildTime = s.Value
		}
	}
	return v
}

func newVersionCmd(e *env) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print heapscope's version and build information",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := report.ParseFormat(format)
			if err != nil {
				return err
			}
			if f == report.FormatMarkdown {
				return fmt.Errorf("--format %s: version prints text or json", format)
			}
			v := buildVersion()
			if f == report.FormatJSON {
				return writeJSON(e.stdout, v)
			}
			fmt.Fprintf(e.stdout, "heapscope %s\n", v.Version)
			fmt.Fprintf(e.stdout, "  go:       %s %s\n", v.GoVersion, v.Platform)
			if v.Module != "" {
				fmt.Fprintf(e.stdout, "  module:   %s\n", v.Module)
			}
			if v.Revision != "" {
				mod := ""
				if v.Modified {
					mod = " (modified)"
				}
				fmt.Fprintf(e.stdout, "  revision: %s%s %s\n", v.Revision, mod, v.BuildTime)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	return cmd
}
