package dryrun

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/internal/fixtures"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/safetensors"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/memory"
)

// exampleSpec is what an example config must say: the Agent-R1 settings it
// copies (batch 128 questions, mini-batch 64 questions, lr 1e-6 actor and
// 1e-5 critic, KL 0.001, 5 turns, 5 samples per question for GRPO).
type exampleSpec struct {
	file      string
	estimator string
	group     int
	miniBatch int // trajectories: 64 questions x group
	klMode    string
	critic    bool     // a separate critic model is trained
	lr        float64  // the policy's learning rate: Agent-R1's 1e-6 for full fine-tuning
	lora      int      // the adapters' rank (0: full fine-tuning)
	targets   []string // the adapters' target_modules (nil: all-linear)
	model     string   // model.path as shipped ("": /models/Qwen2.5-3B-Instruct)
}

var exampleConfigs = []exampleSpec{
	{file: "qwen2.5-3b-hotpotqa-grpo.yaml", estimator: "grpo", group: 5, miniBatch: 64 * 5, klMode: "loss", lr: 1e-6},
	{file: "qwen2.5-3b-hotpotqa-ppo.yaml", estimator: "gae", group: 1, miniBatch: 64, klMode: "reward", critic: true, lr: 1e-6},
	// LoRA r=16 on all linear layers learns at 1e-5 (ten times the full
	// fine-tune's, as LoRA recipes do).
	{file: "qwen2.5-3b-hotpotqa-ppo-lora.yaml", estimator: "gae", group: 1, miniBatch: 64, klMode: "reward", critic: true, lr: 1e-5, lora: 16},
	// Search-R1's model with the GRPO example's settings.
	{file: "llama3.2-3b-hotpotqa-grpo.yaml", estimator: "grpo", group: 5, miniBatch: 64 * 5, klMode: "loss", lr: 1e-6,
		model: "/models/Llama-3.2-3B-Instruct"},
	// A mixture-of-experts model with the GRPO example's settings.
	{file: "qwen3-30b-a3b-hotpotqa-grpo.yaml", estimator: "grpo", group: 5, miniBatch: 64 * 5, klMode: "loss", lr: 1e-6,
		model: "/models/Qwen3-30B-A3B"},
	// A hybrid mixture-of-experts model with the GRPO example's settings
	// and LoRA r=32 on the attention (its experts take no adapters).
	{file: "qwen3.5-35b-a3b-hotpotqa-grpo.yaml", estimator: "grpo", group: 5, miniBatch: 64 * 5, klMode: "loss", lr: 1e-5,
		lora: 32, targets: []string{"q_proj", "k_proj", "v_proj", "o_proj"}, model: "/models/Qwen3.5-35B-A3B"},
	// A hybrid Gated DeltaNet model with the GRPO example's settings.
	{file: "qwen3.5-9b-hotpotqa-grpo.yaml", estimator: "grpo", group: 5, miniBatch: 64 * 5, klMode: "loss", lr: 1e-6,
		model: "/models/Qwen3.5-9B"},
}

// The fixture qwen2-tiny-a (its README and config.json): vocab 384, hidden
// 64, intermediate 160, 2 layers, 4 heads, 2 kv heads of size 16, q/k/v
// biases, untied lm_head, max_position_embeddings 512.
//
// Its parameters, by hand: per layer q 64*64 + k,v 2*64*32 + o 64*64 +
// MLP 3*64*160 + 2 norms of 64 + biases 64+32+32 = 4096+4096+4096+30720+128
// +128 = 43264; embedding and lm_head 384*64 = 24576 each; final norm 64.
// 2*43264 + 2*24576 + 64 = 135744.
const (
	fixtureParams  = 135744
	fixtureLayers  = 2
	fixtureKVWidth = 2 * 16 // kv heads x head size
)

// The Qwen tokenizer in data/tokenizers/qwen: byte-level BPE ids 0..151642
// and 26 added tokens 151643..151668, so 151669 ids.
const qwenVocab = 151669

