package inspect

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentrl/agentrl/trainer/store"
)

// screenshotDir is where the browser test keeps a screenshot of each view
// (git-ignored); INSPECT_SCREENSHOTS names another folder.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("INSPECT_SCREENSHOTS")
	if dir == "" {
		dir = "screenshots"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts headless Chromium driven over the DevTools protocol, or
// skips the test when it is not installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("chromium is not installed (Debian package \"chromium\"; `make deps` installs it): skipping the browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser: no timeout on this context
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// demoVocab gives the fixture's six token ids words, so the token view
// reads like text.
var demoVocab = map[int32]string{151644: "<|im_start|>", 0: "assistant", -1: "\n", 2147483647: "Saint", 42: "-Exupéry", 7: "<|im_end|>"}

// A person's session in a real browser: open the runs, filter the
// trajectories, open one, switch the token colouring, open a sample of
// its group, run an example query and a write. Each view is kept as a
// screenshot in screenshotDir.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	decode := func(id int32) string { return demoVocab[id] }
	ts := newTestServer(t,
		Source{Label: "grpo", Path: writeFixture(t, dir, "grpo", 2), Decode: decode},
		Source{Label: "ppo", Path: writeFixture(t, dir, "ppo", 1), Decode: decode})
	shots := screenshotDir(t)
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			b, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(shots, name+".png"), b, 0o644)
		}
	}
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	strs := func(expr string) []string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	// navigated waits until the page at a URL containing want has loaded:
	// the page being replaced may answer first, or not at all.
	navigated := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState === 'complete' ? location.href : ''`))
			if err == nil && strings.Contains(v, want) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no page at a URL with %q loaded", want)
	}

	// The runs page: both runs overlaid. The charts drawn are those of the
	// plot table with data in either run: train reward (iterations 1-2),
	// evaluation EM and F1 (iterations 0 and 2; one chart per key when
	// overlaid) and entropy: 4 images, each of which must load at the
	// report's chart width, 580 px.
	do("runs page",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(css("#curves")),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('#curves img')].every(i => i.complete && i.naturalWidth > 0)`,
			chromedp.WithPollingTimeout(20*time.Second)),
		shot("runs"))
	if w := strs(`[...document.querySelectorAll('#curves img')].map(i => String(i.naturalWidth))`); strings.Join(w, " ") != "580 580 580 580" {
		t.Errorf("runs page: chart widths %v, want 4 charts of 580 px", w)
	}
	if runs := text("#runs"); !strings.Contains(runs, "grpo") || !strings.Contains(runs, "ppo") {
		t.Errorf("runs table %q does not name both runs", runs)
	}

	// Open the first run's trajectories: all 12, then filter to the
	// correct ones that used lookup: 1-train-1-0, 2-train-0-0 and
	// 2-eval-1-0 (fixtureRows).
	do("trajectories",
		chromedp.Click(css(`a.run-link[href="/r/0/trajectories"]`)))
	navigated("/r/0/trajectories")
	if c := text("#count"); !strings.HasPrefix(c, "12 ") {
		t.Errorf("unfiltered: %q, want 12 trajectories", c)
	}
	do("filter",
		chromedp.SetValue(css(`select[name="tool"]`), "lookup"),
		chromedp.SetValue(css(`select[name="correct"]`), "1"),
		chromedp.Click(css("#apply")))
	navigated("tool=lookup")
	do("filtered", shot("trajectories"))
	ids := strs(`[...document.querySelectorAll('#trajectories a.tid')].map(a => a.textContent)`)
	if c := text("#count"); strings.Join(ids, " ") != "1-train-1-0 2-train-0-0 2-eval-1-0" || !strings.HasPrefix(c, "3 ") {
		t.Errorf("filtered: %q, rows %v; want 3 trajectories 1-train-1-0 2-train-0-0 2-eval-1-0", c, ids)
	}

	// Open the first. Its tokens (trajectorytest.Full): mask 0 0 0 1 1 0,
	// advantages 0 0 0 0.75 -0.75 0.
	do("trajectory",
		chromedp.Click(css(`#trajectories a.tid`)))
	navigated("/r/0/t/")
	do("tokens", chromedp.WaitVisible(css("#tokens span")))
	if title, spans := text("h1"), strs(`[...document.querySelectorAll('#tokens span')].map(s => s.textContent)`); title != "1-train-1-0" || len(spans) != 6 || spans[3] != "Saint" {
		t.Fatalf("trajectory page: title %q with token spans %q, want 1-train-1-0 with 6, the fourth Saint", title, spans)
	}
	colour := func(mode string) []string {
		t.Helper()
		do("colour by "+mode,
			chromedp.SetValue(css("#color"), mode),
			chromedp.Evaluate[chromedp.Void](`document.getElementById('color').dispatchEvent(new Event('change'))`))
		return strs(`[...document.querySelectorAll('#tokens span')].map(s => getComputedStyle(s).backgroundColor)`)
	}
	// Colour by advantage. The scale is the largest |A|, 0.75: token 3
	// (+0.75) is green at alpha 0.85 * 0.75/0.75 = 0.85, token 4 (-0.75)
	// red at 0.85, token 0 (0) transparent green.
	bg := colour("advantage")
	for i, want := range map[int]string{0: "rgba(34, 197, 94, 0)", 3: "rgba(34, 197, 94, 0.85)", 4: "rgba(239, 68, 68, 0.85)"} {
		if bg[i] != want {
			t.Errorf("advantage colouring: token %d is %s, want %s", i, bg[i], want)
		}
	}
	// Colour by the training/rollout ratio exp(train_lp - lp): token 3
	// exp(-0.25 + 0.125) = exp(-0.125), token 4 exp(-3.25 + 3.5) =
	// exp(0.25). The scale is the largest |log ratio|, 0.25: token 4 is
	// blue at alpha 0.85, token 3 red at 0.85 * 0.125/0.25 = 0.425; the
	// prompt tokens have no ratio and no colour. Chromium keeps alpha in 8
	// bits and prints the shortest decimal of the same byte: 0.425 * 255 =
	// 108.4 is byte 108, printed 0.424 (0.42 would be byte 107); 0.85 is
	// byte 217, printed 0.85.
	bg = colour("ratio")
	for i, want := range map[int]string{0: "rgba(0, 0, 0, 0)", 3: "rgba(239, 68, 68, 0.424)", 4: "rgba(59, 130, 246, 0.85)"} {
		if bg[i] != want {
			t.Errorf("ratio colouring: token %d is %s, want %s", i, bg[i], want)
		}
	}
	do("screenshot", shot("trajectory"))
	// Hovering a token shows its values: exp(0.25) = 1.284 to 4 digits,
	// entropy 0.0625.
	tip, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`#tokens span[data-i="4"]`), "title"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mask 1", "advantage -0.75", "behaviour logprob -3.5", "ratio 1.284", "entropy 0.0625"} {
		if !strings.Contains(tip.Value, want) {
			t.Errorf("token 4's hover text %q lacks %q", tip.Value, want)
		}
	}
	if legend := text("#legend"); !strings.Contains(legend, "0.25") {
		t.Errorf("ratio legend %q does not give the scale 0.25", legend)
	}
	// The group: the two samples of t2 in iteration 1's training batch,
	// with their rewards 1.1 and -0.5; the other one opens.
	rewards := strs(`[...document.querySelectorAll('#group .sample .reward')].map(b => b.textContent)`)
	do("group",
		chromedp.Click(css(`#group .sample:not(.current)`)))
	navigated("/r/0/t/6")
	if strings.Join(rewards, " ") != "1.1 -0.5" {
		t.Errorf("group rewards %v, want [1.1 -0.5]", rewards)
	}

	// The SQL box: one click runs an example query. reward_by_iteration has
	// a row per iteration and split: (0, eval), (1, train), (2, eval),
	// (2, train).
	do("sql example",
		chromedp.Click(css("#nav-sql")))
	navigated("/r/0/sql")
	do("example",
		chromedp.Click(chromedp.Search(`//a[@class="example"][starts-with(., "Reward and accuracy by iteration")]`)))
	navigated("reward_by_iteration")
	do("result", chromedp.WaitVisible(css("#result")), shot("sql"))
	if rows := strs(`[...document.querySelectorAll('#result tbody tr')].map(r => r.cells[0].textContent + '/' + r.cells[1].textContent)`); strings.Join(rows, " ") != "0/eval 1/train 2/eval 2/train" {
		t.Errorf("example query rows %v, want 0/eval 1/train 2/eval 2/train", rows)
	}
	// A write is refused, and nothing is deleted.
	do("sql write",
		chromedp.SetValue(css("#query"), "DELETE FROM trajectories"),
		chromedp.Click(css("#run-query")))
	navigated("DELETE")
	refusal := text("#sql-error")
	do("sql count",
		chromedp.SetValue(css("#query"), "SELECT COUNT(*) FROM trajectories"),
		chromedp.Click(css("#run-query")))
	navigated("COUNT")
	if n := text("#result tbody td"); !strings.Contains(refusal, "refused") || n != "12" {
		t.Errorf("DELETE: %q, then %s trajectories; want a refusal and 12", refusal, n)
	}
}

// The runs page of a live run reloads itself when the trainer writes an
// iteration (it polls /api/state every 5 s): the runs table then shows the
// new iteration, with no action from the person watching.
func TestBrowserLiveRefresh(t *testing.T) {
	ctx := browser(t)
	path := filepath.Join(t.TempDir(), "live", "store.db")
	w, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginRun(store.RunInfo{Name: "live"}); err != nil {
		t.Fatal(err)
	}
	writeIterations(t, w, 0, 1)
	ts := newTestServer(t, Source{Label: "live", Path: path})
	lastIteration := func() string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#runs tbody tr').cells[3].textContent`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#runs")),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	if got := lastIteration(); got != "1" {
		t.Fatalf("last iteration %q before the write, want 1", got)
	}
	writeIterations(t, w, 2, 2)
	deadline := time.Now().Add(20 * time.Second)
	for {
		reloaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === 'complete' && window.notReloaded === undefined`))
		if err == nil && reloaded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the runs page did not reload within 20 s of a new iteration")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := lastIteration(); got != "2" {
		t.Errorf("last iteration %q after the reload, want 2", got)
	}
}
