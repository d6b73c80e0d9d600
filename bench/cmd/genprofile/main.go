// Command genprofile writes a large, real heap profile for the benchmarks
// of bench/flame-vs-pprof.sh.
//
// It sets runtime.MemProfileRate to 1, so the runtime records every
// allocation, and allocates along many distinct call stacks of 20 to 60
// frames: a handful of fixed outer frames, then a walk through a table of
// small functions that call one another, chosen by a seeded random source
// (skewed near the root, so the flame graph has heavy and light branches),
// ending in one of several allocating leaves. Every walk is a distinct
// stack, so the profile grows by one sample per walk; a tenth of the
// allocations stay reachable, so inuse values are not zero.
//
//	genprofile -size 10MB -o heap-10mb.pb.gz
//	genprofile -size 1MB -series 100 -o 'heap-%03d.pb.gz'
//
// With -series N it writes N snapshots of one process instead, the first
// at -size, each later one after thirty more walks (so cumulative
// values grow and a tenth of the new allocations stay in use), to the
// file names -o gives with the snapshot's number (a printf verb).
//
// With -replay M as well, each later snapshot also follows M walks
// taken before, picked at random, again: the same stacks allocate the
// same sizes once more, and a tenth of what was kept is let go, so the
// snapshots share most of their stacks and differ in their values, as a
// service's heap profiles over a day do (bench/merge-vs-pprof.sh).
//
//	genprofile -size 300KB -series 96 -replay 500 -o 'heap-%03d.pb.gz'
//
// The profile is written as the runtime writes it (runtime/pprof), gzipped,
// with its sample, location and function messages in the runtime's order.
// -size is reached by calibration: a first batch of walks gives the bytes
// per walk, then walks are added until the written profile is at least
// the size asked for.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
)

// Every allocation is recorded: the rate must be set before the first
// allocation worth profiling, hence in a package-level initialiser.
var _ = func() int { runtime.MemProfileRate = 1; return 0 }()

func main() {
	size := flag.String("size", "10MB", "size of the profile to write, such as 1MB or 50MB")
	out := flag.String("o", "heap.pb.gz", "file to write the profile to")
	seed := flag.Uint64("seed", 1, "seed of the random walks")
	nseries := flag.Int("series", 1, "write this many snapshots of one process, named by -o with a printf verb for the number")
	replay := flag.Int("replay", 0, "with -series, walks taken before to take again between snapshots (their stacks' values grow)")
	flag.Parse()
	want, err := parseSize(*size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genprofile:", err)
		os.Exit(2)
	}
	if *nseries > 1 && !strings.Contains(*out, "%") {
		fmt.Fprintln(os.Stderr, "genprofile: -series needs -o with a printf verb for the snapshot's number, such as 'heap-%03d.pb.gz'")
		os.Exit(2)
	}
	first := *out
	if *nseries > 1 {
		first = fmt.Sprintf(*out, 0)
	}
	w, n, got, err := generate(want, *seed, first)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genprofile:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "genprofile: wrote %s: %d bytes, %d walks\n", first, got, n)
	picks := rand.New(rand.NewPCG(*seed, 1))
	for i := 1; i < *nseries; i++ {
		for range 30 {
			w.walk()
		}
		if *replay > 0 {
			w.release(picks)
			for range *replay {
				w.replay(picks.IntN(w.walks))
			}
		}
		data, err := heapProfile()
		if err == nil {
			err = os.WriteFile(fmt.Sprintf(*out, i), data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "genprofile:", err)
			os.Exit(1)
		}
	}
	runtime.KeepAlive(w.keep)
}

// parseSize reads sizes such as 512KB, 10MB or 1GB (powers of 1024).
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}}
	u := strings.ToUpper(strings.TrimSpace(s))
	for _, unit := range units {
		if num, ok := strings.CutSuffix(u, unit.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("parse size %q: want a positive number with KB, MB or GB", s)
			}
			return int64(v * float64(unit.mult)), nil
		}
	}
	return 0, fmt.Errorf("parse size %q: want a positive number with KB, MB or GB", s)
}

