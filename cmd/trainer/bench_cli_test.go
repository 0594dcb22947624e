package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyBench is a model and batch small enough to benchmark in a blink.
var tinyBench = []string{"--vocab", "64", "--hidden", "32", "--inter", "64", "--layers", "1", "--heads", "2", "--kv-heads", "1",
	"--batch", "2", "--prompt-len", "8", "--new-tokens", "8", "--seq-len", "16", "--repeats", "1", "--threads", "1"}

// benchLine runs a bench subcommand and decodes its one JSON line.
func benchLine(t *testing.T, args ...string) map[string]any {
	t.Helper()
	r := ok(t, append([]string{"bench"}, args...)...)
	ls := lines(r.stdout)
	if len(ls) != 1 {
		t.Fatalf("want one JSON line:\n%s", r)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(ls[0]), &m); err != nil {
		t.Fatalf("bench line %q: %v", ls[0], err)
	}
	return m
}

// num reads a positive number field of a bench line.
func num(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	v, ok := m[key].(float64)
	if !ok || !(v > 0) || math.IsInf(v, 0) {
		t.Fatalf("%s = %v, want a positive number in %v", key, m[key], m)
	}
	return v
}

// near reports whether a and b agree to 1e-9 relative.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func TestBenchGenerate(t *testing.T) {
	t.Parallel() // independent of the shared run
	m := benchLine(t, append([]string{"generate", "--bandwidth-gbs", "10", "--profile", "--decode", "unfused"}, tinyBench...)...)
	if m["mode"] != "generate" {
		t.Errorf("mode %v, want generate", m["mode"])
	}
	// tokens_per_s is batch x new tokens = 2 x 8 = 16 tokens over the
	// median run time.
	if tps, s := num(t, m, "tokens_per_s"), num(t, m, "median_s"); !near(tps, 16/s) {
		t.Errorf("tokens_per_s %v, want 16 / median_s = %v", tps, 16/s)
	}
	if cfg, _ := m["config"].(map[string]any); cfg["hidden"] != 32.0 || cfg["batch"] != 2.0 {
		t.Errorf("config %v does not echo the flags", m["config"])
	}
	// The bound from --bandwidth-gbs: batch 2 x 10 GB/s over the weight bytes.
	if b, w := num(t, m, "bound_tokens_per_s"), num(t, m, "weight_bytes_per_step"); m["read_gbs"] != 10.0 || !near(b, 2*10e9/w) {
		t.Errorf("read_gbs %v, bound %v for %v bytes", m["read_gbs"], b, w)
	}
	if f := num(t, m, "bound_fraction"); !near(f, num(t, m, "decode_tokens_per_s")/num(t, m, "bound_tokens_per_s")) {
		t.Errorf("bound_fraction %v", f)
	}
	if ph, _ := m["step_ms"].(map[string]any); ph["products"] == nil || ph["sampling"] == nil || m["decode_path"] != "unfused" {
		t.Errorf("--profile --decode unfused: step_ms %v, decode_path %v", m["step_ms"], m["decode_path"])
	}
}

func TestBenchTrain(t *testing.T) {
	t.Parallel() // independent of the shared run
	m := benchLine(t, append([]string{"train"}, tinyBench...)...)
	if m["mode"] != "train" {
		t.Errorf("mode %v, want train", m["mode"])
	}
	// One update on batch x seq len = 2 x 16 = 32 tokens.
	if tps, s := num(t, m, "tokens_per_s"), num(t, m, "median_s"); !near(tps, 32/s) {
		t.Errorf("tokens_per_s %v, want 32 / median_s = %v", tps, 32/s)
	}
}