// Each example config goes through the dry run with the shared fixtures
// standing in for the GPU machine's files: the tiny Qwen2 fixture with the
// real Qwen tokenizer for /models, the raw HotpotQA/2Wiki/MuSiQue samples
// for /data, an index built here, on the CPU in f32. The vocab mismatch of
// that stand-in (151669 tokens, 384 embeddings) is a warning, not an error.
func TestDryRunExamples(t *testing.T) {
	model := exampleModel(t)
	raw := func(rel ...string) string { return fixtures.Path(t, append([]string{"data", "raw"}, rel...)...) }
	// data/raw/SOURCES.md: 100 HotpotQA train questions, 1000 2Wiki dev
	// questions, 20 MuSiQue questions in the IRCoT prompt file, 994 corpus
	// paragraphs.
	train := []string{raw("hotpotqa", "hotpotqa_train.json"), raw("2wikimultihopqa", "dev.json")}
	eval := []string{raw("musique", "gold_with_3_distractors_context_cot_qa_codex.txt")}
	const wantTrain, wantEval, wantPassages = 100 + 1000, 20, 994
	index := buildExampleIndex(t, raw("hotpotqa", "hotpotqa_train_corpus.json"))
	if n := safetensorsParams(t, filepath.Join(model, "model.safetensors")); n != fixtureParams {
		t.Fatalf("fixture holds %d parameters, the hand count says %d", n, fixtureParams)
	}

	for _, ex := range exampleConfigs {
		t.Run(ex.file, func(t *testing.T) {
			cfg, err := config.Load(filepath.Join("..", "..", "examples", ex.file))
			if err != nil {
				t.Fatal(err)
			}
			checkAsShipped(t, cfg, ex)

			cfg.Model.Path = model
			cfg.Data.Train, cfg.Data.Eval = train, eval
			cfg.Tools.Search.Index = index
			cfg.Device.Device, cfg.Device.DType = "cpu", "f32"
			cfg.Run.Dir = t.TempDir()
			r, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("dry run: %v", err)
			}
			if r.TrainTasks != wantTrain || r.EvalTasks != wantEval {
				t.Errorf("tasks: %d train, %d eval; want %d and %d", r.TrainTasks, r.EvalTasks, wantTrain, wantEval)
			}
			if r.IndexPath != index || r.Passages != wantPassages {
				t.Errorf("index %s with %d passages, want %s with %d", r.IndexPath, r.Passages, index, wantPassages)
			}
			if !slices.Equal(r.Tools, []string{"search"}) {
				t.Errorf("tools %v, want [search]", r.Tools)
			}
			if r.Vocab != qwenVocab || r.Model.Vocab != 384 || r.Model.Hidden != 64 || r.Model.Layers != fixtureLayers {
				t.Errorf("tokenizer %d, model vocab %d hidden %d layers %d; want %d, 384, 64, %d",
					r.Vocab, r.Model.Vocab, r.Model.Hidden, r.Model.Layers, qwenVocab, fixtureLayers)
			}
			if r.Params != fixtureParams {
				t.Errorf("params %d, want %d", r.Params, fixtureParams)
			}
			checkMemory(t, r.Memory, cfg, ex)
			wantWarning(t, r.Warnings, "151669", "384")                 // tokenizer vs embeddings
			wantWarning(t, r.Warnings, "env.max_tokens", "2048", "512") // budget vs max positions
			if len(r.Warnings) != 2 {
				t.Errorf("warnings %q, want the vocab and the position ones only", r.Warnings)
			}
		})
	}
}

