package report

import (
	"bytes"
	"encoding/base64"
	"image"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trainer/store"
)

// demoConfig is a run configuration with a value that tries to close the
// <pre> it is shown in.
const demoConfig = `{"lr":1e-6,"algo":"grpo","note":"</pre><script>alert(2)</script>","rollout":{"n":4,"temperature":1.0}}`

// runPlots are the PNGs a report of fakeMetrics must have: every plot of
// the table but entropy, which is never logged.
var runPlots = []string{"reward.png", "eval.png", "kl.png", "mismatch.png", "mismatch_ratio.png", "clip.png", "response_len.png", "turns.png", "throughput.png"}

// dataURI matches the embedded images of a page.
var dataURI = regexp.MustCompile(`src="data:image/png;base64,([A-Za-z0-9+/=]+)"`)

func TestWritePlots(t *testing.T) {
	dir := t.TempDir()
	path := writeStore(t, dir, fakeRun{name: "grpo-demo", config: demoConfig, iters: 6, scale: 1})
	out := filepath.Join(dir, "report")
	html, err := Write(path, out)
	if err != nil {
		t.Fatal(err)
	}
	if html != filepath.Join(out, "report.html") {
		t.Errorf("Write returned %s, want %s", html, filepath.Join(out, "report.html"))
	}
	twoSeries := map[string]bool{"eval.png": true, "kl.png": true, "mismatch.png": true, "mismatch_ratio.png": true, "clip.png": true, "turns.png": true, "throughput.png": true}
	for _, name := range runPlots {
		img := readPNG(t, filepath.Join(out, name))
		if img.Bounds() != image.Rect(0, 0, 580, 330) {
			t.Errorf("%s: size %v, want 580x330", name, img.Bounds().Size())
		}
		// Below the legend (one row, ending at y = 52) only the curves use
		// the series colours; a curve across the plot is hundreds of pixels.
		below := image.Rect(0, 60, 580, 330)
		if n := countColor(img, below, seriesColor(0), 0); n < 200 {
			t.Errorf("%s: %d pixels of the first series colour, want a curve (>= 200)", name, n)
		}
		if n := countColor(img, below, seriesColor(1), 0); twoSeries[name] && n < 200 {
			t.Errorf("%s: %d pixels of the second series colour, want a curve (>= 200)", name, n)
		} else if !twoSeries[name] && n != 0 {
			t.Errorf("%s: %d pixels of a second series colour in a one-series plot", name, n)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "entropy.png")); !os.IsNotExist(err) {
		t.Errorf("entropy is never logged, yet entropy.png: %v", err)
	}
}

