package browsertests

import (
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
)

// BenchmarkServer_TargetPageFirstPaint opens the target page of the
// store at $HEAPSCOPE_BENCH_STORE (bench/server-first-paint.sh fills one
// with 30 days of a target's runs) over the last 30 days in Chromium,
// b.N times, and reports the first contentful paint as the browser
// measures it: p50 and max, in milliseconds, with the page's size.
func BenchmarkServer_TargetPageFirstPaint(b *testing.B) {
	dir := os.Getenv("HEAPSCOPE_BENCH_STORE")
	if dir == "" {
		b.Skip("set HEAPSCOPE_BENCH_STORE to a filled store (bench/server-first-paint.sh)")
	}
	st, err := store.OpenExisting(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	keys, err := st.Targets()
	if err != nil || len(keys) == 0 {
		b.Fatalf("targets %v, %v", keys, err)
	}
	s, err := server.New(server.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, started := startBrowser(b)
	if err := <-started; err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	page := srv.URL + "/target?target=" + url.QueryEscape(keys[0]) +
		"&from=" + now.Add(-30*24*time.Hour).UTC().Format(time.RFC3339) + "&to=" + now.UTC().Format(time.RFC3339)
	var paints []float64
	var size, dots float64
	b.ResetTimer()
	for range b.N {
		if err := chromedp.Do(ctx,
			chromedp.Navigate(page),
			chromedp.Poll[chromedp.Void](`performance.getEntriesByName("first-contentful-paint").length > 0`, chromedp.WithPollingTimeout(30*time.Second)),
		); err != nil {
			b.Fatal(err)
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[
			performance.getEntriesByName("first-contentful-paint")[0].startTime,
			performance.getEntriesByType("navigation")[0].encodedBodySize,
			document.querySelectorAll("figure.timeline svg circle").length]`))
		if err != nil {
			b.Fatal(err)
		}
		paints = append(paints, v[0])
		size, dots = v[1], v[2]
	}
	b.StopTimer()
	slices.Sort(paints)
	b.ReportMetric(paints[len(paints)/2], "fcp-p50-ms")
	b.ReportMetric(paints[len(paints)-1], "fcp-max-ms")
	b.ReportMetric(size/1024, "page-KiB")
	b.ReportMetric(dots, "dots")
}
