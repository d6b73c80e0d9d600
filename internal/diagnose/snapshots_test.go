package diagnose

import (
	"bytes"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestLoadHeap_sameAsParsed: a series read by stack through Open, given
// in a shuffled order without times, is diagnosed as the same series
// given parsed and in order.
func TestLoadHeap_sameAsParsed(t *testing.T) {
	parsed := holderInput(true, 1)
	parsed.Source = nil
	opened := Input{}
	for _, h := range parsed.Heap {
		var buf bytes.Buffer
		if err := h.Profile.Write(&buf); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		opened.Heap = append(opened.Heap, Profile{Name: h.Name, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}})
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(opened.Heap), func(i, j int) {
		opened.Heap[i], opened.Heap[j] = opened.Heap[j], opened.Heap[i]
	})
	parsed.Live = nil
	want := Run(parsed)
	if err := opened.LoadHeap(); err != nil {
		t.Fatal(err)
	}
	for i, h := range opened.Heap {
		if h.Name != parsed.Heap[i].Name || !h.Time.Equal(parsed.Heap[i].Time) {
			t.Fatalf("snapshot %d is %s at %s, want %s at %s: not in the profiles' time order", i, h.Name, h.Time, parsed.Heap[i].Name, parsed.Heap[i].Time)
		}
	}
	got := Run(opened)
	if len(want.Findings) == 0 {
		t.Fatal("the parsed series has no finding to compare")
	}
	if !reflect.DeepEqual(got.Findings, want.Findings) || !reflect.DeepEqual(got.Notes, want.Notes) {
		t.Errorf("read by stack:\n%v\n%v\nparsed:\n%v\n%v", got.Findings, got.Notes, want.Findings, want.Notes)
	}
}

func TestLoadHeap_unreadableSnapshot(t *testing.T) {
	in := Input{Heap: []Profile{{Name: "heap-000.pb.gz", Open: func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader([]byte("not a profile"))), nil
	}}}}
	if err := in.LoadHeap(); err == nil {
		t.Fatal("LoadHeap of a file that is not a profile succeeded")
	}
	rep := Run(in)
	if len(rep.Notes) == 0 {
		t.Error("Run of an unreadable snapshot says nothing")
	}
}
