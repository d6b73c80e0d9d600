package browsertests

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns the browser binary: $CHROMIUM, else Debian's chromium
// or another Chromium-based browser on PATH.
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: install Debian's chromium package (.ci/run does) or set $CHROMIUM")
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile and returns
// the context of a tab in it. The browser stops when the test ends, or
// after two minutes at most.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	ctx, started := startBrowser(t)
	if err := <-started; err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// startBrowser starts the browser of newBrowser in the background, so a
// test can prepare its page meanwhile: the context is usable once started
// delivers nil.
func startBrowser(t testing.TB) (context.Context, <-chan error) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	parent, cancelParent := context.WithTimeout(context.Background(), 2*time.Minute)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		started <- chromedp.Do(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		cancelParent()
		<-done
	})
	return ctx, started
}

// fileURL is the file:// address of a path.
func fileURL(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.ToSlash(abs)
}

// screenshot saves the page as a PNG under the test's temporary directory
// and checks it decodes to the window's size.
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	data, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
		t.Errorf("screenshot is %dx%d, want the window", b.Dx(), b.Dy())
	}
	// $HEAPSCOPE_SCREENSHOTS keeps them (docs/images are made so).
	dir := os.Getenv("HEAPSCOPE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}
