package kv

import (
	"strconv"
	"strings"
	"testing"
)

func TestCheckPreload(t *testing.T) {
	tests := []struct {
		name    string
		preload int
		wantErr bool
	}{
		{name: "zero is accepted", preload: 0},
		{name: "default is accepted", preload: DefaultPreload},
		{name: "max is accepted", preload: MaxPreload},
		{name: "negative is rejected", preload: -1, wantErr: true},
		{name: "over max is rejected", preload: MaxPreload + 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPreload(tt.preload)
			if (err != nil) != tt.wantErr {
				t.Fatalf("CheckPreload(%d) error %v, want error %v", tt.preload, err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "preload "+strconv.Itoa(tt.preload)+": ") {
				t.Errorf("CheckPreload(%d) error %q, want it to start with the preload", tt.preload, err)
			}
		})
	}
}

func TestKey(t *testing.T) {
	for i, want := range map[int]string{0: "key-0", 7: "key-7", 999: "key-999"} {
		if got := Key(i); got != want {
			t.Errorf("Key(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestPreloadValue(t *testing.T) {
	tests := []struct {
		name string
		i    int
	}{
		{name: "zero", i: 0},
		{name: "one digit", i: 7},
		{name: "three digits", i: 999},
		{name: "six digits", i: 123456},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := PreloadValue(tt.i)
			if len(v) != 100 || !strings.HasPrefix(v, "value-"+strconv.Itoa(tt.i)+"-") {
				t.Errorf("PreloadValue(%d) = %q (%d bytes), want 100 bytes starting value-%d-", tt.i, v, len(v), tt.i)
			}
			if again := PreloadValue(tt.i); again != v {
				t.Errorf("PreloadValue(%d) = %q, then %q: want the same value each time", tt.i, v, again)
			}
		})
	}
	if PreloadValue(1)[len("value-1-"):] == PreloadValue(2)[len("value-2-"):] {
		t.Error("PreloadValue(1) and PreloadValue(2) have the same filler, want it to depend on i")
	}
}
