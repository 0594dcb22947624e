package report

import (
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compareStores writes two runs that differ in their metrics (run-b's are
// twice run-a's) and in their learning rate.
func compareStores(t *testing.T, dir string) (a, b string) {
	a = writeStore(t, dir, fakeRun{name: "run-a", config: `{"lr":1e-6,"rollout":{"n":4}}`, iters: 6, scale: 1})
	b = writeStore(t, dir, fakeRun{name: "run-b", config: `{"lr":3e-6,"rollout":{"n":4}}`, iters: 6, scale: 2})
	return a, b
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	a, b := compareStores(t, dir)
	out := filepath.Join(dir, "cmp")
	htmlPath, err := Compare([]string{a, b}, nil, out)
	if err != nil {
		t.Fatal(err)
	}
	if htmlPath != filepath.Join(out, "compare.html") {
		t.Errorf("Compare returned %s", htmlPath)
	}
	// One chart per logged key of the plot table, each with both runs: run-a
	// in the first colour, run-b in the second.
	keys := []string{"reward_mean", "eval_em", "eval_f1", "kl_ref", "approx_kl", "mismatch_kl", "mismatch_beyond_bound",
		"mismatch_ratio_max", "mismatch_ratio_min", "clip_frac_low", "clip_frac_high",
		"response_len_mean", "turns_mean", "tool_calls_mean", "tokens_per_s_rollout", "tokens_per_s_update"}
	for _, k := range keys {
		name := "compare_" + k + ".png"
		img := readPNG(t, filepath.Join(out, name))
		if img.Bounds() != image.Rect(0, 0, chartW, chartH) {
			t.Errorf("%s: size %v", name, img.Bounds().Size())
		}
		below := image.Rect(0, 60, chartW, chartH)
		for run := range 2 {
			if n := countColor(img, below, seriesColor(run), 0); n < 200 {
				t.Errorf("%s: %d pixels of run %d's colour, want its curve (>= 200)", name, n, run)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(out, "compare_entropy.png")); !os.IsNotExist(err) {
		t.Errorf("compare_entropy.png for a metric never logged: %v", err)
	}

	b2, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b2)
	if n := len(dataURI.FindAllString(page, -1)); n != len(keys) {
		t.Errorf("%d embedded images, want %d", n, len(keys))
	}
	for _, want := range []string{
		"<h1>run-a vs run-b</h1>",
		"<th>metric</th><th>run-a</th><th>run-b</th>",
		// eval/em at iteration 4 is 0.2 + 0.1*4 for run-a, twice that for run-b.
		"eval iteration</td><td>4</td><td>4</td>",
		"<td>eval/em</td><td>0.6</td><td>1.2</td>",
		// Both runs have the same eval trajectories (fakeEval): EM 0.5 overall,
		// by hops 0.5, 1, 0.
		"<td>EM, all hops (eval trajectories)</td><td>0.5</td><td>0.5</td>",
		"<td>EM, 1 hop</td><td>0.5</td><td>0.5</td>",
		"<td>EM, 3 hops</td><td>0</td><td>0</td>",
		// reward_mean at iteration 5: 0.1*5 and 2*0.1*5.
		"<td>reward_mean (last)</td><td>0.5</td><td>1</td>",
		// Only lr differs; rollout.n is the same and not listed.
		"<th>config key</th><th>run-a</th><th>run-b</th>",
		"<td>lr</td><td>1e-6</td><td>3e-6</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<td>rollout.n</td>") {
		t.Error("rollout.n is equal in both runs, yet listed as a difference")
	}
}

func TestCompareLabels(t *testing.T) {
	dir := t.TempDir()
	a, b := compareStores(t, dir)
	htmlPath, err := Compare([]string{a, b}, []string{"<base>", "<base>"}, filepath.Join(dir, "cmp"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	// Labels replace the run names, are made unique, and are escaped.
	if want := "<th>metric</th><th>&lt;base&gt;</th><th>&lt;base&gt; (2)</th>"; !strings.Contains(string(page), want) {
		t.Errorf("page lacks %q", want)
	}

	if _, err := Compare([]string{a, b}, []string{"one"}, dir); err == nil {
		t.Error("one label for two stores: no error")
	}
	if _, err := Compare(nil, nil, dir); err == nil {
		t.Error("no stores: no error")
	}
	missing := filepath.Join(dir, "missing.db")
	if _, err := Compare([]string{a, missing}, nil, dir); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing store: error %v, want one naming %s", err, missing)
	}
}

func TestFlattenJSON(t *testing.T) {
	got := flattenJSON(`{"a": 1, "b": {"c": [1, 2], "d": {"e": "x"}, "f": {}}, "g": null}`)
	want := map[string]string{"a": "1", "b.c": "[1,2]", "b.d.e": `"x"`, "b.f": "{}", "g": "null"}
	if len(got) != len(want) {
		t.Fatalf("flattenJSON = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("flattenJSON[%q] = %q, want %q", k, got[k], v)
		}
	}
	if got := flattenJSON(`[1,2]`); got["(config)"] != `[1,2]` || len(got) != 1 {
		t.Errorf("flattenJSON of an array = %v, want the whole document under (config)", got)
	}
}