// generate walks until the heap profile reaches want bytes, writes it to
// out, and returns the walker, the number of walks and the profile's size.
func generate(want int64, seed uint64, out string) (*walker, int, int64, error) {
	src := rand.NewPCG(seed, 0)
	w := &walker{src: src, rng: rand.New(src), seed: seed}
	w.start()
	const calibration = 2000
	walks := 0
	var data []byte
	batch := calibration
	for {
		for range batch {
			w.walk()
		}
		walks += batch
		var err error
		data, err = heapProfile()
		if err != nil {
			return nil, 0, 0, err
		}
		if int64(len(data)) >= want {
			break
		}
		// Walks add samples at a steady rate of bytes: aim 3% past the
		// target so the last write usually suffices.
		perWalk := float64(len(data)) / float64(walks)
		batch = max(1000, int(float64(want-int64(len(data)))*1.03/perWalk))
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return nil, 0, 0, err
	}
	return w, walks, int64(len(data)), nil
}

func heapProfile() ([]byte, error) {
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		return nil, fmt.Errorf("write heap profile: %w", err)
	}
	if buf.Len() == 0 {
		return nil, errors.New("write heap profile: empty")
	}
	return buf.Bytes(), nil
}

// walker holds the state of the walks: the random source, how deep the
// current walk goes, and the allocations kept alive.
type walker struct {
	src   *rand.PCG
	rng   *rand.Rand
	depth int // frames left to descend
	keep  [][]byte
	sink  []byte
	// seed and walks: walk i draws from the source seeded with seed and
	// i, so that replay can take it again.
	seed  uint64
	walks int
	// jobs and done hand walks to the walker's goroutine and wait for
	// them: -1 for a new walk, else the number of one to take again.
	jobs chan int
	done chan struct{}
}

// start starts the goroutine every walk runs on, so that every walk,
// first or taken again, has the same outer frames: a walk taken again
// adds to the samples of the first.
func (w *walker) start() {
	w.jobs, w.done = make(chan int), make(chan struct{})
	go func() {
		for j := range w.jobs {
			w.take(j)
			w.done <- struct{}{}
		}
	}()
}

// walk runs one new walk of 20 to 60 frames in all.
func (w *walker) walk() {
	w.jobs <- -1
	<-w.done
}

// replay takes walk i again: the same frames and the same sizes, so the
// runtime adds to the same samples.
func (w *walker) replay(i int) {
	w.jobs <- i
	<-w.done
}

// release lets go of a tenth of the allocations kept, picked at random,
// so in-use values fall as well as rise.
func (w *walker) release(picks *rand.Rand) {
	kept := w.keep[:0]
	for _, b := range w.keep {
		if picks.IntN(10) != 0 {
			kept = append(kept, b)
		}
	}
	clear(w.keep[len(kept):])
	w.keep = kept
}

func (w *walker) take(j int) {
	if j < 0 {
		j = w.walks
		w.walks++
	}
	w.src.Seed(w.seed, uint64(j))
	// Five outer frames (runtime.goexit, the walker's goroutine, take,
	// serve, route) and one to three leaf frames surround the walk
	// through the table, where every step is two frames: the step and
	// next.
	frames := 20 + w.rng.IntN(41)
	w.depth = (frames - 8) / 2
	serve(w)
}

//go:noinline
func serve(w *walker) { route(w) }

//go:noinline
func route(w *walker) {
	// Skewed choice near the root: a few handlers carry most of the walks.
	w.next(zipf(w.rng, len(steps)))
}

// zipf picks an index below n with weights 1, 1/2, 1/3, …
func zipf(rng *rand.Rand, n int) int {
	var total float64
	for i := 1; i <= n; i++ {
		total += 1 / float64(i)
	}
	x := rng.Float64() * total
	for i := 1; i <= n; i++ {
		x -= 1 / float64(i)
		if x <= 0 {
			return i - 1
		}
	}
	return n - 1
}

// next calls step i, or allocates when the walk is deep enough.
//
//go:noinline
func (w *walker) next(i int) {
	w.depth--
	if w.depth <= 0 {
		leaves[i%len(leaves)](w)
		return
	}
	steps[i](w)
}

