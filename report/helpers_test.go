package report

import (
	"github.com/agentrl/agentrl/envs/reward"

	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// hostileQuestion is a question that would run script if it reached the
// page unescaped.
const hostileQuestion = `<script>alert("pwned")</script> Who wrote <b>Hamlet</b>?`

// fakeRun describes a store built by writeStore.
type fakeRun struct {
	name   string
	config string
	iters  int     // iterations 0 .. iters-1
	scale  float64 // multiplies every metric, so two runs differ
}

// fakeMetrics are the metrics of iteration i, times scale. Evaluation is
// logged on even iterations only; approx_kl is NaN at iteration 3 (a gap);
// entropy is never logged, so its plot must be left out.
func fakeMetrics(i int, scale float64) map[string]float64 {
	m := map[string]float64{
		"reward_mean":           0.1 * float64(i),
		"kl_ref":                0.01 * float64(i),
		"approx_kl":             0.002 * float64(i+1),
		"clip_frac_low":         0.01,
		"clip_frac_high":        0.02 + 0.01*float64(i),
		"response_len_mean":     100 + 10*float64(i),
		"turns_mean":            2 + 0.1*float64(i),
		"tool_calls_mean":       1.5,
		"tokens_per_s_rollout":  1000 + 100*float64(i),
		"tokens_per_s_update":   3000,
		"loss":                  1 / float64(i+1),
		"mismatch_kl":           1e-4 * float64(i+1),
		"mismatch_beyond_bound": 0.001 * float64(i),
		"mismatch_ratio_max":    1.05 + 0.01*float64(i),
		"mismatch_ratio_min":    0.95 - 0.01*float64(i),
	}
	if i == 3 {
		m["approx_kl"] = math.NaN()
	}
	if i%2 == 0 {
		m["eval/em"] = 0.2 + 0.1*float64(i)
		m["eval/f1"] = 0.25 + 0.1*float64(i)
	}
	for k := range m {
		m[k] *= scale
	}
	return m
}

// fakeEval are the eval trajectories written at even iterations: hops 1,
// 1, 2 and 3; the first and third are correct. The first asks the hostile
// question; the third has no reward components (so its EM must come from
// the store's match); the others carry "em" and "f1" components.
func fakeEval(iter int) []*trajectory.Trajectory {
	gold := []string{"William Shakespeare", "Shakespeare"}
	mk := func(group, hops int, q, answer string, comp map[string]float64) *trajectory.Trajectory {
		t := fakeTraj(iter, trajectory.Eval, group, 0, q, answer, gold)
		t.Hops, t.Components = hops, comp
		if comp != nil {
			t.Outcome, t.Reward = comp["em"], comp["em"]
		}
		return t
	}
	return []*trajectory.Trajectory{
		mk(0, 1, hostileQuestion, "Shakespeare", map[string]float64{"em": 1, "f1": 1}),
		mk(1, 1, "Who wrote Faust?", "Schiller", map[string]float64{"em": 0, "f1": 0.5}),
		mk(2, 2, "Who wrote Macbeth?", "the Shakespeare", nil),
		mk(3, 3, "Who wrote Ulysses?", "Homer", map[string]float64{"em": 0, "f1": 0.25}),
	}
}

// fakeTrainRewards are the rewards of the four train trajectories of every
// iteration: the best is sample 1, the worst sample 2.
var fakeTrainRewards = []float64{0.2, 0.9, -0.1, 0.5}

// fakeTraj builds a two-turn trajectory: a search with a result that
// tries to break out of its HTML element, then an answer.
func fakeTraj(iter int, split trajectory.Split, group, sample int, q, answer string, gold []string) *trajectory.Trajectory {
	return &trajectory.Trajectory{
		ID: fmt.Sprintf("%d-%s-%d-%d", iter, split, group, sample), TaskID: fmt.Sprintf("t%d", group),
		Dataset: "hotpotqa", Hops: 2, Group: group, Sample: sample, Split: split, Iteration: iter,
		PolicyVersion: iter, Question: q, Gold: gold, Answer: answer, Correct: reward.Correct(answer, gold), Stop: trajectory.StopAnswer, DurationMS: 50,
		PromptLen: 2, Tokens: []int32{1, 2, 3, 4, 5, 6}, Logprobs: []float32{0, 0, -0.5, -0.1, 0, -0.2},
		Mask: []uint8{0, 0, 1, 1, 0, 1}, TurnOf: []int16{-1, -1, 0, 0, 0, 1},
		Turns: []trajectory.Turn{
			{Text: "<think>I should search.</think><tool_call>{\"name\":\"search\"}</tool_call>", GenTokens: 2,
				LatencyMS: 3, Calls: []trajectory.ToolCall{{Name: "search", Args: `{"query":"author"}`, OK: true, LatencyMS: 3,
					Result: `</div><img src=x onerror=alert(1)> Hamlet is a tragedy by William Shakespeare.`}}},
			{Text: "<answer>" + answer + "</answer>", GenTokens: 1},
		},
	}
}

// writeStore builds the store of r under dir and returns its path.
func writeStore(t *testing.T, dir string, r fakeRun) string {
	t.Helper()
	path := filepath.Join(dir, r.name, "store.db")
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.BeginRun(store.RunInfo{Name: r.name, ConfigJSON: r.config, GitRev: "abc123", Start: start}); err != nil {
		t.Fatal(err)
	}
	for i := range r.iters {
		var ts []*trajectory.Trajectory
		for k, rw := range fakeTrainRewards {
			tr := fakeTraj(i, trajectory.Train, 0, k, "Who painted the Mona Lisa?", "Leonardo da Vinci", []string{"Leonardo da Vinci"})
			tr.Reward, tr.Outcome = rw, rw
			ts = append(ts, tr)
		}
		if i%2 == 0 {
			ts = append(ts, fakeEval(i)...)
		}
		if err := s.WriteIteration(i, fakeMetrics(i, r.scale), ts); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// readPNG decodes the PNG file at path.
func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img
}

// countColor counts the pixels of r in img within tol of c on every
// channel.
func countColor(img image.Image, r image.Rectangle, c color.RGBA, tol int) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if near(img.At(x, y), c, tol) {
				n++
			}
		}
	}
	return n
}

// near reports whether p is within tol of c on every colour channel.
func near(p color.Color, c color.RGBA, tol int) bool {
	r, g, b, _ := p.RGBA()
	d := func(v uint32, w uint8) bool { return abs(int(v>>8)-int(w)) <= tol }
	return d(r, c.R) && d(g, c.G) && d(b, c.B)
}

// abs is |v|.
func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
