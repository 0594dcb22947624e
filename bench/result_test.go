package bench

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},      // sorted 1 2 3
		{[]float64{4, 1, 3, 2}, 2.5}, // sorted 1 2 3 4: (2+3)/2
	}
	for _, c := range cases {
		in := append([]float64(nil), c.in...)
		if got := median(in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("median reordered its input: %v", in)
			}
		}
	}
}

// tiny is a model and workload small enough to run in well under a second.
func tiny() Config {
	return Config{Vocab: 97, Hidden: 32, Inter: 48, Layers: 2, Heads: 4, KVHeads: 2,
		Batch: 3, PromptLen: 5, NewTokens: 4, SeqLen: 8, Threads: 1, Repeats: 3}
}

// jsonLine marshals r, checks it is one line with mode, tokens_per_s and a
// config echoing cfg under the snake_case keys, and returns the decoded
// object.
func jsonLine(t *testing.T, r Result, cfg Config, mode string) map[string]any {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	line := string(b)
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, `{"mode":"`+mode+`","tokens_per_s":`) {
		t.Fatalf("not one line starting with mode and tokens_per_s: %s", line)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	c, ok := obj["config"].(map[string]any)
	if !ok {
		t.Fatalf("no config object in %s", line)
	}
	want := map[string]int{"vocab": cfg.Vocab, "hidden": cfg.Hidden, "inter": cfg.Inter, "layers": cfg.Layers,
		"heads": cfg.Heads, "kv_heads": cfg.KVHeads, "batch": cfg.Batch, "prompt_len": cfg.PromptLen,
		"new_tokens": cfg.NewTokens, "seq_len": cfg.SeqLen, "threads": cfg.Threads, "repeats": cfg.Repeats,
		"logits_chunk": cfg.LogitsChunk}
	for k, v := range want {
		if got, ok := c[k].(float64); !ok || int(got) != v {
			t.Errorf("config.%s = %v, want %d", k, c[k], v)
		}
	}
	if len(c) != len(want) {
		t.Errorf("config has %d keys, want %d: %v", len(c), len(want), c)
	}
	return obj
}

func positive(t *testing.T, obj map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		v, ok := obj[k].(float64)
		if !ok || !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %v, want a positive finite number", k, obj[k])
		}
	}
}

// checkRuns checks runs_s has one entry per repeat and median_s is their
// median, worked out here by sorting.
func checkRuns(t *testing.T, r Result, repeats int) {
	t.Helper()
	if len(r.RunsS) != repeats {
		t.Fatalf("%d runs for %d repeats", len(r.RunsS), repeats)
	}
	s := append([]float64(nil), r.RunsS...)
	sort.Float64s(s)
	if r.MedianS != s[1] { // three runs: the middle one
		t.Errorf("median_s %v, sorted runs %v", r.MedianS, s)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
