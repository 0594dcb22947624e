package main

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/hubcache/hubcachetest"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
)

// A tiny LoRA run (adapters of rank 4 over the warm-started tiny model)
// and what takes a base plus an adapter: merge (into a full folder whose
// logits are the adapters'), chat, eval and serve, each finding the run's
// base and adapters from --run, or given --model and --adapter.
func TestLoRARunCommands(t *testing.T) {
	runs := t.TempDir()
	args := append([]string{"train", "--run-dir", runs, "--run", "lora"}, tinyRun...)
	args = append(args, "--set", "model.lora.rank=4", "--set", "model.lora.alpha=8", "--set", "optim.lr=1e-3")
	ok(t, args...)
	run := filepath.Join(runs, "lora")
	base, final := filepath.Join(run, "base"), filepath.Join(run, "final")
	for _, f := range []string{filepath.Join(base, "config.json"), filepath.Join(final, "adapter_config.json")} {
		if !exists(f) {
			t.Fatalf("the LoRA run has no %s", f)
		}
	}

	t.Run("merge", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "merged")
		r := ok(t, "merge", "--run", "lora", "--run-dir", runs, "--out", out)
		if !strings.Contains(r.stdout, "merged "+final+" into "+base) {
			t.Errorf("merge did not say what it merged:\n%s", r)
		}
		for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
			if !exists(filepath.Join(out, f)) {
				t.Errorf("the merged folder has no %s", f)
			}
		}
		// Adapters with every matrix drawn at random (lora_B too, which a
		// short run may leave at zero) merged by the command: the merged
		// folder's logits are base + adapters' (merged weights rounded
		// once in f32: within 1e-5), and differ from the base's.
		b, err := torch.LoadModel(base, torch.Float32, torch.CPU, false)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Free()
		lora, err := torch.NewLoRAModel(b, torch.LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj", "down_proj"}}, false, 3)
		if err != nil {
			t.Fatal(err)
		}
		defer lora.Free()
		randomize(t, lora)
		adapter := filepath.Join(t.TempDir(), "adapter")
		if err := peft.Save(adapter, lora, base); err != nil {
			t.Fatal(err)
		}
		out2 := filepath.Join(t.TempDir(), "merged")
		ok(t, "merge", "--model", base, "--adapter", adapter, "--out", out2)
		merged, err := torch.LoadModel(out2, torch.Float32, torch.CPU, false)
		if err != nil {
			t.Fatal(err)
		}
		defer merged.Free()
		d, moved := logitsDiff(t, merged, lora, b, []int64{1, 7, 3, 12, 5, 9})
		if d > 1e-5 {
			t.Errorf("the merged model's logits differ from base + adapters' by %g", d)
		}
		if moved < 1e-3 {
			t.Errorf("base + adapters' logits are within %g of the base's: nothing was merged", moved)
		}
		fails(t, []string{"not empty"}, "merge", "--model", base, "--adapter", final, "--out", out)
		fails(t, []string{"--model DIR and --adapter DIR"}, "merge", "--model", base, "--out", filepath.Join(t.TempDir(), "x"))

		// --model a model id: the base read from its snapshot in the
		// Hugging Face cache, its tokenizer copied from there too.
		cache, copied := t.TempDir(), t.TempDir()
		ents, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(base, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(copied, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("HF_HUB_CACHE", cache)
		snap := hubcachetest.Put(t, cache, "org/tiny-base", "main", "0123456789abcdef0123456789abcdef01234567", copied)
		out3 := filepath.Join(t.TempDir(), "merged")
		r = ok(t, "merge", "--model", "org/tiny-base", "--adapter", adapter, "--out", out3)
		if !strings.Contains(r.stdout, "merged "+adapter+" into "+snap) || !exists(filepath.Join(out3, "tokenizer.json")) {
			t.Errorf("merge --model org/tiny-base: want the snapshot's base and tokenizer merged:\n%s", r)
		}
		fails(t, []string{`model "org/absent" is neither a folder nor in the Hugging Face cache`, cache},
			"merge", "--model", "org/absent", "--adapter", adapter, "--out", filepath.Join(t.TempDir(), "y"))
	})

	t.Run("chat and eval", func(t *testing.T) {
		r := runCLI(t, "What is the capital of the nation of Kamo?\n", "chat", "--run", "lora", "--run-dir", runs, "--threads", "1")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "agentrl chat: "+base+" + adapter "+final+" with tools search.") {
			t.Errorf("want exit 0 and chat with the base plus the run's adapters:\n%s", r)
		}
		r = runCLI(t, "What is the capital of the nation of Kamo?\n", "chat", "--model", base, "--adapter", final, "--threads", "1", "--hide-schemas",
			"--index", filepath.Join(run, "index.db"))
		if r.code != 0 || !strings.HasPrefix(r.stdout, "agentrl chat: "+base+" + adapter "+final) {
			t.Errorf("want exit 0 and chat with --model plus --adapter:\n%s", r)
		}
		checkResults(t, ok(t, "eval", "--run-dir", runs, "--run", "lora", "--threads", "1").stdout, "Naive RAG", "Policy")
		eargs := append([]string{"eval", "--model", base, "--adapter", final, "--run-dir", t.TempDir(), "--run", "lora-eval"}, tinyRun...)
		checkResults(t, ok(t, eargs...).stdout, "Naive RAG", "Policy")
	})

	// trainer sft trains the whole model: it refuses model.lora.
	sargs := append([]string{"sft", "--run-dir", t.TempDir(), "--run", "sft", "--out", filepath.Join(t.TempDir(), "sft"),
		"--set", "model.lora.rank=4"}, tinyRun...)
	fails(t, []string{"sft: model.lora is set", "the warm start trains the whole model"}, sargs...)

	t.Run("serve", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd, line, base := startServe(t, ctx, "--run", "lora", "--run-dir", runs, "--port", "0", "--slots", "2", "--context", "128", "--threads", "1")
		if !strings.HasPrefix(line, "serving lora ") {
			t.Fatalf("not the run's name in %q", line)
		}
		body := `{"model": "lora", "temperature": 0, "max_tokens": 3, "messages": [{"role": "user", "content": "Kamo"}]}`
		resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var c struct{ Choices []json.RawMessage }
		json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(c.Choices) != 1 {
			t.Errorf("status %d, %d choices; want 200 and one", resp.StatusCode, len(c.Choices))
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("serve after Ctrl-C: %v", err)
		}
	})
}

