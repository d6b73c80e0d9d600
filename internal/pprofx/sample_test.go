package pprofx

import (
	"slices"
	"testing"

	"github.com/google/pprof/profile"
)

func TestTypes(t *testing.T) {
	p := loadProfile(t, "heap-start.pb.gz")
	want := []string{"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}
	if got := Types(p); !slices.Equal(got, want) {
		t.Errorf("Types = %v, want %v", got, want)
	}
}

func TestSampleIndex(t *testing.T) {
	heap := loadProfile(t, "heap-start.pb.gz")
	withDefault := heap.Copy()
	withDefault.DefaultSampleType = "alloc_space"
	staleDefault := heap.Copy()
	staleDefault.DefaultSampleType = "cpu"
	tests := []struct {
		name    string
		p       *profile.Profile
		sample  string
		want    int
		wantErr string
	}{
		{name: "by name", p: heap, sample: "alloc_objects", want: 0},
		{name: "last by name", p: heap, sample: "inuse_space", want: 3},
		{name: "default is the last type", p: heap, sample: "", want: 3},
		{name: "default sample type", p: withDefault, sample: "", want: 1},
		{name: "default naming no type", p: staleDefault, sample: "", want: 3},
		{name: "explicit beats default", p: withDefault, sample: "inuse_objects", want: 2},
		{name: "unknown", p: heap, sample: "foo", wantErr: `sample type "foo" not in profile; it has alloc_objects, alloc_space, inuse_objects, inuse_space`},
		{name: "case matters", p: heap, sample: "Alloc_space", wantErr: `sample type "Alloc_space" not in profile; it has alloc_objects, alloc_space, inuse_objects, inuse_space`},
		{name: "no types", p: &profile.Profile{}, sample: "", wantErr: "profile has no sample types"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SampleIndex(tt.p, tt.sample)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("SampleIndex error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SampleIndex: %v", err)
			}
			if got != tt.want {
				t.Errorf("SampleIndex = %d, want %d", got, tt.want)
			}
		})
	}
}
