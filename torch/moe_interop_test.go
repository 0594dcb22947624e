package torch

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

// moeSmall is a small Qwen3 MoE: 3 layers, of which layer 1 is dense
// (mlp_only_layers), 8 experts of width 32, top-4.
func moeSmall(normTopK bool) map[string]any {
	return map[string]any{"vocab_size": 384, "hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 32,
		"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
		"num_experts": 8, "num_experts_per_tok": 4, "norm_topk_prob": normTopK, "mlp_only_layers": []int{1},
		"decoder_sparse_step": 1, "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "initializer_range": 0.1,
		"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6}, "tie_word_embeddings": false,
		"bos_token_id": 1, "eos_token_id": 2, "router_aux_loss_coef": 0.01}
}

// moeReal is Qwen3-30B-A3B's shape (vocabulary, width, heads, head_dim,
// expert width, top-8 of normalised probabilities, RoPE base) with 3
// layers instead of 48, layer 1 dense, and 16 experts instead of 128, so
// that transformers' float64 reference fits in this machine's memory.
var moeReal = map[string]any{"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
	"moe_intermediate_size": 768, "num_hidden_layers": 3, "num_attention_heads": 32, "num_key_value_heads": 4,
	"head_dim": 128, "num_experts": 16, "num_experts_per_tok": 8, "norm_topk_prob": true, "mlp_only_layers": []int{1},
	"decoder_sparse_step": 1, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
	"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6}, "tie_word_embeddings": false,
	"bos_token_id": 151643, "eos_token_id": 151645, "router_aux_loss_coef": 0.001}

// moeChecked is what testdata/interop/moe_check.py answers.
type moeChecked struct {
	AuxLoss       float64  `json:"aux_loss"`
	Loss          float64  `json:"loss"`
	ExportMaxDiff *float64 `json:"export_max_diff"`
}

// Qwen3 MoE models made by transformers 5 (save_pretrained: the experts
// under per-expert keys, the expert count as num_local_experts), both
// sparse and dense layers present, with normalised and plain top-k
// probabilities, in both config forms, one sharded: logits, the training
// forward's logprobs and greedy decoding on the libtorch paths within 1e-4
// of transformers' float64 forward and generate (interopParity). Then, on
// the first: the packed training forward's logprobs against the same
// reference; the routers' load-balancing loss, unpacked (with and without
// checkpointing) and packed (the same tokens, so the same loss), against
// transformers' aux_loss; the gradients of -mean logprob + coef * aux by
// the checkpointed forward against transformers' autograd; and the model
// saved by agentrl loads in transformers with every parameter equal.
func TestInteropQwen3MoE(t *testing.T) {
	pyinterop.Python(t)
	root := t.TempDir()
	models := []hfModel{
		{Dir: filepath.Join(root, "qwen3-moe-norm"), Family: "qwen3_moe", Config: moeSmall(true), Style: "5", Seed: 31,
			RefDType: "float64", Full: []int{24, 17, 3}, Explicit: true, Decode: []int{9, 1, 30}, Steps: 6},
		{Dir: filepath.Join(root, "qwen3-moe-plain"), Family: "qwen3_moe", Config: moeSmall(false), Style: "4",
			MaxShardSize: "100KB", Seed: 32, RefDType: "float64", Full: []int{24, 17, 3}, Explicit: true,
			Decode: []int{9, 1, 30}, Steps: 6},
	}
	interopParity(t, models, []string{"qwen3-moe-norm-5.x", "qwen3-moe-plain-4.x-sharded"})
	moeChecks(t, models[0].Dir)
}

