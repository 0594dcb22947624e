package torch

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

// nemotronSmall is a small Nemotron-H config (NemotronHConfig's
// arguments): one period of the hybrid pattern (Mamba-2, MLP, Mamba-2,
// attention, MLP), eight Mamba heads of 8 in two groups of B and C with a
// state of 16, chunks of 16 tokens (so the rows below cross many chunk
// boundaries), grouped-query attention, weights drawn wide.
func nemotronSmall() map[string]any {
	return map[string]any{"vocab_size": 384, "hidden_size": 64, "intermediate_size": 96,
		"layers_block_type":   []string{MambaBlock, MLPBlock, MambaBlock, AttentionBlock, MLPBlock},
		"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "mamba_num_heads": 8, "mamba_head_dim": 8,
		"n_groups": 2, "ssm_state_size": 16, "conv_kernel": 4, "chunk_size": 16, "max_position_embeddings": 512,
		"initializer_range": 0.1, "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": false}
}

// A Nemotron-H model made and saved by transformers 5 (backbone.* names)
// loads, and its logits and the training forward's logprobs over rows of
// 150, 67 and 3 tokens (right-padded; the chunked scan over ten chunks),
// and greedy decoding from prefixes of 70, 1 and 9 tokens on both libtorch
// decode paths (the conv and scan states per slot), equal transformers'
// float64 forward and generate (its torch Mamba-2 path, which runs the
// scan in float32) within 1e-4 in f32. Then the gradient of every
// parameter of the short loss against transformers' autograd, unpacked
// and packed, with and without activation checkpointing, and agentrl's
// export loaded by transformers.
func TestInteropNemotronH(t *testing.T) {
	pyinterop.Python(t)
	dir := filepath.Join(t.TempDir(), "nemotron_h")
	hm := hfModel{Dir: dir, Family: "nemotron_h", Config: nemotronSmall(), Style: "5", Seed: 60, RefDType: "float64",
		Full: []int{150, 67, 3}, Explicit: true, Decode: []int{70, 1, 9}, Steps: 6}
	var made hfMade
	pyinterop.Run(t, "testdata/interop/hf_model.py", map[string]any{"models": []hfModel{hm}}, &made)
	t.Logf("made with transformers %s, torch %s", made.Transformers, made.Torch)
	for check, d := range fixtureParity(t, dir) {
		t.Logf("| nemotron_h | %s | %.1e |", check, d)
	}
	nemotronTraining(t, dir)
}

// nemotronTraining holds the gradients of the model folder dir's short
// loss over its right-padded case to transformers' autograd (float64)
// within 1e-4 in f32, unpacked and packed (the rows one after the other
// in one row, each a tree of its own: the conv and scan restart at each),
// with and without checkpointing, and
// checks agentrl's export (backbone.* names) loads in transformers as
// NemotronHForCausalLM with the same parameters and logits.
func nemotronTraining(t *testing.T, dir string) {
	full, ref, grads := gradReference(t, dir, "NemotronHForCausalLM", "eager")
	b := Batch{B: len(full.InputIDs), T: len(full.InputIDs[0]), IDs: flat(full.InputIDs), Attn: flat(full.AttentionMask),
		Positions: flat(full.PositionIDs)}
	for _, form := range []struct {
		name         string
		packed, ckpt bool
	}{{"unpacked", false, false}, {"checkpointed", false, true}, {"packed", true, false}, {"packed checkpointed", true, true}} {
		name := form.name
		t.Run(name, func(t *testing.T) {
			m, err := LoadModel(dir, Float32, CPU, false)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			if err := m.SetCheckpointing(form.ckpt); err != nil {
				t.Fatal(err)
			}
			loss := shortLoss(t, m, b, full, form.packed)
			if math.Abs(loss-ref.Loss) > 1e-5 {
				t.Errorf("loss %v, transformers %v", loss, ref.Loss)
			}
			d := holdGradients(t, m, grads, 1e-4, false)
			t.Logf("| %s | loss %.6f (transformers %.6f) | gradients: max |diff| %.2e |", name, loss, ref.Loss, d)
		})
	}
}

