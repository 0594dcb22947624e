package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSFT(t *testing.T) {
	t.Parallel() // independent of the shared run
	runs := filepath.Join(t.TempDir(), "runs")
	out := filepath.Join(t.TempDir(), "warm")
	args := append([]string{"sft", "--run-dir", runs, "--run", "warm", "--out", out}, tinyRun...)
	r := ok(t, args...)
	if strings.TrimSpace(r.stdout) != "model written to "+out {
		t.Errorf("sft output:\n%s", r)
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("sft model folder: %v", err)
		}
	}
	var hf struct {
		Vocab  int `json:"vocab_size"`
		Hidden int `json:"hidden_size"`
	}
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &hf); err != nil {
		t.Fatal(err)
	}
	if hf.Hidden != 32 || hf.Vocab <= 0 {
		t.Errorf("config.json %+v, want hidden 32", hf)
	}

	// 8 demonstrations, batch 16, 1 epoch: one optimiser step. A freshly
	// initialised model predicts about uniformly, so its first loss is
	// near ln(vocab).
	logb, err := os.ReadFile(filepath.Join(runs, "warm", "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	type logLine struct {
		Message      string
		Demos, Steps int
		LossFirst    float64 `json:"loss_first"`
	}
	var done *logLine
	for _, l := range lines(string(logb)) {
		var e logLine
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if e.Message == "warm start done" {
			done = &e
		}
	}
	if done == nil {
		t.Fatalf("no \"warm start done\" in the log:\n%s", logb)
	}
	if done.Demos != 8 || done.Steps != 1 {
		t.Errorf("warm start on %d demos in %d steps, want 8 in 1", done.Demos, done.Steps)
	}
	if ln := math.Log(float64(hf.Vocab)); math.Abs(done.LossFirst-ln) > 0.3 {
		t.Errorf("first loss %.3f, want near ln(%d) = %.3f", done.LossFirst, hf.Vocab, ln)
	}

	missing := filepath.Join(t.TempDir(), "none.jsonl")
	bad := append([]string{"sft", "--run-dir", runs, "--run", "bad", "--sft-data", missing, "--out", filepath.Join(t.TempDir(), "x")}, tinyRun...)
	fails(t, []string{missing}, bad...)
}

// A warm start from sft.data whose warm-up is longer than the warm start
// (4 demonstrations in batches of 1, one epoch: 4 steps; 10^6 warm-up
// steps, which would leave the learning rate at 4 millionths of sft.lr)
// is refused once the demonstrations are counted, naming the key and the
// steps, before any step is taken; so is one of scripted demonstrations
// (tinyRun's 8 in a batch of 16: 1 step), when the config is read.
func TestSFTRefusesWarmupLongerThanTheWarmStart(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	var demos strings.Builder
	for range 4 {
		demos.WriteString(`{"messages": [{"role": "user", "content": "Name the job of the founder."}, ` +
			`{"role": "assistant", "content": "<answer>painter</answer>"}]}` + "\n")
	}
	data := writeFile(t, "demos.jsonl", demos.String())
	out := filepath.Join(t.TempDir(), "warm")
	fails(t, []string{"sft.warmup_steps 1000000 exceeds the warm start's 4 steps (4 demonstrations in batches of sft.batch 1, sft.epochs 1)"},
		append([]string{"sft", "--run-dir", runs, "--run", "data", "--out", out, "--sft-data", data}, append(tinyRun,
			"--set", "sft.batch=1", "--set", "sft.warmup_steps=1000000")...)...)
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the refused warm start wrote %s", out)
	}
	fails(t, []string{"sft.warmup_steps: 1000000 exceeds the warm start's 1 step (sft.demos 8 in batches of sft.batch 16, sft.epochs 1)"},
		append([]string{"sft", "--run-dir", runs, "--run", "scripted", "--out", out}, append(tinyRun, "--set", "sft.warmup_steps=1000000")...)...)
}
