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