// choose picks the next step: the first levels follow the skew, deeper
// ones are uniform.
func (w *walker) choose() int {
	if w.rng.IntN(4) == 0 {
		return zipf(w.rng, len(steps))
	}
	return w.rng.IntN(len(steps))
}

var steps []func(*walker)

var leaves = []func(*walker){allocSmall, allocMedium, allocLarge, allocString, allocSlice, allocMap}

func init() {
	steps = []func(*walker){
		decodeRequest, parseHeader, lookupUser, loadSession, checkQuota, renderPage,
		encodeBody, compressBody, writeLog, updateCache, fetchRemote, retryCall,
		validateInput, mergeRecords, sortResults, buildIndex, scanTable, joinRows,
		aggregateStats, flushBuffer, signToken, hashPayload, routeEvent, notifyPeers,
	}
}

// The steps below differ only by name; each is a frame of its own.

//go:noinline
func decodeRequest(w *walker) { w.next(w.choose()) }

//go:noinline
func parseHeader(w *walker) { w.next(w.choose()) }

//go:noinline
func lookupUser(w *walker) { w.next(w.choose()) }

//go:noinline
func loadSession(w *walker) { w.next(w.choose()) }

//go:noinline
func checkQuota(w *walker) { w.next(w.choose()) }

//go:noinline
func renderPage(w *walker) { w.next(w.choose()) }

//go:noinline
func encodeBody(w *walker) { w.next(w.choose()) }

//go:noinline
func compressBody(w *walker) { w.next(w.choose()) }

//go:noinline
func writeLog(w *walker) { w.next(w.choose()) }

//go:noinline
func updateCache(w *walker) { w.next(w.choose()) }

//go:noinline
func fetchRemote(w *walker) { w.next(w.choose()) }

//go:noinline
func retryCall(w *walker) { w.next(w.choose()) }

//go:noinline
func validateInput(w *walker) { w.next(w.choose()) }

//go:noinline
func mergeRecords(w *walker) { w.next(w.choose()) }

//go:noinline
func sortResults(w *walker) { w.next(w.choose()) }

//go:noinline
func buildIndex(w *walker) { w.next(w.choose()) }

//go:noinline
func scanTable(w *walker) { w.next(w.choose()) }

//go:noinline
func joinRows(w *walker) { w.next(w.choose()) }

//go:noinline
func aggregateStats(w *walker) { w.next(w.choose()) }

//go:noinline
func flushBuffer(w *walker) { w.next(w.choose()) }

//go:noinline
func signToken(w *walker) { w.next(w.choose()) }

//go:noinline
func hashPayload(w *walker) { w.next(w.choose()) }

//go:noinline
func routeEvent(w *walker) { w.next(w.choose()) }

//go:noinline
func notifyPeers(w *walker) { w.next(w.choose()) }

// The leaves allocate a few objects of varied sizes; one allocation in ten
// stays reachable.

func (w *walker) hold(b []byte) {
	if w.rng.IntN(10) == 0 {
		w.keep = append(w.keep, b)
		return
	}
	w.sink = b
}

//go:noinline
func allocSmall(w *walker) {
	for range 1 + w.rng.IntN(4) {
		w.hold(make([]byte, 16+w.rng.IntN(64)))
	}
}

//go:noinline
func allocMedium(w *walker) { w.hold(make([]byte, 512+w.rng.IntN(2048))) }

//go:noinline
func allocLarge(w *walker) { w.hold(make([]byte, 8192+w.rng.IntN(32768))) }

//go:noinline
func allocString(w *walker) {
	s := strconv.Itoa(w.rng.IntN(1 << 30))
	w.hold([]byte(strings.Repeat(s, 1+w.rng.IntN(8))))
}

//go:noinline
func allocSlice(w *walker) {
	b := make([]byte, 0, 8)
	for range 1 + w.rng.IntN(200) {
		b = append(b, byte(w.rng.IntN(256)))
	}
	w.hold(b)
}

//go:noinline
func allocMap(w *walker) {
	m := make(map[int]int, 1+w.rng.IntN(16))
	for i := range 1 + w.rng.IntN(16) {
		m[i] = i
	}
	w.hold(make([]byte, len(m)*8))
}
