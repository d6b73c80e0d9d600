package run

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/rundir"
)

// BareProfiles reads profile files for diagnose and sorts them by kind
// and by their own timestamps. Every file is read by stack
// (pprofx.ReadStacks), several at once; a heap snapshot goes into the
// heap series as soon as it is read (diagnose.HeapSeries), and only the
// first and the last of the series are parsed whole, as the checks need:
// a hundred large snapshots take a fraction of the time and memory of
// parsing each.
func BareProfiles(paths []string) (diagnose.Input, error) {
	var in diagnose.Input
	heap := diagnose.NewHeapSeries(len(paths))
	others := make([]bool, len(paths))
	err := eachParallel(len(paths), func(i int) error {
		// Unmerged: the heap series merges stacks itself. Within what
		// Parse would decode: the series turns some into profiles.
		s, err := rundir.ReadStacksFile(paths[i], pprofx.ReadOptions{Unmerged: true, MaxDecoded: pprofx.DefaultMaxDecoded})
		if err != nil {
			return err
		}
		if !slices.Contains(s.Types(), pprofx.InuseSpace) {
			others[i] = true
			return nil
		}
		heap.Add(i, diagnose.Profile{Name: paths[i], Open: opener(paths[i])}, s)
		return nil
	})
	if err != nil {
		return in, err
	}
	for i, path := range paths {
		if !others[i] {
			continue
		}
		p, err := rundir.ParseProfileFile(path)
		if err != nil {
			return in, err
		}
		entry := diagnose.Profile{Name: path, Profile: p}
		if p.TimeNanos > 0 {
			entry.Time = time.Unix(0, p.TimeNanos)
		}
		types := pprofx.Types(p)
		switch {
		case slices.Contains(types, "goroutine"):
			in.Goroutines = append(in.Goroutines, entry)
		case slices.Contains(types, "cpu"):
			if in.CPU != nil {
				return in, fmt.Errorf("read profile %s: a second CPU profile; give one", path)
			}
			in.CPU = p
		case slices.Contains(types, "delay"):
			in.Contention = append(in.Contention, entry)
		default:
			return in, fmt.Errorf("read profile %s: sample types %s are not of a heap, allocs, goroutine, CPU, block or mutex profile", path, strings.Join(types, ", "))
		}
	}
	if err := in.UseHeap(heap); err != nil {
		return in, err
	}
	for _, list := range [][]diagnose.Profile{in.Heap, in.Goroutines} {
		for _, p := range list {
			if p.Time.IsZero() && len(list) > 1 {
				return in, fmt.Errorf("read profile %s: it carries no timestamp, so it cannot be ordered in a series", p.Name)
			}
		}
	}
	slices.SortStableFunc(in.Goroutines, func(a, b diagnose.Profile) int { return a.Time.Compare(b.Time) })
	return in, nil
}

// opener opens a file for diagnose.Profile.Open.
func opener(path string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return os.Open(path) }
}

// eachParallel calls f for 0 … n-1 on as many goroutines as there are
// processors and returns the error of the lowest index that failed.
func eachParallel(n int, f func(i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				errs[i] = f(i)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
