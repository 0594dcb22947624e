package report

import (
	"context"
	"image"
	"image/color"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromium finds the headless browser, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (Debian package \"chromium\"; `make deps` installs it): skipping the screenshot test")
	return ""
}

// screenshot renders the page at path in headless Chromium at 1280x2000
// and returns the screenshot.
func screenshot(t *testing.T, browser, path string) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=1280,2000", "file://"+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, out)
	}
	return readPNG(t, shot)
}

func TestScreenshot(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	path := writeStore(t, dir, fakeRun{name: "grpo-demo", config: demoConfig, iters: 6, scale: 1})
	html, err := Write(path, filepath.Join(dir, "report"))
	if err != nil {
		t.Fatal(err)
	}
	img := screenshot(t, browser, html)
	if img.Bounds() != image.Rect(0, 0, 1280, 2000) {
		t.Fatalf("screenshot is %v, want 1280x2000", img.Bounds().Size())
	}
	// The plots sit in a grid of two 580-pixel columns under the header:
	// the first (train reward, one series in the first colour) in the left
	// half, the second (eval EM in the first colour, F1 in the second) in
	// the right half. The first row of the grid starts at the topmost pixel
	// of the first colour (the first plot's legend), which must be near the
	// top of the page, and is one chart (330 pixels) high. A curve is
	// hundreds of pixels; the page itself uses neither colour. The
	// tolerance allows for the browser's colour handling.
	first, second := seriesColor(0), seriesColor(1)
	top := topmost(img, image.Rect(0, 0, 640, 2000), first)
	if top < 0 || top > 600 {
		t.Fatalf("first plot: topmost pixel of its colour at row %d, want one within the first 600 rows", top)
	}
	left, right := image.Rect(0, top, 640, top+330), image.Rect(640, top, 1280, top+330)
	if n := countColor(img, left, first, 6); n < 200 {
		t.Errorf("first plot %v: %d pixels of the first series colour, want the reward curve (>= 200)", left, n)
	}
	if n := countColor(img, left, second, 6); n != 0 {
		t.Errorf("first plot %v: %d pixels of the second series colour, but it has one series", left, n)
	}
	if n := countColor(img, right, second, 6); n < 200 {
		t.Errorf("second plot %v: %d pixels of the second series colour, want the F1 curve (>= 200)", right, n)
	}
}

// topmost returns the first row of r holding a pixel near c, -1 if none.
func topmost(img image.Image, r image.Rectangle, c color.RGBA) int {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		if countColor(img, image.Rect(r.Min.X, y, r.Max.X, y+1), c, 6) > 0 {
			return y
		}
	}
	return -1
}

func TestScreenshotCompare(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	a, b := compareStores(t, dir)
	html, err := Compare([]string{a, b}, nil, filepath.Join(dir, "cmp"))
	if err != nil {
		t.Fatal(err)
	}
	img := screenshot(t, browser, html)
	// The first plot (reward_mean) overlays both runs: both colours in the
	// left half of the first row of the grid.
	top := topmost(img, image.Rect(0, 0, 640, 2000), seriesColor(0))
	if top < 0 || top > 600 {
		t.Fatalf("first plot: topmost pixel of its colour at row %d, want one within the first 600 rows", top)
	}
	left := image.Rect(0, top, 640, top+330)
	for run := range 2 {
		if n := countColor(img, left, seriesColor(run), 6); n < 200 {
			t.Errorf("left column: %d pixels of run %d's colour, want its curve (>= 200)", n, run)
		}
	}
}
