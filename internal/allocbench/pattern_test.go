package allocbench

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestMatrix(t *testing.T) {
	ps := Matrix()
	if len(ps) != 48 {
		t.Fatalf("%d patterns, want 2×2×3×2×2 = 48", len(ps))
	}
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Name()] {
			t.Errorf("pattern %s twice", p.Name())
		}
		seen[p.Name()] = true
		if p.Large && p.ObjectBytes() <= 32<<10 || !p.Large && p.ObjectBytes() > 32<<10-8 {
			t.Errorf("%s: object of %d bytes on the wrong side of the 32 KiB small-object limit", p.Name(), p.ObjectBytes())
		}
	}
}

func TestPattern_ChildArgs(t *testing.T) {
	tests := []struct {
		p    Pattern
		want string
	}{
		{Pattern{Large: true, Pointers: true, Container: ContainerSlice, Sparse: true}, "-object 4194304 -container slice -live 1048576 -ptr -sparse"},
		{Pattern{Container: ContainerMap, Transient: true}, "-object 16384 -container map -live 1048576 -transient"},
	}
	for _, tt := range tests {
		t.Run(tt.p.Name(), func(t *testing.T) {
			if got := strings.Join(tt.p.ChildArgs(1<<20), " "); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		expr    string
		want    []string
		wantErr string
	}{
		{expr: "^large-ptr-slice-retained", want: []string{"large-ptr-slice-retained-sparse", "large-ptr-slice-retained-full"}},
		{expr: "small-noptr-chan-transient-full$", want: []string{"small-noptr-chan-transient-full"}},
		{expr: "nothing", wantErr: "no pattern matches"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			ps, err := Filter(Matrix(), regexp.MustCompile(tt.expr))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range ps {
				names = append(names, p.Name())
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("got %v, want %v", names, tt.want)
			}
		})
	}
}

func TestParseToolchains(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "local", want: []string{"local"}},
		{in: "go1.23.12, go1.24.3,go1.25.0", want: []string{"go1.23.12", "go1.24.3", "go1.25.0"}},
		{in: "go1.26rc1,local", want: []string{"go1.26rc1", "local"}},
		{in: "", wantErr: "no toolchain given"},
		{in: "1.24.3", wantErr: `toolchain "1.24.3": want local or a Go release`},
		{in: "go1.24.3,go1.24.3", wantErr: "listed twice"},
		{in: "gofoo", wantErr: `toolchain "gofoo"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseToolchains(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzParseToolchains(f *testing.F) {
	for _, s := range []string{"local", "go1.23.12,go1.24.3,go1.25.0", "go1.26rc1", "", ",,", "go1.24.3,go1.24.3", "1.24", "go1.99.0;rm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		names, err := ParseToolchains(list)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if len(names) == 0 {
			t.Fatal("no toolchain and no error")
		}
		for _, n := range names {
			// A name goes into GOTOOLCHAIN and a directory name: no
			// separators, no spaces, no shell characters.
			if n != LocalToolchain && (strings.ContainsAny(n, "/\\ ,;$`'\"\t\n") || !strings.HasPrefix(n, "go1.")) {
				t.Fatalf("accepted %q", n)
			}
		}
	})
}