// logitsDiff is the largest gap between a's and b's logits of ids, and
// the largest gap between b's and base's.
func logitsDiff(t *testing.T, a, b, base *torch.Model, ids []int64) (float64, float64) {
	t.Helper()
	attn, pos := make([]int64, len(ids)), make([]int64, len(ids))
	for i := range ids {
		attn[i], pos[i] = 1, int64(i)
	}
	batch := torch.Batch{B: 1, T: len(ids), IDs: ids, Attn: attn, Positions: pos}
	logits := func(m *torch.Model) []float32 {
		x, err := m.Logits(batch)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Free()
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	la, lb, l0 := logits(a), logits(b), logits(base)
	var d, moved float64
	for i := range la {
		d = math.Max(d, math.Abs(float64(la[i]-lb[i])))
		moved = math.Max(moved, math.Abs(float64(lb[i]-l0[i])))
	}
	return d, moved
}

// randomize sets every parameter of m to values drawn from N(0, 0.5).
func randomize(t *testing.T, m *torch.Model) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, name := range m.Names() {
		p, err := m.Param(name)
		if err != nil {
			t.Fatal(err)
		}
		shape, err := p.Shape()
		p.Free()
		if err != nil {
			t.Fatal(err)
		}
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(0.5 * rng.NormFloat64())
		}
		x, err := torch.FromFloat32(vals, shape...)
		if err != nil {
			t.Fatal(err)
		}
		err = m.SetParam(name, x)
		x.Free()
		if err != nil {
			t.Fatal(err)
		}
	}
}