// moeChecks holds the model transformers made in dir (its text form, with
// cases.json) to transformers (testdata/interop/moe_check.py): the packed
// training forward's logprobs against the right-padded case's reference;
// the routers' load-balancing loss, unpacked (with and without
// checkpointing) and packed (the same tokens, so the same loss), against
// transformers' aux_loss; the gradients of -mean logprob + coef * aux by
// the checkpointed forward against transformers' autograd; and the model
// saved by agentrl loads in transformers with every parameter equal.
func moeChecks(t *testing.T, dir string) {
	m, err := LoadModel(dir, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	var full fixtureCase
	for _, c := range loadCases(t, dir) {
		if c.Name == "right_padded" {
			full = c
		}
	}
	const coef = 0.5
	var ref moeChecked
	export := filepath.Join(t.TempDir(), "export")
	if err := m.Save(export); err != nil {
		t.Fatal(err)
	}
	grads := filepath.Join(t.TempDir(), "grads.safetensors")
	pyinterop.Run(t, "testdata/interop/moe_check.py", map[string]any{"dir": dir, "ids": full.InputIDs,
		"mask": full.AttentionMask, "coef": coef, "grads": grads, "export": export}, &ref)
	if ref.ExportMaxDiff == nil || *ref.ExportMaxDiff != 0 {
		t.Errorf("agentrl's export loaded in transformers differs from the model by %v", ref.ExportMaxDiff)
	}
	t.Logf("transformers: aux loss %.6f, loss %.6f", ref.AuxLoss, ref.Loss)
	b := Batch{B: len(full.InputIDs), T: len(full.InputIDs[0]), IDs: flat(full.InputIDs), Attn: flat(full.AttentionMask),
		Positions: flat(full.PositionIDs)}
	for _, ckpt := range []bool{false, true} {
		if err := m.SetCheckpointing(ckpt); err != nil {
			t.Fatal(err)
		}
		o, err := m.Forward(b, ForwardOptions{Grad: true, RouterAuxLoss: true})
		if err != nil {
			t.Fatal(err)
		}
		aux, _ := o.AuxLoss.Item()
		o.Free()
		t.Logf("aux loss (checkpointing %v): %.6f, |diff| %.1e", ckpt, aux, math.Abs(aux-ref.AuxLoss))
		if math.Abs(aux-ref.AuxLoss) > 1e-5 {
			t.Errorf("aux loss (checkpointing %v) %v, transformers %v", ckpt, aux, ref.AuxLoss)
		}
	}
	t.Run("packed", func(t *testing.T) {
		d, aux := moePackedCase(t, m, full)
		t.Logf("packed logprobs: max |diff| %.2e; aux loss %.6f, |diff| %.1e", d, aux, math.Abs(aux-ref.AuxLoss))
		if math.Abs(aux-ref.AuxLoss) > 1e-5 {
			t.Errorf("packed aux loss %v, transformers %v", aux, ref.AuxLoss)
		}
	})
	t.Run("gradients", func(t *testing.T) {
		d := moeGradients(t, m, b, full, coef, ref.Loss, grads)
		t.Logf("gradients: max |diff| %.2e", d)
	})
}

// moePackedCase packs the rows of the right-padded case c (packRows),
// runs the packed training forward with checkpointing and the aux loss,
// holds each real next token's logprob to log softmax of the case's
// logits within 1e-4, and returns the largest difference and the aux loss.
func moePackedCase(t *testing.T, m *Model, c fixtureCase) (float64, float64) {
	pb, want := packRows(c)
	if err := m.SetCheckpointing(true); err != nil {
		t.Fatal(err)
	}
	defer m.SetCheckpointing(false)
	o, err := m.ForwardPacked(pb, ForwardOptions{Grad: true, RouterAuxLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Free()
	got, _ := o.LogProbs.Float64s()
	aux, _ := o.AuxLoss.Item()
	worst := 0.0
	for j := range want {
		d := math.Abs(got[j] - want[j])
		worst = math.Max(worst, d)
		if d > 1e-4 {
			t.Errorf("packed target %d: logprob %v, transformers %v", j, got[j], want[j])
		}
	}
	return worst, aux
}

// logSoftmax64At is log softmax(row)[k], in float64.
func logSoftmax64At(row []float64, k int64) float64 {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = math.Max(mx, v)
	}
	var z float64
	for _, v := range row {
		z += math.Exp(v - mx)
	}
	return row[k] - mx - math.Log(z)
}

// moeGradients computes L = -mean logprob over the real next-token pairs
// of batch b (case c) + coef * aux loss with the checkpointed training
// forward, checks L against transformers' value, backpropagates, and holds
// every parameter's gradient to transformers' (the file grads) within
// 1e-4 (holdGradients; for a hybrid Qwen3.5 model, 1e-4 of the
// gradient's largest entry where that exceeds 1: transformers' Qwen3.5
// computes the Gated DeltaNet core, the norms, the decays and RoPE in
// float32 even in a float64 model, so its gradients carry float32
// rounding: measured on TestInteropQwen35MoE's model, its own float32 and
// float64 gradients differ by 1.7e-4 on layer 0's conv1d, entries up to
// 4.1); it returns the largest difference.
func moeGradients(t *testing.T, m *Model, b Batch, c fixtureCase, coef, refLoss float64, grads string) float64 {
	if err := m.SetCheckpointing(true); err != nil {
		t.Fatal(err)
	}
	defer m.SetCheckpointing(false)
	pairs := make([]float32, b.B*(b.T-1))
	var n float64
	for r := range b.B {
		for p := 0; p+1 < b.T; p++ {
			if c.AttentionMask[r][p] == 1 && c.AttentionMask[r][p+1] == 1 {
				pairs[r*(b.T-1)+p] = 1
				n++
			}
		}
	}
	o, err := m.Forward(b, ForwardOptions{Grad: true, RouterAuxLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Free()
	s := NewScope()
	defer s.Close()
	mask := s.Adopt(FromFloat32(pairs, int64(b.B), int64(b.T-1)))
	loss := s.Add(s.DivScalar(s.Neg(s.Sum(s.Mul(o.LogProbs, mask))), n), s.MulScalar(o.AuxLoss, coef))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	lv, _ := loss.Item()
	if math.Abs(lv-refLoss) > 1e-5 {
		t.Errorf("loss %v, transformers %v", lv, refLoss)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	return holdGradients(t, m, grads, 1e-4, m.Config.Hybrid())
}

// Qwen3-30B-A3B at its real shape but for depth and expert count (moeReal:
// 3 layers, the middle one dense, 16 experts), made by transformers 5:
// logits, logprobs and greedy decoding against transformers' float64
// forward and generate, in f32 within 1e-4.
func TestInteropQwen3MoERealShape(t *testing.T) {
	pyinterop.Python(t)
	hm := hfModel{Dir: filepath.Join(t.TempDir(), "Qwen3-30B-A3B-3layers-16experts"), Family: "qwen3_moe", Config: moeReal,
		Style: "5", Seed: 33, RefDType: "float64", Full: []int{12, 5}, Decode: []int{7}, Steps: 3}
	interopParity(t, []hfModel{hm}, []string{"Qwen3-30B-A3B (3 layers, 16 experts)"})
}