func TestWritePage(t *testing.T) {
	dir := t.TempDir()
	path := writeStore(t, dir, fakeRun{name: "grpo-demo", config: demoConfig, iters: 6, scale: 1})
	out := filepath.Join(dir, "report")
	htmlPath, err := Write(path, out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)

	t.Run("plots embedded", func(t *testing.T) {
		uris := dataURI.FindAllStringSubmatch(page, -1)
		if len(uris) != len(runPlots) {
			t.Fatalf("%d embedded images, want %d", len(uris), len(runPlots))
		}
		for i, m := range uris {
			png, err := base64.StdEncoding.DecodeString(m[1])
			if err != nil {
				t.Fatalf("image %d: %v", i, err)
			}
			file, err := os.ReadFile(filepath.Join(out, runPlots[i]))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(png, file) {
				t.Errorf("image %d is not %s", i, runPlots[i])
			}
		}
	})

	t.Run("escaping", func(t *testing.T) {
		for _, raw := range []string{"<script", "<b>Hamlet", "<img src=x", "</pre><script>", "<tool_call>"} {
			if strings.Contains(page, raw) {
				t.Errorf("page contains unescaped %q", raw)
			}
		}
		for _, esc := range []string{
			`&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt; Who wrote &lt;b&gt;Hamlet&lt;/b&gt;?`, // the question
			`&lt;/div&gt;&lt;img src=x onerror=alert(1)&gt; Hamlet is a tragedy`,                       // a tool result
			`&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;`,                                        // the config
			`&lt;tool_call&gt;{&#34;name&#34;:&#34;search&#34;}&lt;/tool_call&gt;`,                     // a turn's text
		} {
			if !strings.Contains(page, esc) {
				t.Errorf("page lacks the escaped text %q", esc)
			}
		}
	})

	t.Run("config", func(t *testing.T) {
		// json.Indent with two spaces, key order kept, inside <pre>.
		want := "<pre class=\"config\">{\n  &#34;lr&#34;: 1e-6,\n  &#34;algo&#34;: &#34;grpo&#34;,\n" +
			"  &#34;note&#34;: &#34;&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;&#34;,\n" +
			"  &#34;rollout&#34;: {\n    &#34;n&#34;: 4,\n    &#34;temperature&#34;: 1.0\n  }\n}</pre>"
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the pretty-printed config:\n%s", want)
		}
	})

	t.Run("results", func(t *testing.T) {
		for _, want := range []string{
			"<h1>grpo-demo</h1>",
			// eval/em and eval/f1 last logged at iteration 4: 0.2 + 0.1*4, 0.25 + 0.1*4.
			"Evaluation at iteration 4",
			"<td>eval/em</td><td>0.6</td>",
			"<td>eval/f1</td><td>0.65</td>",
			// Eval trajectories of iteration 4 (fakeEval): hops 1 = {correct em 1 f1 1,
			// wrong em 0 f1 0.5}: EM 1/2, F1 1.5/2; hops 2 = one correct without
			// components: EM from the store's match = 1, no F1; hops 3 = wrong, f1 0.25;
			// all: EM 2/4, F1 (1 + 0.5 + 0.25) / 3 = 0.58333.
			"Exact match by hops, eval trajectories of iteration 4",
			"<td>1</td><td>2</td><td>0.5</td><td>0.75</td>",
			"<td>2</td><td>1</td><td>1</td><td>n/a</td>",
			"<td>3</td><td>1</td><td>0</td><td>0.25</td>",
			`<tr class="total"><td>all</td><td>4</td><td>0.5</td><td>0.5833</td>`,
			// Last values at iteration 5: reward_mean 0.1*5, approx_kl 0.002*6.
			"<td>reward_mean</td><td>5</td><td>0.5</td>",
			"<td>approx_kl</td><td>5</td><td>0.012</td>",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("page lacks %q", want)
			}
		}
		if strings.Contains(page, "<td>entropy</td>") {
			t.Error("the never-logged entropy has a table row")
		}
	})

	t.Run("samples", func(t *testing.T) {
		// Last eval iteration 4: first correct 4-eval-0-0, first wrong 4-eval-1-0;
		// last train iteration 5: rewards 0.2, 0.9, -0.1, 0.5, so sample 1 is best
		// and sample 2 worst.
		last := -1
		for _, want := range []string{
			"evaluation, correct", "4-eval-0-0", "evaluation, wrong", "4-eval-1-0",
			"training, highest reward", "reward <b>0.9</b>", "5-train-0-1",
			"training, lowest reward", "reward <b>-0.1</b>", "5-train-0-2",
		} {
			i := strings.Index(page[last+1:], want)
			if i < 0 {
				t.Fatalf("page lacks %q after the previous sample text", want)
			}
			last += 1 + i
		}
		for _, want := range []string{
			`calls <code>search</code> with <code>{&#34;query&#34;:&#34;author&#34;}</code>`,
			"assistant · turn 2 · 1 token",
			"gold: William Shakespeare | Shakespeare",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("page lacks %q", want)
			}
		}
	})
}

func TestLastValuesSkipNaN(t *testing.T) {
	nan := math.NaN()
	iters := []store.IterationMetrics{
		{Iteration: 0, Metrics: map[string]float64{"kl_ref": 0.1, "eval/em": 0.3, "loss": 2}},
		{Iteration: 1, Metrics: map[string]float64{"kl_ref": 0.2}},
		{Iteration: 2, Metrics: map[string]float64{"kl_ref": nan, "eval/em": nan}},
	}
	// kl_ref's last finite value is 0.2 at iteration 1; eval keys and keys
	// outside the plot table (loss) are not listed.
	got := lastValues(iters)
	if len(got) != 1 || got[0] != (lastValue{key: "kl_ref", iteration: 1, value: 0.2}) {
		t.Errorf("lastValues = %+v, want [kl_ref at 1: 0.2]", got)
	}
	// The last iteration with a finite eval metric is 0.
	it, keys, vals, ok := lastEval(iters)
	if !ok || it != 0 || len(keys) != 1 || keys[0] != "eval/em" || vals[0] != 0.3 {
		t.Errorf("lastEval = %d %v %v %v, want 0 [eval/em] [0.3] true", it, keys, vals, ok)
	}
}

func TestWriteEmptyRun(t *testing.T) {
	// A run that has begun but stored no iteration: a page that says so.
	dir := t.TempDir()
	path := filepath.Join(dir, "fresh", "store.db")
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(store.RunInfo{Name: "fresh", ConfigJSON: `{"lr":1}`}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	html, err := Write(path, filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"No metrics stored yet.", "No evaluation results stored yet.", "iterations <b>none yet</b>"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(string(b), "data:image/png") {
		t.Error("page of an empty run embeds an image")
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "store.db")
	if _, err := Write(missing, filepath.Join(dir, "out")); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing store: error %v, want one naming %s", err, missing)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("reporting on a missing store created %s", filepath.Dir(missing))
	}

	empty := filepath.Join(dir, "empty", "store.db")
	s, err := store.Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Write(empty, filepath.Join(dir, "out")); err == nil || !strings.Contains(err.Error(), "holds no run") {
		t.Errorf("store without a run: error %v, want \"holds no run\"", err)
	}
}
