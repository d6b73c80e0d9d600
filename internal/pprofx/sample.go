package pprofx

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
)

// Types returns the names of the sample types of p, in profile order.
func Types(p *profile.Profile) []string {
	names := make([]string, len(p.SampleType))
	for i, st := range p.SampleType {
		names[i] = st.Type
	}
	return names
}

// SampleIndex returns the index in p.SampleType of the sample type called
// name. An empty name means the profile's default: p.DefaultSampleType
// when it names one of the types, else the last type (pprof's rule). An
// unknown name gives an error listing the types p has.
func SampleIndex(p *profile.Profile, name string) (int, error) {
	if len(p.SampleType) == 0 {
		return 0, errors.New("profile has no sample types")
	}
	if name == "" {
		if i := indexOf(p, p.DefaultSampleType); p.DefaultSampleType != "" && i >= 0 {
			return i, nil
		}
		return len(p.SampleType) - 1, nil
	}
	if i := indexOf(p, name); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("sample type %q not in profile; it has %s", name, strings.Join(Types(p), ", "))
}

func indexOf(p *profile.Profile, name string) int {
	for i, st := range p.SampleType {
		if st.Type == name {
			return i
		}
	}
	return -1
}