// Every config in examples/ is dry-run by TestDryRunExamples.
func TestExampleConfigsListed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/*.yaml (%v)", err)
	}
	for _, f := range files {
		if !slices.ContainsFunc(exampleConfigs, func(e exampleSpec) bool { return e.file == filepath.Base(f) }) {
			t.Errorf("%s is not in exampleConfigs: TestDryRunExamples does not check it", f)
		}
	}
}

// checkAsShipped checks the example as a user gets it: valid, aimed at the
// Docker image's volumes and a CUDA device, with Agent-R1's settings.
func checkAsShipped(t *testing.T, cfg config.Config, ex exampleSpec) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s does not validate: %v", ex.file, err)
	}
	model := ex.model
	if model == "" {
		model = "/models/Qwen2.5-3B-Instruct"
	}
	if cfg.Model.Path != model || cfg.Run.Dir != "/runs" || cfg.Device.Device != "cuda:0" || cfg.Device.DType != "bf16" {
		t.Errorf("model %s, runs %s, device %s %s; want %s, /runs, cuda:0 bf16",
			cfg.Model.Path, cfg.Run.Dir, cfg.Device.Device, cfg.Device.DType, model)
	}
	if cfg.Data.Source != "files" || len(cfg.Data.Train) != 2 || len(cfg.Data.Eval) != 1 {
		t.Errorf("data %s: train %q eval %q, want files: two train files and one eval file", cfg.Data.Source, cfg.Data.Train, cfg.Data.Eval)
	}
	for _, p := range append(append([]string{cfg.Tools.Search.Index}, cfg.Data.Train...), cfg.Data.Eval...) {
		if !strings.HasPrefix(p, "/data/") {
			t.Errorf("%s is outside the /data volume", p)
		}
	}
	if !strings.Contains(strings.ToLower(cfg.Data.Eval[0]), "musique") {
		t.Errorf("eval %s, want MuSiQue (out of domain)", cfg.Data.Eval[0])
	}
	a, o := cfg.Algorithm, cfg.Optim
	if cfg.Rollout.BatchSize != 128 || a.MiniBatch != ex.miniBatch || o.LR != ex.lr || a.KLCoef != 0.001 || cfg.Env.MaxTurns != 5 {
		t.Errorf("batch %d, mini-batch %d, lr %g, kl %g, turns %d; want 128, %d, %g, 0.001, 5",
			cfg.Rollout.BatchSize, a.MiniBatch, o.LR, a.KLCoef, cfg.Env.MaxTurns, ex.miniBatch, ex.lr)
	}
	targets := ex.targets
	if targets == nil {
		targets = []string{"all-linear"}
	}
	if l := cfg.Model.LoRA; l.Rank != ex.lora || (ex.lora > 0 && !slices.Equal(l.TargetModules, targets)) {
		t.Errorf("model.lora rank %d on %v, want %d (%v when on)", l.Rank, l.TargetModules, ex.lora, targets)
	}
	if a.Estimator != ex.estimator || cfg.Rollout.GroupSize != ex.group || a.KLMode != ex.klMode {
		t.Errorf("estimator %s, group %d, kl mode %s; want %s, %d, %s", a.Estimator, cfg.Rollout.GroupSize, a.KLMode, ex.estimator, ex.group, ex.klMode)
	}
	if ex.critic && (cfg.Model.Critic != "separate" || o.CriticLR != 1e-5) {
		t.Errorf("critic %s with lr %g, want a separate critic with lr 1e-5", cfg.Model.Critic, o.CriticLR)
	}
}

// The estimate follows the job's dtypes and device: the KV cache in
// rollout.dtype where it is set, else device.dtype; the activations in
// device.dtype, under SDPA on CUDA (a CPU build estimates a CUDA job too),
// and the checkpoint's host memory counted in the total on the CPU only.
func TestDryRunSizesByDTypeAndDevice(t *testing.T) {
	base := exampleOnFixtures(t, exampleConfigs[0].file, exampleModel(t), fixtureIndex(t))
	kv := func(b int) int64 {
		return int64(2*fixtureLayers*base.Rollout.Slots*(base.Env.MaxTokens+1)*fixtureKVWidth) * int64(b)
	}
	for _, c := range []struct {
		device, dtype, rollout string
		kvBytes, actBytes      int
		cuda                   bool
	}{
		{"cpu", "f32", "auto", 4, 4, false},
		{"cpu", "f32", "bf16", 2, 4, false},
		{"cpu", "bf16", "auto", 2, 2, false},
		{"cuda:0", "bf16", "auto", 2, 2, true},
		{"cuda", "f32", "bf16", 2, 4, true},
	} {
		cfg := base
		cfg.Device.Device, cfg.Device.DType, cfg.Rollout.DType = c.device, c.dtype, c.rollout
		r, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%+v: dry run: %v", c, err)
		}
		m := r.Memory
		act := memory.Activations(r.Model, memory.Workload{Micro: cfg.Algorithm.MicroBatch, Seq: cfg.Env.MaxTokens,
			LogitsChunk: cfg.Model.LogitsChunk, HeadGrad: true, Bytes: int64(c.actBytes), SDPA: c.cuda})
		if m.KVCache != kv(c.kvBytes) || m.Activations != act {
			t.Errorf("%+v: kv cache %d, activations %d; want %d and %d", c, m.KVCache, m.Activations, kv(c.kvBytes), act)
		}
		sum := m.Weights + m.Grads + m.Optimizer + m.Reference + m.Critic + m.KVCache + m.DeltaNetState + m.Activations + m.Merged
		if !c.cuda {
			sum += m.Checkpoint
		}
		if m.Total != sum {
			t.Errorf("%+v: total %d, want %d", c, m.Total, sum)
		}
	}
}

// On a CPU device the dry run names the decode step the rollouts will run
// (in rollout.dtype): the hand-written kernels of the instruction set
// AGENTRL_CPU_KERNELS picks (each where this CPU has it), or libtorch's
// step and why (the kernels off; f16 weights, which the kernels do not
// read; autocast, which they do not emulate); nothing on CUDA. A setting the shim does not know is an error
// naming the variable.
func TestDryRunNamesDecode(t *testing.T) {
	base := exampleOnFixtures(t, exampleConfigs[0].file, exampleModel(t), fixtureIndex(t)) // head_dim 16
	for _, c := range []struct {
		env, device, dtype, rollout string
		autocast                    bool
		want                        string
	}{
		{"off", "cpu", "f32", "auto", false, "libtorch's step: AGENTRL_CPU_KERNELS=off"},
		{"avx2", "cpu", "f32", "auto", false, "hand-written kernels (avx2)"},
		{"avx512", "cpu", "f32", "bf16", false, "hand-written kernels (avx512)"},
		{"auto", "cpu", "f32", "f16", false, "libtorch's step: weights are neither f32 nor bf16"},
		{"avx2", "cpu", "f32", "auto", true, "libtorch's step: autocast is on"},
		{"avx2", "cuda", "bf16", "auto", false, ""},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s/autocast=%v", c.env, c.device, c.rollout, c.autocast), func(t *testing.T) {
			t.Setenv("AGENTRL_CPU_KERNELS", c.env)
			cfg := base
			cfg.Device.Device, cfg.Device.DType, cfg.Rollout.DType = c.device, c.dtype, c.rollout
			cfg.Device.Autocast = c.autocast
			r, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(r.Decode, "but the CPU lacks") {
				t.Skip(r.Decode)
			}
			if r.Decode != c.want {
				t.Errorf("decode %q, want %q", r.Decode, c.want)
			}
		})
	}
	t.Setenv("AGENTRL_CPU_KERNELS", "avx3")
	bad := base
	bad.Device.Device, bad.Device.DType, bad.Rollout.DType = "cpu", "f32", "auto"
	if _, err := Run(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "AGENTRL_CPU_KERNELS=avx3") {
		t.Errorf("AGENTRL_CPU_KERNELS=avx3: %v, want an error naming it", err)
	}
}

// checkMemory checks the estimate against what each part must hold for the
// fixture in f32 (4 bytes a number): weights, gradients, AdamW's two
// moments, a reference copy (both examples use a KL term), a separate
// critic's weights, gradients and moments, and a K and a V vector per
// layer, slot and position of the budget.
func checkMemory(t *testing.T, m MemoryEstimate, cfg config.Config, ex exampleSpec) {
	t.Helper()
	if ex.lora > 0 {
		checkLoRAMemory(t, m, cfg, ex)
		return
	}
	w := int64(fixtureParams * 4)
	var critic int64
	if ex.critic {
		critic = 4 * w
	}
	kv := int64(2*fixtureLayers*cfg.Rollout.Slots*(cfg.Env.MaxTokens+1)*fixtureKVWidth) * 4
	if m.Weights != w || m.Grads != w || m.Optimizer != 2*w || m.Reference != w || m.Critic != critic || m.KVCache != kv {
		t.Errorf("memory %+v, want weights = grads = reference = %d, optimizer %d, critic %d, kv cache %d", m, w, 2*w, critic, kv)
	}
	if m.Activations <= 0 {
		t.Errorf("activations %d, want > 0", m.Activations)
	}
	// A checkpoint writes one parameter at a time: the largest's two f32
	// moments copied out of the optimizer and its f32 bytes, 3 x 4 bytes
	// of the embedding's 384 x 64, in host memory: the CPU's here, so
	// counted in the total.
	if want := int64(384 * 64 * 12); m.Checkpoint != want {
		t.Errorf("checkpoint %d, want %d", m.Checkpoint, want)
	}
	if sum := m.Weights + m.Grads + m.Optimizer + m.Reference + m.Critic + m.KVCache + m.Activations + m.Checkpoint; m.Total != sum {
		t.Errorf("total %d, want the sum of the parts %d", m.Total, sum)
	}
}

func wantWarning(t *testing.T, warnings []string, parts ...string) {
	t.Helper()
	for _, w := range warnings {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(w, p)
		}
		if ok {
			return
		}
	}
	t.Errorf("no warning mentions %q among %q", parts, warnings)
}

// fixtureIndex builds the search index of the shared HotpotQA corpus.
func fixtureIndex(t *testing.T) string {
	t.Helper()
	return buildExampleIndex(t, fixtures.Path(t, "data", "raw", "hotpotqa", "hotpotqa_train_corpus.json"))
}

// exampleOnFixtures loads examples/file with the shared fixtures standing
// in for the GPU machine's files: model as the model folder, the HotpotQA
// sample for training and the MuSiQue one for evaluation, index
// (fixtureIndex) as the search index, and a temporary run folder.
func exampleOnFixtures(t *testing.T, file, model, index string) config.Config {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", "examples", file))
	if err != nil {
		t.Fatal(err)
	}
	raw := func(rel ...string) string { return fixtures.Path(t, append([]string{"data", "raw"}, rel...)...) }
	cfg.Model.Path = model
	cfg.Data.Train = []string{raw("hotpotqa", "hotpotqa_train.json")}
	cfg.Data.Eval = []string{raw("musique", "gold_with_3_distractors_context_cot_qa_codex.txt")}
	cfg.Tools.Search.Index = index
	cfg.Run.Dir = t.TempDir()
	return cfg
}

// exampleModel is the qwen2-tiny-a fixture with the shared Qwen tokenizer
// beside it (the fixture has none), in a temporary folder.
func exampleModel(t *testing.T) string {
	t.Helper()
	fixture := fixtures.Path(t, "fixtures", "qwen2-tiny-a")
	tokDir := fixtures.Path(t, "data", "tokenizers", "qwen")
	dir := filepath.Join(t.TempDir(), "model")
	if err := os.CopyFS(dir, os.DirFS(fixture)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyTestFile(t, filepath.Join(tokDir, f), filepath.Join(dir, f))
	}
	return dir
}

// exampleModelDir is a model folder for an example's dry run, named name
// under a temporary folder: configJSON as its config.json and the named
// files of the Qwen tokenizer fixture (no weights: the dry run reads none).
func exampleModelDir(t *testing.T, name, configJSON string, tokenizerFiles ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(configJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	tokDir := fixtures.Path(t, "data", "tokenizers", "qwen")
	for _, f := range tokenizerFiles {
		copyTestFile(t, filepath.Join(tokDir, f), filepath.Join(dir, f))
	}
	return dir
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// buildExampleIndex builds the search index of a corpus file in a temporary folder.
func buildExampleIndex(t *testing.T, corpus string) string {
	t.Helper()
	ps, err := search.LoadCorpus(corpus)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "index.db")
	if err := search.BuildIndex(context.Background(), out, ps, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// safetensorsParams counts the numbers stored in a safetensors file from
// its header (a little-endian uint64 length, then JSON naming each
// tensor's shape), independently of the trainer's own count.
func safetensorsParams(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var header map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(f, int64(n))).Decode(&header); err != nil {
		t.Fatalf("%s header: %v", path, err)
	}
	var total int64
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var tensor struct{ Shape []int64 }
		if err := json.Unmarshal(raw, &tensor); err != nil {
			t.Fatalf("%s tensor %s: %v", path, name, err)
		}
		size := int64(1)
		for _, d := range tensor.Shape {
			size *= d
		}
		total += size
	}
	return total
}

// The fixture's adapters at r=16 on all linear layers (hidden 64, q and o
// 64 -> 64, k and v 64 -> 32, gate and up 64 -> 160, down 160 -> 64), by
// hand: r (in + out) per target, 2048 + 1536 + 1536 + 2048 + 3584 * 3 =
// 17920 a layer, 35840 for 2. The target weights, in x out: 4096 + 2048 +
// 2048 + 4096 + 10240 * 3 = 43008 a layer, 86016 for 2. The value head:
// 64 + 1 = 65.
const (
	fixtureAdapters = 35840
	fixtureTargets  = 86016
	fixtureHead     = 65
)

// The fixture's adapters at r=32 on q_proj, k_proj, v_proj and o_proj, by
// hand: 32 x (128 + 96 + 96 + 128) = 14336 a layer, 28672 for 2; the
// target weights 4096 + 2048 + 2048 + 4096 = 12288 a layer, 24576 for 2.
const (
	fixtureAttnAdapters = 28672
	fixtureAttnTargets  = 24576
)

// checkLoRAMemory checks a LoRA example's estimate on the fixture in f32
// (its adapters on all linear layers, or on the attention's q/k/v/o): the
// base's weights once and the policy's adapters, their gradients and two
// AdamW moments, no reference, a separate critic's adapters and value head
// with theirs, the merged copy of the target weights, and the KV cache and
// activations of a full fine-tune.
func checkLoRAMemory(t *testing.T, m MemoryEstimate, cfg config.Config, ex exampleSpec) {
	t.Helper()
	kv := int64(2*fixtureLayers*cfg.Rollout.Slots*(cfg.Env.MaxTokens+1)*fixtureKVWidth) * 4
	adapters, targets := int64(fixtureAdapters), int64(fixtureTargets)
	if ex.targets != nil {
		adapters, targets = fixtureAttnAdapters, fixtureAttnTargets
	}
	want := MemoryEstimate{
		Weights: (fixtureParams + adapters) * 4, Grads: adapters * 4, Optimizer: 2 * adapters * 4,
		KVCache: kv, Merged: targets * 4, Activations: m.Activations,
		// the policy's adapters written whole in f32 (the optimizer state
		// goes one adapter at a time)
		Checkpoint: adapters * 4,
	}
	if ex.critic {
		want.Critic = 4 * (adapters + fixtureHead) * 4
	}
	want.Total = want.Weights + want.Grads + want.Optimizer + want.Critic + want.KVCache + want.Merged + want.Activations + want.Checkpoint
	if m != want {
		t.Errorf("memory %+v, want %+v", m, want)
	}
	if m.Activations <= 0 {
		t.Errorf("activations %d, want > 0", m.Activations)
	}
}

// loraMemory with a bf16 base (2 bytes a weight) and the value head on the
// policy: the fixture's 135744 weights at 2 bytes, the adapters and the
// head in f32, (35840 + 65) * 4 = 143620 bytes, as much again in
// gradients and twice in moments, no critic of its own, and the merged
// targets at 2 bytes, 172032.
func TestLoRAMemoryBF16Shared(t *testing.T) {
	c := torch.Config{ModelType: "qwen2", Vocab: 384, Hidden: 64, Intermediate: 160, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000}
	shapes, err := torch.ParamShapes(c, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Model.LoRA.Rank, cfg.Model.LoRA.TargetModules = 16, []string{"all-linear"}
	cfg.Algorithm.Estimator, cfg.Model.Critic = "gae", "shared"
	var m MemoryEstimate
	loraMemory(&m, c, shapes, cfg, fixtureParams, 2, false)
	// A checkpoint: the adapters and head written whole in f32, 35905 * 4
	// (their moments go one tensor at a time).
	want := MemoryEstimate{Weights: 271488 + 143620, Grads: 143620, Optimizer: 287240, Merged: 172032, Checkpoint: 35905 * 4}
	if m != want {
		t.Errorf("memory %+v, want %+v", m, want)
	}
	// q_proj and v_proj alone, r 8: 8 (64 + 64) + 8 (64 + 32) = 1792 a
	// layer, 3584 in all; targets 4096 + 2048 = 6144 a layer, 12288.
	cfg.Model.LoRA.Rank, cfg.Model.LoRA.TargetModules = 8, []string{"v_proj", "q_proj"}
	if a, w := loraCounts(shapes, 8, cfg.Model.LoRA.Targets()); a != 3584 || w != 12288 {
		t.Errorf("q_proj, v_proj at r 8: %d adapter numbers, %d target weights; want 3584, 12288", a, w)
	}
}

// On a Qwen3.5 the dry run counts the adapters of the Gated DeltaNet
// layers' projections too. Three DeltaNet layers (2 key heads and 4 value
// heads of 16 over hidden 64: in_proj_qkv [128, 64], in_proj_z and
// out_proj [64, 64], in_proj_b and in_proj_a [4, 64]) and an attention
// layer (q_proj [128, 64] with its gate, k/v_proj [32, 64], o_proj
// [64, 64]), MLPs of 160, all-linear at r 8: a DeltaNet layer's adapters
// 8 (192 + 128 + 68 + 68 + 128) = 4672 and its weights 8192 + 4096 +
// 256 + 256 + 4096 = 16896; the attention layer's 8 (192 + 96 + 96 + 128)
// = 4096 and 16384; each MLP's 8 (224 + 224 + 224) = 5376 and 30720. In
// all 3 (4672 + 5376) + 4096 + 5376 = 39616 adapter numbers over
// 3 (16896 + 30720) + 16384 + 30720 = 189952 target weights.
// in_proj_qkv on a Qwen2 is refused, as the model refuses it.
func TestLoRACountsQwen35(t *testing.T) {
	c := torch.Config{ModelType: "qwen3_5_text", Vocab: 384, Hidden: 64, Intermediate: 160, Layers: 4, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 1e7, PartialRotary: 0.25,
		LayerTypes:     []string{torch.LinearAttention, torch.LinearAttention, torch.LinearAttention, torch.FullAttention},
		LinearKeyHeads: 2, LinearValueHeads: 4, LinearKeyDim: 16, LinearValueDim: 16, LinearConvKernel: 4}
	shapes, err := torch.ParamShapes(c, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Model.LoRA.Rank, cfg.Model.LoRA.TargetModules = 8, []string{"all-linear"}
	if a, w := loraCounts(shapes, 8, loraTargets(c, cfg.Model.LoRA)); a != 39616 || w != 189952 {
		t.Errorf("all-linear at r 8: %d adapter numbers, %d target weights; want 39616, 189952", a, w)
	}
	// all-linear on a Qwen2 is its seven; a DeltaNet target there is
	// refused, naming it, as the model refuses it.
	qwen2 := torch.Config{ModelType: "qwen2", Layers: 2}
	if got := loraTargets(qwen2, cfg.Model.LoRA); len(got) != 7 || checkLoRATargets(qwen2, got) != nil {
		t.Errorf("all-linear on a Qwen2: %v", got)
	}
	if err := checkLoRATargets(qwen2, []string{"q_proj", "in_proj_qkv"}); err == nil ||
		!strings.Contains(err.Error(), "in_proj_qkv: no layer of the model has linear_attn.in_proj_qkv") {
		t.Errorf("in_proj_qkv on a Qwen2: %v", err)
	}
}

// The dry run counts the parameters of the table the model is made from:
// for the shared Qwen2 and Qwen3 fixtures, as many as their safetensors
// hold (Qwen3's q_norm and k_norm included), and for real shapes the
// published counts, worked by hand:
//
//   - Qwen2.5-0.5B (tied, q/k/v biases): embedding 151936*896 =
//     136134656; a layer 896*896 q + 896 + 2 (896*128 + 128) k, v +
//     896*896 o + 3*896*4864 MLP + 2*896 norms = 14912384, 24 of them;
//     final norm 896: 494032768.
//   - Qwen3-0.6B (tied, head_dim 128, q/k norms): embedding 151936*1024 =
//     155582464; a layer 2 (1024*2048) q, o + 2 (1024*1024) k, v +
//     3*1024*3072 MLP + 2*1024 norms + 2*128 q/k norms = 15730944, 28 of
//     them; final norm 1024: 596049920 (the count without the q/k norms,
//     596042752, was the dry run's before).
//   - Llama-3.2-3B (tied): embedding 128256*3072 = 394002432; a layer
//     2 (3072*3072) q, o + 2 (3072*1024) k, v + 3*3072*8192 MLP + 2*3072
//     norms = 100669440, 28 of them; final norm 3072: 3212749824.
func TestDryRunParamCount(t *testing.T) {
	for _, name := range []string{"qwen2-tiny-a", "qwen3-tiny-a"} {
		t.Run(name, func(t *testing.T) {
			dir := fixtures.Path(t, "fixtures", name)
			c, err := torch.ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			shapes, err := torch.ParamShapes(c, false)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := paramCount(shapes), safetensorsParams(t, filepath.Join(dir, "model.safetensors")); got != want {
				t.Errorf("dry run counts %d parameters, the checkpoint holds %d", got, want)
			}
		})
	}
	for _, c := range []struct {
		name string
		cfg  torch.Config
		want int64
	}{
		{"Qwen2.5-0.5B", torch.Config{ModelType: "qwen2", Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14,
			KVHeads: 2, HeadDim: 64, TieEmbeddings: true}, 494032768},
		{"Qwen3-0.6B", torch.Config{ModelType: "qwen3", Vocab: 151936, Hidden: 1024, Intermediate: 3072, Layers: 28, Heads: 16,
			KVHeads: 8, HeadDim: 128, TieEmbeddings: true}, 596049920},
		{"Llama-3.2-3B", torch.Config{ModelType: "llama", Vocab: 128256, Hidden: 3072, Intermediate: 8192, Layers: 28, Heads: 24,
			KVHeads: 8, HeadDim: 128, TieEmbeddings: true}, 3212749824},
	} {
		c.cfg.RMSEps, c.cfg.RopeTheta = 1e-6, 10000
		shapes, err := torch.ParamShapes(c.cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := paramCount(shapes); got != c.want {
			t.Errorf("%s: dry run counts %d parameters, want %d", c.name, got, c.want)
		}
	}
}

// llama32Config is Llama-3.2-3B-Instruct's config.json as Meta ships it
// (transformers 4.45): tied embeddings, llama3 RoPE scaling (factor 32,
// frequency factors 1 and 4, original context 8192, theta 500000), 24
// heads sharing 8 key/value heads of 128, an eos list.
const llama32Config = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "head_dim": 128, "hidden_act": "silu", "hidden_size": 3072,
  "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 24, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
  "use_cache": true, "vocab_size": 128256
}`

// A dry run of a model folder whose config.json says 9e18 layers beside
// weights of 28 (their headers: one tensor of each layer) is refused from
// the headers, naming num_hidden_layers and the layers held, before the
// estimate walks every configured layer, which would never end (the
// watchdog only turns that into a failure).
func TestDryRunComparesLayersWithTheWeights(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Llama-3.2-3B-Instruct")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgJSON := strings.Replace(llama32Config, `"num_hidden_layers": 28`, `"num_hidden_layers": 9000000000000000000`, 1)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfgJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for i := range 28 {
		ts = append(ts, safetensors.Tensor{Name: fmt.Sprintf("model.layers.%d.input_layernorm.weight", i), DType: safetensors.F32,
			Shape: []int64{1}, Data: make([]byte, 4)})
	}
	if err := safetensors.Write(filepath.Join(dir, safetensors.SingleFileName), ts, nil); err != nil {
		t.Fatal(err)
	}
	tokDir := fixtures.Path(t, "data", "tokenizers", "qwen")
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyTestFile(t, filepath.Join(tokDir, f), filepath.Join(dir, f))
	}
	cfg := exampleOnFixtures(t, "llama3.2-3b-hotpotqa-grpo.yaml", dir, fixtureIndex(t))
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), cfg)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "num_hidden_layers 9000000000000000000 in config.json, but the checkpoint holds 28 layers") {
			t.Errorf("dry run: %v, want the refusal of num_hidden_layers beside 28 layers", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the dry run still runs a minute later")
	}
}

// The Llama 3.2 example dry-runs with the real Llama-3.2-3B-Instruct
// config.json (the shared Qwen tokenizer standing in for Llama's): the
// config loads with its llama3 scaling, and the estimate is that of its
// shape in bf16: 3212749824 parameters (TestDryRunParamCount) at 2 bytes,
// gradients at 2 + 4 (the f32 accumulator), AdamW's moments and master
// weights at 12, a reference copy (the KL loss), and a KV cache of 28
// layers x 2 x 8 x 128 numbers a position, for 64 slots of 2049
// positions, at 2 bytes.
func TestDryRunLlamaExample(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Llama-3.2-3B-Instruct")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(llama32Config), 0o644); err != nil {
		t.Fatal(err)
	}
	tokDir := fixtures.Path(t, "data", "tokenizers", "qwen")
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyTestFile(t, filepath.Join(tokDir, f), filepath.Join(dir, f))
	}
	cfg := exampleOnFixtures(t, "llama3.2-3b-hotpotqa-grpo.yaml", dir, fixtureIndex(t))
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	want := torch.RoPE{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192}
	if c := r.Model; c.ModelType != "llama" || c.Rope != want || c.RopeTheta != 500000 || !c.TieEmbeddings || c.KVHeads != 8 || c.HeadDim != 128 {
		t.Errorf("model %+v", c)
	}
	const params = 3212749824
	if r.Params != params {
		t.Errorf("params %d, want %d", r.Params, params)
	}
	m := r.Memory
	kv := int64(2*28*cfg.Rollout.Slots*(cfg.Env.MaxTokens+1)*8*128) * 2
	if m.Weights != 2*params || m.Grads != 6*params || m.Optimizer != 12*params || m.Reference != 2*params || m.Critic != 0 || m.KVCache != kv {
		t.Errorf("memory %+v, want weights = reference = %d, grads %d, optimizer %d, kv cache %d", m, 2*params, 6*params, 12*params, kv)
	}
}

// checkpointBytes on hand-worked cases: 1000 trained parameters, the
// largest of 100 elements.
func TestCheckpointBytes(t *testing.T) {
	for _, c := range []struct {
		name                       string
		trained, largest, eager, b int64
		sharded                    bool
		want                       int64
	}{
		// one parameter at a time: its two f32 moments and its f32 bytes
		{"f32", 1000, 100, 0, 4, false, 100 * (8 + 4)},
		// and the f32 master weights of a bf16 parameter
		{"bf16", 1000, 100, 0, 2, false, 100 * (12 + 4)},
		// ZeRO: the whole state gathered, then the largest weight's bytes
		{"f32 zero", 1000, 100, 0, 4, true, 1000*8 + 100*4},
		{"bf16 zero", 1000, 100, 0, 2, true, 1000*12 + 100*2},
		// LoRA: the adapter folder written whole
		{"lora", 1000, 0, 400, 4, false, 400},
		{"lora zero", 1000, 0, 400, 4, true, 1000*8 + 400},
	} {
		if got := checkpointBytes(c.trained, c.largest, c.eager, c.b, c.sharded); got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, got, c.want)
		}
	}
}
