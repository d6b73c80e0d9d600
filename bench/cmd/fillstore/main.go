// Command fillstore fills a watch store with a target's history, for the
// benchmarks of the history server: copies of one real run directory
// ingested as the runs of one target every -every over -days, through the
// store's own Ingest (so the index holds what watch's commits write).
//
//	fillstore -run RUN_DIR -store DIR -days 30 -every 15m
//
// It prints the target, the number of runs and the time it took.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/heapscope/heapscope/internal/store"
)

func main() {
	runDir := flag.String("run", "", "a run directory to copy (watch --once's, or profile's)")
	dir := flag.String("store", "", "the store to fill")
	days := flag.Int("days", 30, "days of history")
	every := flag.Duration("every", 15*time.Minute, "the period of the runs")
	target := flag.String("target", "http://10.0.1.15:6060/debug/pprof/", "the target's key")
	flag.Parse()
	if *runDir == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "fillstore: give -run and -store")
		os.Exit(2)
	}
	st, err := store.Open(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fillstore:", err)
		os.Exit(1)
	}
	defer st.Close()
	start := time.Now()
	end := start.Truncate(*every)
	n := int(time.Duration(*days) * 24 * time.Hour / *every)
	for i := range n {
		at := end.Add(-time.Duration(n-i) * *every)
		if _, err := st.Ingest(*runDir, store.Entry{Target: *target, Time: at, Scheduled: true}); err != nil {
			fmt.Fprintln(os.Stderr, "fillstore:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("%s %d %.1f\n", *target, n, time.Since(start).Seconds())
}
