package progress

import (
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	type show struct {
		at   time.Duration // since the start
		line string
	}
	tests := []struct {
		name                  string
		terminal, offTerminal bool
		every                 time.Duration
		shows                 []show
		want                  string
	}{
		{
			name:     "terminal redraws in place and clears at the end",
			terminal: true,
			shows:    []show{{0, "a"}, {time.Millisecond, "b"}},
			want:     "\r\033[Ka\r\033[Kb\r\033[K",
		},
		{
			name:  "off a terminal, silent unless asked",
			shows: []show{{0, "a"}, {time.Second, "b"}},
			want:  "",
		},
		{
			name:        "off a terminal, every line when asked",
			offTerminal: true,
			shows:       []show{{0, "a"}, {time.Millisecond, "b"}},
			want:        "a\nb\n",
		},
		{
			name:        "off a terminal, one line an interval and the last at the end",
			offTerminal: true,
			every:       time.Second,
			shows:       []show{{0, "a"}, {100 * time.Millisecond, "b"}, {time.Second, "c"}, {1100 * time.Millisecond, "d"}, {1200 * time.Millisecond, "e"}},
			want:        "a\nc\ne\n",
		},
		{
			name:        "off a terminal, nothing held back",
			offTerminal: true,
			every:       time.Second,
			shows:       []show{{0, "a"}, {2 * time.Second, "b"}},
			want:        "a\nb\n",
		},
		{
			name:     "terminal without a line drawn clears nothing",
			terminal: true,
			want:     "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			l := NewLine(&b, tt.terminal, tt.offTerminal, tt.every)
			start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			for _, s := range tt.shows {
				l.now = func() time.Time { return start.Add(s.at) }
				l.Show(s.line)
			}
			l.Finish()
			l.Finish()
			if got := b.String(); got != tt.want {
				t.Errorf("wrote %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLine_Step(t *testing.T) {
	var b strings.Builder
	l := NewLine(&b, false, true, 0)
	l.Step(3, 10, "go test -bench (base)")
	if got, want := b.String(), "[3/10] go test -bench (base)\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