// --kernel-profile writes one update's (train) and one decode step's
// (generate, on libtorch's ops: the hand-written CPU kernels are no
// operators) profile as a markdown table: on the CPU the operators, the
// matrix products among them.
func TestBenchKernelProfile(t *testing.T) {
	t.Parallel() // independent of the shared run
	dir := t.TempDir()
	for _, c := range []struct {
		mode, title string
		flags       []string
	}{
		{"train", "### One update of 2 x 16 tokens (cpu, f32 parameters)", nil},
		{"generate", "### One decode step at batch 2 (cpu, f32 weights, fused path, 8-token prompts)", []string{"--decode", "fused"}},
	} {
		path := filepath.Join(dir, c.mode+".md")
		args := append(append([]string{c.mode, "--kernel-profile", path}, c.flags...), tinyBench...)
		m := benchLine(t, args...)
		if m["mode"] != c.mode {
			t.Errorf("mode %v, want %s", m["mode"], c.mode)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tab := string(b)
		if !strings.HasPrefix(tab, c.title+"\n") || !strings.Contains(tab, "| operator (CPU) | share | calls | self ms | avg µs | total ms |") ||
			!strings.Contains(tab, "| `aten::") || !(strings.Contains(tab, "`aten::mm`") || strings.Contains(tab, "`aten::addmm`") ||
			strings.Contains(tab, "`aten::matmul`") || strings.Contains(tab, "`aten::linear`")) {
			t.Errorf("bench %s --kernel-profile wrote:\n%s", c.mode, tab)
		}
	}
}

func TestBenchRollout(t *testing.T) {
	t.Parallel() // independent of the shared run
	args := append([]string{"rollout"}, tinyBench...)
	args = append(args, "--trajectories", "4", "--tool-turns", "1", "--turn-tokens", "4", "--turn-jitter", "0",
		"--obs-tokens", "4", "--latency-ms", "5", "--slots", "2")
	m := benchLine(t, args...)
	if m["mode"] != "rollout" {
		t.Errorf("mode %v, want rollout", m["mode"])
	}
	// 4 trajectories x (1 tool turn + the final turn) x 4 tokens = 32.
	if g := num(t, m, "generated_tokens"); g != 32 {
		t.Errorf("generated_tokens %v, want 32", g)
	}
	wall, noLat := num(t, m, "wall_s"), num(t, m, "wall_no_latency_s")
	if r := num(t, m, "latency_ratio"); !near(r, wall/noLat) {
		t.Errorf("latency_ratio %v, want wall_s / wall_no_latency_s = %v", r, wall/noLat)
	}
	if tps := num(t, m, "tokens_per_s"); !near(tps, 32/wall) {
		t.Errorf("tokens_per_s %v, want 32 / wall_s = %v", tps, 32/wall)
	}
	// Every episode waits once for a 5 ms tool.
	if wall < 0.005 {
		t.Errorf("wall_s %v, below the 5 ms tool latency", wall)
	}
}

// --lora-rank, --lora-alpha and --lora-targets reach both benchmarks and
// their lines say what ran. Rank-4 adapters on all seven projections of
// tinyBench's one layer (hidden 32, 2 heads of 16, 1 kv head, inter 64)
// hold q 4*32 + 32*4 = 256, k and v 4*32 + 16*4 = 192 each, o 256, gate
// and up 4*32 + 64*4 = 384 each and down 4*64 + 32*4 = 384 values: 2048.
func TestBenchLoRA(t *testing.T) {
	t.Parallel() // independent of the shared run
	tr := benchLine(t, append([]string{"train", "--lora-rank", "4"}, tinyBench...)...)
	cfg, _ := tr["config"].(map[string]any)
	if num(t, tr, "trainable_params") != 2048 || cfg["lora_rank"] != 4.0 || cfg["lora_alpha"] != 8.0 || len(cfg["lora_targets"].([]any)) != 7 {
		t.Errorf("train --lora-rank 4: trainable_params %v, config %v", tr["trainable_params"], cfg)
	}
	gen := benchLine(t, append([]string{"generate", "--lora-rank", "2", "--lora-alpha", "16", "--lora-targets", "q_proj, down_proj",
		"--bandwidth-gbs", "10"}, tinyBench...)...)
	cfg, _ = gen["config"].(map[string]any)
	if ts, _ := cfg["lora_targets"].([]any); cfg["lora_rank"] != 2.0 || cfg["lora_alpha"] != 16.0 || len(ts) != 2 || ts[0] != "q_proj" || ts[1] != "down_proj" {
		t.Errorf("generate --lora-rank 2 --lora-alpha 16 --lora-targets q_proj,down_proj: config %v", cfg)
	}
	num(t, gen, "decode_tokens_per_s")
	full := benchLine(t, append([]string{"train"}, tinyBench...)...)
	if cfg, _ := full["config"].(map[string]any); cfg["lora_rank"] != nil || cfg["lora_targets"] != nil {
		t.Errorf("a full fine-tune's config carries LoRA settings: %v", cfg)
	}
}

func TestBenchBadConfig(t *testing.T) {
	t.Parallel() // independent of the shared run
	fails(t, []string{"vocab", "positive"}, "bench", "generate", "--vocab", "0")
	fails(t, []string{"hidden", "heads"}, "bench", "train", "--hidden", "32", "--heads", "3")
	fails(t, []string{`lora target "qproj"`}, "bench", "train", "--lora-rank", "4", "--lora-targets", "qproj")
	fails(t, []string{"lora_rank", "negative"}, "bench", "generate", "--lora-rank", "-2")
}

// --model takes the shape from a config.json and refuses the shape flags
// beside it, naming the flag.
func TestBenchModelFlag(t *testing.T) {
	t.Parallel() // independent of the shared run
	p := writeFile(t, "config.json", `{"model_type": "qwen3", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
 "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 64}`)
	m := benchLine(t, "train", "--model", p, "--batch", "2", "--seq-len", "16", "--repeats", "1", "--threads", "1")
	if c, _ := m["config"].(map[string]any); c["vocab"] != 64.0 || c["hidden"] != 32.0 || c["model"] != p {
		t.Errorf("config %v, want the file's shape", m["config"])
	}
	fails(t, []string{"--hidden with --model"}, "bench", "generate", "--model", p, "--hidden", "64")
}

// With --vllm-python (opt-in: $AGENTRL_VLLM_VENV, as make vllm-check sets
// it), the scenario runs on the built-in engine and on vLLM's CPU build
// side by side: 4 trajectories of 2 turns of at most 4 tokens each.
func TestBenchRolloutVLLM(t *testing.T) {
	venv := os.Getenv("AGENTRL_VLLM_VENV")
	if venv == "" {
		t.Skip("vLLM check: $AGENTRL_VLLM_VENV is not set (make vllm-check sets it to the environment of scripts/vllm-venv.sh)")
	}
	args := []string{"rollout", "--vocab", "64", "--hidden", "64", "--inter", "64", "--layers", "1", "--heads", "2", "--kv-heads", "1",
		"--prompt-len", "8", "--repeats", "1", "--threads", "1",
		"--trajectories", "4", "--tool-turns", "1", "--turn-tokens", "4", "--obs-tokens", "4", "--latency-ms", "5", "--slots", "2",
		"--vllm-python", filepath.Join(venv, "bin", "python"), "--vllm-log", filepath.Join(t.TempDir(), "vllm.log")}
	m := benchLine(t, args...)
	if m["mode"] != "rollout-vllm" {
		t.Errorf("mode %v, want rollout-vllm", m["mode"])
	}
	for _, engine := range []string{"builtin", "vllm"} {
		f, _ := m[engine].(map[string]any)
		// 4 trajectories x 2 turns x at most 4 tokens (a turn may end
		// early at the end id).
		if g := num(t, f, "generated_tokens"); g < 8 || g > 32 {
			t.Errorf("%s: generated_tokens %v, want 8 to 32", engine, g)
		}
		num(t, f, "tokens_per_s")
	}
	num(t, m, "vllm_over_builtin")
	num(t, m, "vllm_startup_s")
}
