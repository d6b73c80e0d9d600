package report

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Version is heapscope's version and build information (heapscope
// version), in text or JSON.
type Version struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	Module    string `json:"module,omitempty"`
	Revision  string `json:"revision,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	BuildTime string `json:"build_time,omitempty"`
}

// NewVersion describes the heapscope binary of version (set at build time,
// "dev" unless) and build information bi (nil when unknown): its Go and
// platform, module, and the VCS revision it was built from. A "dev"
// version takes the module's version when it has one.
func NewVersion(version string, bi *debug.BuildInfo) Version {
	v := Version{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
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

// Formats lists Version's formats.
func (Version) Formats() []Format { return []Format{FormatText, FormatJSON} }

func (v Version) data() any { return v }

func (v Version) render(w io.Writer, _ Format) error {
	fmt.Fprintf(w, "heapscope %s\n", v.Version)
	fmt.Fprintf(w, "  go:       %s %s\n", v.GoVersion, v.Platform)
	if v.Module != "" {
		fmt.Fprintf(w, "  module:   %s\n", v.Module)
	}
	if v.Revision == "" {
		return nil
	}
	mod := ""
	if v.Modified {
		mod = " (modified)"
	}
	_, err := fmt.Fprintf(w, "  revision: %s%s %s\n", v.Revision, mod, v.BuildTime)
	return err
}
