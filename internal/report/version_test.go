package report

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestNewVersion(t *testing.T) {
	goLine := "  go:       " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	tests := []struct {
		name    string
		version string
		bi      *debug.BuildInfo
		text    string
	}{
		{"no build info", "dev", nil, "heapscope dev\n" + goLine},
		{
			name:    "released module",
			version: "dev",
			bi:      &debug.BuildInfo{Main: debug.Module{Path: "github.com/heapscope/heapscope", Version: "v1.2.3"}},
			text:    "heapscope v1.2.3\n" + goLine + "  module:   github.com/heapscope/heapscope\n",
		},
		{
			name:    "set at build time, from a modified checkout",
			version: "v1.3.0-rc1",
			bi: &debug.BuildInfo{Main: debug.Module{Path: "github.com/heapscope/heapscope", Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-03-01T12:00:00Z"},
			}},
			text: "heapscope v1.3.0-rc1\n" + goLine + "  module:   github.com/heapscope/heapscope\n  revision: 0123abcd (modified) 2026-03-01T12:00:00Z\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := Write(&b, FormatText, NewVersion(tt.version, tt.bi)); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.text {
				t.Errorf("text:\n%s\nwant:\n%s", b.String(), tt.text)
			}
		})
	}
	var b strings.Builder
	if err := Write(&b, FormatMarkdown, Version{}); err == nil {
		t.Error("Version rendered as Markdown")
	}
}
