package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
	"github.com/agentrl/agentrl/trainer/store"
)

// interopTexts are tokenized by agentrl and by transformers' AutoTokenizer:
// plain words, digits, whitespace runs, non-ASCII, and the chat format's
// special tokens.
var interopTexts = []string{
	"What is the capital of the nation of Kamo?",
	"<|im_start|>user\nsearch: 1989 population   of Ürümqi 東京<|im_end|>\n<|im_start|>assistant\n",
	"  trailing spaces\n\n\tand tabs 12345.678 ",
}

// exportFolder is one folder for testdata/interop/hf_exports.py: a model
// folder (Dir), or an adapter over its base; the tokenizer read with
// AutoTokenizer ("auto") or the tokenizers library ("tokenizers"); the
// ids of the logits.
type exportFolder struct {
	Dir       string  `json:"dir,omitempty"`
	Base      string  `json:"base,omitempty"`
	Adapter   string  `json:"adapter,omitempty"`
	Tokenizer string  `json:"tokenizer"`
	IDs       []int64 `json:"ids"`
}

// exportAnswer is what transformers made of one folder.
type exportAnswer struct {
	Logits        [][]float64 `json:"logits"`
	IDs           [][]int32   `json:"ids"`
	Architectures []string    `json:"architectures"`
	ModelType     string      `json:"model_type"`
}

