package server

import (
	"testing"
	"time"
)

func TestTimeTicks(t *testing.T) {
	at := float64(time.Date(2026, 12, 3, 19, 17, 42, 0, time.UTC).Unix())
	for _, tc := range []struct {
		span time.Duration
		want string
	}{
		{90 * time.Second, "19:17:42"},
		{15 * time.Minute, "19:17:42"},
		{time.Hour, "12-03 19:17"},
		{4 * 24 * time.Hour, "12-03 19:17"},
		{30 * 24 * time.Hour, "2026-12-03"},
	} {
		if got := timeTicks(tc.span)(at); got != tc.want {
			t.Errorf("timeTicks(%v) = %q, want %q", tc.span, got, tc.want)
		}
	}
}