// nemotronConfig is a small Nemotron-H for tests without transformers.
func nemotronConfig() Config {
	return Config{ModelType: NemotronH, Vocab: 97, Hidden: 32, Intermediate: 48, Layers: 5, Heads: 4, KVHeads: 2,
		HeadDim: 8, RMSEps: 1e-5, RopeTheta: 10000, MaxPositions: 512,
		Nemotron: Nemotron{Blocks: []string{MambaBlock, MLPBlock, MambaBlock, AttentionBlock, MLPBlock},
			Heads: 4, HeadDim: 8, Groups: 2, State: 8, ConvKernel: 4, Chunk: 8, ConvBias: true, DtMax: math.Inf(1)}}
}

// The config reads NemotronHConfig's keys as transformers 5.25 writes
// them (time_step_limit's infinity included) and the legacy spellings,
// and refuses by name what is not implemented.
func TestConfigNemotronH(t *testing.T) {
	c, err := ParseConfig([]byte(`{"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"],
		"vocab_size": 384, "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
		"num_key_value_heads": 2, "head_dim": 16, "layers_block_type": ["linear_attention", "mlp", "full_attention"],
		"mamba_num_heads": 8, "mamba_head_dim": 8, "n_groups": 2, "ssm_state_size": 16, "chunk_size": 16,
		"layer_norm_epsilon": 1e-5, "time_step_limit": [0.0, {"__float__": "Infinity"}], "mlp_hidden_act": "relu2",
		"num_nextn_predict_layers": 1}`), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	n := c.Nemotron
	if c.Layers != 3 || n.Heads != 8 || n.Groups != 2 || n.State != 16 || n.Chunk != 16 || n.ConvKernel != 4 ||
		!n.ConvBias || !math.IsInf(n.DtMax, 1) || c.RMSEps != 1e-5 {
		t.Errorf("parsed %+v", c)
	}
	legacy, err := ParseConfig([]byte(`{"model_type": "nemotron_h", "hybrid_override_pattern": "M-M*-",
		"mamba_n_groups": 4, "mamba_d_conv": 3, "mamba_chunk_size": 32, "mamba_conv_bias": false, "mamba_dt_limit": [0.001, 0.5]}`), "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if ln := legacy.Nemotron; strings.Join(ln.Blocks, ",") != "linear_attention,mlp,linear_attention,full_attention,mlp" ||
		ln.Groups != 4 || ln.ConvKernel != 3 || ln.Chunk != 32 || ln.ConvBias || ln.DtMin != 0.001 || ln.DtMax != 0.5 ||
		legacy.Vocab != 131072 || legacy.HeadDim != 128 || legacy.KVHeads != 8 {
		t.Errorf("legacy keys parsed %+v", legacy)
	}
	for _, bad := range []struct{ json, want string }{
		{`"layers_block_type": ["moe"], "n_group": 3`, "n_group 3 must divide"},
		{`"hybrid_override_pattern": "ME", "topk_group": 2`, "topk_group 2"},
		{`"layers_block_type": ["moe"], "num_experts_per_tok": 9`, "num_experts_per_tok 9"},
		{`"layers_block_type": ["moe"], "moe_latent_size": 1.5`, "moe_latent_size"},
		{`"layers_block_type": ["mamba"]`, `"mamba" is not supported`},
		{`"layers_block_type": ["mlp"], "mlp_hidden_act": "silu"`, "mlp_hidden_act"},
		{`"layers_block_type": ["mlp"], "mamba_hidden_act": "gelu"`, "mamba_hidden_act"},
		{`"layers_block_type": ["mlp"], "use_bias": true`, "use_bias"},
		{`"layers_block_type": ["mlp"], "sliding_window": 128`, "sliding_window"},
		{`"layers_block_type": ["mlp"], "attention_bias": true`, "attention_bias"},
		{`"layers_block_type": ["mlp"], "mlp_bias": true`, "mlp_bias"},
		{`"layers_block_type": ["mlp"], "time_step_limit": [0.1, 0.01]`, "time_step_limit"},
		{`"layers_block_type": ["mlp"], "mamba_num_heads": 6, "n_groups": 4`, "multiple of n_groups"},
		{`"architectures": ["NemotronHForSequenceClassification"], "layers_block_type": ["mlp"]`, "architectures"},
	} {
		_, err := ParseConfig([]byte(`{"model_type": "nemotron_h", `+bad.json+`}`), "bad")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want an error naming %q", bad.json, err, bad.want)
		}
	}
}

// The chunked scan of the training forward gives the logits token by
// token as a forward over each prefix does: the last position of a
// forward over the first t tokens equals position t-1 of the whole
// sequence's forward, whose chunks of 8 split the 21 tokens unevenly.
func TestNemotronHCausal(t *testing.T) {
	m, err := NewRandomModel(nemotronConfig(), Float64, CPU, false, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ids := make([]int64, 21)
	for i := range ids {
		ids[i] = int64(3 + (i*37)%90)
	}
	whole := logitsOf(t, m, ids)
	V := m.Config.Vocab
	for _, n := range []int{1, 7, 8, 9, 16, 20} {
		part := logitsOf(t, m, ids[:n])
		var d float64
		for j := range V {
			d = math.Max(d, math.Abs(part[(n-1)*V+j]-whole[(n-1)*V+j]))
		}
		if d > 1e-10 {
			t.Errorf("prefix of %d: the last logits differ from the whole sequence's by %g", n, d)
		}
	}
}

// The conv and scan states a Mamba-2 layer carries across decode steps
// (from a prefill of 20 tokens, three chunks of 8, to the steps after)
// give the logits the chunked forward gives over the whole sequence, on
// both libtorch decode paths; a slot copied mid-sequence continues as its
// source, and a ragged batched prefill (rows of 5 and 20 tokens) leaves
// each slot's states as a prefill of its own.
func TestNemotronHDecodeStateEqualsChunkedForward(t *testing.T) {
	m, err := NewRandomModel(nemotronConfig(), Float64, CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.InitRandom(3, 0.2); err != nil {
		t.Fatal(err)
	}
	ids := seq(30, 7)
	short := seq(12, 9)
	full, fullShort := logitsOf(t, m, ids), logitsOf(t, m, short)
	V := m.Config.Vocab
	for _, p := range []DecodePath{DecodeFused, DecodeUnfused} {
		t.Run(p.String(), func(t *testing.T) {
			e := newEngineOn(t, m, 4, p)
			defer e.Free()
			if err := e.Prefill(1, ids[:20]); err != nil {
				t.Fatal(err)
			}
			if err := e.PrefillBatch([]int{3, 0}, [][]int64{short[:5], ids[:20]}); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for n := 20; n < len(ids); n++ {
				for _, slot := range []int{1, 0} {
					l, err := e.PendingLogits(slot)
					if err != nil {
						t.Fatal(err)
					}
					worst = math.Max(worst, maxDiff(l, full[(n-1)*V:n*V]))
				}
				if n == 25 {
					if err := e.CopySlot(1, 2); err != nil {
						t.Fatal(err)
					}
				}
				for _, slot := range []int{1, 0} {
					if err := e.Prefill(slot, ids[n:n+1]); err != nil {
						t.Fatal(err)
					}
				}
				if n >= 25 {
					if err := e.Prefill(2, ids[n:n+1]); err != nil {
						t.Fatal(err)
					}
					l2, _ := e.PendingLogits(2)
					worst = math.Max(worst, maxDiff(l2, full[n*V:(n+1)*V]))
				}
			}
			for n := 5; n < len(short); n++ {
				l, _ := e.PendingLogits(3)
				worst = math.Max(worst, maxDiff(l, fullShort[(n-1)*V:n*V]))
				if err := e.Prefill(3, short[n:n+1]); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("largest difference from the chunked forward: %.2e", worst)
			if worst > 1e-5 { // the pending logits are float32
				t.Fatalf("decode logits differ from the full forward by %g", worst)
			}
		})
	}
}

// A packed forward of Nemotron-H gives each sequence of a prefix tree the
// log-probabilities the plain forward gives it alone (the tree of
// TestQwen35PackedTreeEqualsAlone): the Mamba-2 conv and state of the
// second branch continue the prefix, not the first branch, across chunks
// of 8.
func TestNemotronHPackedTreeEqualsAlone(t *testing.T) {
	m, err := NewRandomModel(nemotronConfig(), Float64, CPU, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.InitRandom(5, 0.2); err != nil {
		t.Fatal(err)
	}
	packedTreeEqualsAlone(t, m)
}

// LoRA on Nemotron-H sits on its mixer.* projections: all-linear is the
// Mamba-2 layers' in_proj (out_proj is refused, as PEFT refuses it), the attention's q/k/v/o_proj and
// the MLPs' up_proj and down_proj, each on the blocks that have it, under
// PEFT's keys. With B drawn, the training forward's unmerged products
// (W x + s B A x) give the merged model's logprobs (W + s B A), and differ
// from the base's; a model with moe blocks refuses up_proj (PEFT would
// adapt its shared experts) and takes the others.
func TestNemotronHLoRA(t *testing.T) {
	base, err := NewRandomModel(nemotronConfig(), Float64, CPU, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	if err := base.InitRandom(1, 0.2); err != nil {
		t.Fatal(err)
	}
	all := base.Config.AllLinear()
	if want := []string{"q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj", "in_proj"}; !slices.Equal(all, want) {
		t.Fatalf("all-linear %v, want %v", all, want)
	}
	m, err := NewLoRAModel(base, LoRA{Rank: 4, Alpha: 8, Targets: all}, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	for _, n := range []string{"base_model.model.model.layers.0.mixer.in_proj.lora_A.weight",
		"base_model.model.model.layers.2.mixer.in_proj.lora_B.weight", "base_model.model.model.layers.3.mixer.q_proj.lora_A.weight",
		"base_model.model.model.layers.4.mixer.down_proj.lora_B.weight"} {
		if !slices.Contains(m.Names(), n) {
			t.Errorf("no adapter %s among %v", n, m.Names())
		}
	}
	if n := len(m.Names()); n != 2*(2+4+2*2) {
		t.Errorf("%d adapter matrices, want 20 (in_proj on 2 Mamba-2 layers, q/k/v/o on 1 attention layer, up, down on 2 MLPs)", n)
	}
	if _, err := NewLoRAModel(base, LoRA{Rank: 4, Alpha: 8, Targets: []string{"out_proj"}}, false, 1); err == nil ||
		!strings.Contains(err.Error(), "mixer.out_proj") {
		t.Errorf("LoRA on a Mamba-2 layer's out_proj: %v, want a refusal naming it", err)
	}
	setRandomB(t, m)
	b := Batch{B: 1, T: 20, IDs: seq(20, 3), Attn: make([]int64, 20), Positions: make([]int64, 20)}
	for i := range 20 {
		b.Attn[i], b.Positions[i] = 1, int64(i)
	}
	checkMergedEqualsAdapters(t, m, base, b)

	moe, err := NewRandomModel(nemotronMoEConfig(), Float32, CPU, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer moe.Free()
	if _, err := NewLoRAModel(moe, LoRA{Rank: 4, Alpha: 8, Targets: []string{"up_proj"}}, false, 1); err == nil ||
		!strings.Contains(err.Error(), "mixer.shared_experts") {
		t.Errorf("LoRA on a Nemotron-H moe model's up_proj: %v, want a refusal naming the shared experts", err)
	}
	l, err := NewLoRAModel(moe, LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "in_proj"}}, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Free()
}