// qwenTokenizerModel is a random Qwen2 of hidden size 32 with Qwen's
// vocabulary (151936) and the shared Qwen tokenizer (skipped, saying so,
// where ../shared lacks it): a model whose folder transformers reads
// whole, tokenizer included.
func qwenTokenizerModel(t *testing.T) string {
	t.Helper()
	tokDir := fixtures.Path(t, "data", "tokenizers", "qwen")
	cfg := torch.Config{ModelType: "qwen2", Vocab: 151936, Hidden: 32, Intermediate: 64, Layers: 2, Heads: 2, KVHeads: 1,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 1e6, MaxPositions: 4096, TieEmbeddings: true, TorchDType: "float32",
		BOS: 151643, EOS: 151645}
	m, err := torch.NewRandomModel(cfg, torch.Float32, torch.CPU, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	dir := filepath.Join(t.TempDir(), "qwen-tiny")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(tokDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// What agentrl exports loads in the Hugging Face libraries and computes
// the same there: a run's final/ (a full fine-tune), `trainer merge`'s
// folder of a LoRA run, and that run's final/ adapters over its base/ --
// the models with AutoModelForCausalLM.from_pretrained (the adapters with
// PeftModel.from_pretrained), the tokenizers with
// AutoTokenizer.from_pretrained. The runs train a random Qwen2 with the
// Qwen tokenizer; the built-in demo's final/ (the shared tiny run) is
// read too, its word-level tokenizer with the tokenizers library:
// transformers 5's AutoTokenizer builds Qwen2Tokenizer's byte-level BPE
// for any model_type qwen2 and does not read a word-level tokenizer.json.
// The logits (transformers in float64) equal agentrl's within 1e-4 and
// the token ids are the same.
func TestInteropExports(t *testing.T) {
	pyinterop.Python(t)
	model := qwenTokenizerModel(t)
	runs := t.TempDir()
	args := append([]string{"train", "--run-dir", runs, "--set", "model.path=" + model}, tinyRun...)
	ok(t, append(args, "--run", "full")...)
	// GAE and an entropy bonus: a gradient even where every reward is 0.
	ok(t, append(args, "--run", "lora", "--set", "model.lora.rank=4", "--set", "model.lora.alpha=8", "--set", "optim.lr=1e-2",
		"--set", "algorithm.estimator=gae", "--set", "algorithm.entropy_coef=0.01")...)
	base, adapter, err := runFinal(filepath.Join(runs, "lora")) // the base: model.path, or <run>/base when the run changed it
	if err != nil || adapter == "" {
		t.Fatalf("the LoRA run's final/: base %q, adapter %q, %v", base, adapter, err)
	}
	merged := filepath.Join(t.TempDir(), "merged")
	ok(t, "merge", "--run", "lora", "--run-dir", runs, "--out", merged)
	demo := filepath.Join(trainedRun(t).dir(), "final")

	folders := []exportFolder{
		{Dir: filepath.Join(runs, "full", "final"), Tokenizer: "auto"},
		{Dir: merged, Tokenizer: "auto"},
		{Base: base, Adapter: adapter, Tokenizer: "auto"},
		{Dir: demo, Tokenizer: "tokenizers"},
	}
	names := []string{"final/ of a run", "trainer merge of a LoRA run", "final/ adapters of a LoRA run (PEFT)", "final/ of the built-in demo"}
	toks := make([]*tokenizer.Tokenizer, len(folders))
	for i, f := range folders {
		dir := f.Dir
		if dir == "" {
			dir = f.Base
		}
		tk, err := tokenizer.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		toks[i] = tk
		for _, id := range tk.Encode(interopTexts[1]) {
			folders[i].IDs = append(folders[i].IDs, int64(id))
		}
	}
	var ans struct {
		Folders []exportAnswer `json:"folders"`
	}
	pyinterop.Run(t, "testdata/interop/hf_exports.py", map[string]any{"folders": folders, "texts": interopTexts}, &ans)
	for i, f := range folders {
		t.Run(names[i], func(t *testing.T) {
			a := ans.Folders[i]
			m := loadExport(t, f)
			defer m.Free()
			if a.ModelType != m.Config.ModelType || len(a.Architectures) != 1 {
				t.Errorf("transformers reads model_type %q, architectures %v; agentrl %q", a.ModelType, a.Architectures, m.Config.ModelType)
			}
			d := maxLogitDiff(t, m, f.IDs, a.Logits)
			t.Logf("| %s | logits | %.1e |", names[i], d)
			if d > 1e-4 {
				t.Errorf("transformers' logits differ from agentrl's by %g", d)
			}
			if f.Adapter != "" {
				// The run trained the adapters: they move the logits off the base's.
				b, err := torch.LoadModel(f.Base, torch.Float32, torch.CPU, false)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Free()
				if moved := maxLogitDiff(t, b, f.IDs, a.Logits); moved < 1e-4 {
					t.Errorf("the adapters move the logits by %g only: the check would not see them lost", moved)
				} else {
					t.Logf("the adapters move the logits by %.1e", moved)
				}
			}
			for j, text := range interopTexts {
				if got := toks[i].Encode(text); !slices.Equal(got, a.IDs[j]) {
					t.Errorf("text %q: agentrl's ids %v, %s's %v", text, got, f.Tokenizer, a.IDs[j])
				}
			}
		})
	}
}

// loadExport loads a folder of TestInteropExports into agentrl: a model,
// or the adapters over their base.
func loadExport(t *testing.T, f exportFolder) *torch.Model {
	t.Helper()
	if f.Adapter == "" {
		m, err := torch.LoadModel(f.Dir, torch.Float32, torch.CPU, false)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	b, err := torch.LoadModel(f.Base, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free() // the LoRA model keeps the shared weights alive
	m, err := peft.Load(f.Adapter, b, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// maxLogitDiff is the largest gap between m's logits of ids (one row) and
// want, [position][vocab].
func maxLogitDiff(t *testing.T, m *torch.Model, ids []int64, want [][]float64) float64 {
	t.Helper()
	attn, pos := make([]int64, len(ids)), make([]int64, len(ids))
	for i := range ids {
		attn[i], pos[i] = 1, int64(i)
	}
	x, err := m.Logits(torch.Batch{B: 1, T: len(ids), IDs: ids, Attn: attn, Positions: pos})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	got, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(ids) || len(got) != len(ids)*len(want[0]) {
		t.Fatalf("logits of %d positions x %d, agentrl's %d values", len(want), len(want[0]), len(got))
	}
	var d float64
	V := len(want[0])
	for p, row := range want {
		for v, w := range row {
			d = math.Max(d, math.Abs(float64(got[p*V+v])-w))
		}
	}
	return d
}

// TensorBoard's own event reader (EventAccumulator, as `tensorboard
// --logdir` reads) loads every scalar of a run's tb/ folder with the
// values the store holds: each finite metric of each iteration at the
// iteration's step, as float32, and nothing else.
func TestInteropTensorBoard(t *testing.T) {
	pyinterop.Python(t)
	run := trainedRun(t).dir()
	var ans struct {
		Scalars map[string][][2]float64 `json:"scalars"`
		Files   []string                `json:"files"`
	}
	pyinterop.Run(t, "testdata/interop/tb_scalars.py", map[string]any{"dir": filepath.Join(run, "tb")}, &ans)
	s, err := store.Open(filepath.Join(run, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.Metrics()
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int64]float32{}
	n := 0
	for _, it := range ms {
		for k, v := range it.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if want[k] == nil {
				want[k] = map[int64]float32{}
			}
			want[k][int64(it.Iteration)] = float32(v)
			n++
		}
	}
	if len(ms) < 2 || n == 0 {
		t.Fatalf("the store holds %d iterations, %d finite metrics: not a run to check", len(ms), n)
	}
	got := 0
	for tag, events := range ans.Scalars {
		for _, e := range events {
			step, v := int64(e[0]), float32(e[1])
			w, ok := want[tag][step]
			switch {
			case !ok:
				t.Errorf("TensorBoard has %s = %v at step %d, which the store does not hold", tag, v, step)
			case v != w:
				t.Errorf("TensorBoard has %s = %v at step %d, the store %v", tag, v, step, w)
			}
			got++
		}
	}
	t.Logf("TensorBoard read %d scalars of %d tags from %v; the store holds %d finite metrics over %d iterations", got, len(ans.Scalars), ans.Files, n, len(ms))
	if got != n {
		t.Errorf("TensorBoard read %d scalars, the store holds %d finite metrics", got, n)
	}
}
