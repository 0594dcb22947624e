package memory

import (
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// fixtureParams is the parameter count of ../shared/fixtures/qwen2-tiny-a,
// worked by hand in trainer's dry-run tests.
const fixtureParams = 135744

// The activation estimate for a Qwen2.5-0.5B shape (vocab 151936, hidden
// 896, intermediate 4864, 24 layers, 14 heads, 2 kv heads of 64) at a
// micro-batch of 8 x 250 tokens (2000 tokens), by hand:
// per layer and token 10*896 + 6*128 + 4*4864 + 14*250 = 32684 floats, so
// 32684 * 2000 * 4 = 261,472,000 bytes a layer; 24 layers and the
// gradients of one, 25 * 261,472,000 = 6,536,800,000.
// Logits whole: 3 * 2000 * 151936 * 4 = 3,646,464,000.
// In chunks of 256: 2 * 256 * 151936 * 4 = 311,164,928, the LM head's
// gradient 151936 * 896 * 4 = 544,538,624 (none for a frozen head) and the
// hidden states 2000 * 896 * 4 = 7,168,000: 862,871,552.
// With checkpointing the layers keep their inputs, 24 * 2000 * 896 * 4 =
// 172,032,000, plus one layer's activations and their gradients,
// 2 * 261,472,000 = 522,944,000.
func TestActivations(t *testing.T) {
	c := torch.Config{Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14, KVHeads: 2, HeadDim: 64}
	cases := []struct {
		chunk          int
		ckpt, headGrad bool
		want           int64
	}{
		{0, false, true, 6536800000 + 3646464000},
		{256, false, true, 6536800000 + 862871552},
		{256, true, true, 172032000 + 522944000 + 862871552},
		// A frozen head (LoRA): no [vocab, hidden] gradient.
		{256, true, false, 172032000 + 522944000 + 862871552 - 544538624},
		// A chunk larger than the micro-batch holds all its 2000 tokens:
		// 2 * 2000 * 151936 * 4 = 2,430,976,000.
		{5000, false, true, 6536800000 + 2430976000 + 544538624 + 7168000},
	}
	for _, k := range cases {
		if got := Activations(c, Workload{Micro: 8, Seq: 250, LogitsChunk: k.chunk, Checkpointing: k.ckpt, HeadGrad: k.headGrad, Bytes: 4}); got != k.want {
			t.Errorf("chunk %d, checkpointing %v, head gradient %v: %d bytes, want %d", k.chunk, k.ckpt, k.headGrad, got, k.want)
		}
	}
}

// The gradients and optimizer state a rank holds, for the fixture's
// 135744 parameters, worked by hand. In f32 (4 bytes): whole, gradients
// 135744*4 = 542976 and two f32 moments 2*542976 = 1085952. Over 8 ranks
// each owns ceil(135744/8) = 16968 elements: stage 1 keeps the moments of
// those, 2*16968*4 = 135744 bytes, and the whole gradients; stage 2 the
// gradients of those too, 16968*4 = 67872. Over 5 ranks 135744/5 =
// 27148.8, so the flat vector is padded to 135745 and a rank owns 27149:
// moments 2*27149*4 = 217192. In bf16 a parameter has a 2-byte gradient
// and a 4-byte f32 accumulator, two f32 moments and an f32 master (12
// bytes): whole 135744*6 = 814464 and 135744*12 = 1628928; over 8 ranks at
// stage 2, 16968*6 = 101808 and 16968*12 = 203616. One rank is plain AdamW
// at any stage.
func TestTrainingStateZeRO(t *testing.T) {
	for _, c := range []struct {
		b                int64
		world, zero      int
		grads, optimizer int64
	}{
		{4, 1, 0, 542976, 1085952},
		{4, 1, 2, 542976, 1085952},
		{4, 8, 0, 542976, 1085952},
		{4, 8, 1, 542976, 135744},
		{4, 8, 2, 67872, 135744},
		{4, 5, 1, 542976, 217192},
		{2, 1, 0, 814464, 1628928},
		{2, 8, 2, 101808, 203616},
	} {
		g, o := TrainingState(fixtureParams, c.b, c.world, c.zero)
		if g != c.grads || o != c.optimizer {
			t.Errorf("%d bytes, %d ranks, stage %d: grads %d optimizer %d, want %d and %d", c.b, c.world, c.zero, g, o, c.grads, c.optimizer)
		}
	}
}

// The same shape in bf16 on CUDA (SDPA) at 4 x 2048 tokens, chunks of 256,
// by hand: per layer and token 10*896 + 6*128 + 4*4864 = 29184 numbers of
// 2 bytes and a float32 log-sum-exp per head (no probabilities), 58368 +
// 56 = 58424 bytes; 8192 tokens, 478,609,408 bytes a layer, 25 of them
// 11,965,235,200. The additive mask once: 4 * 14/2 * 2048 * 2048 * 2 =
// 234,881,024. Logits: 2 * 256 * 151936 * 4 = 311,164,928 in float32, the
// hidden states' gradient 8192 * 896 * 2 = 14,680,064 and the head's
// 151936 * 896 * 2 = 272,269,312. On the CPU the attention is written out:
// per layer and token 14 rows of 2048 probabilities, softmax's float32
// output and its bf16 copy, 14 * 2048 * 6 = 172,032 bytes in place of the
// 56, so 25 * 8192 * (58368 + 172032) = 47,185,920,000, and no mask.
func TestActivationsBF16SDPA(t *testing.T) {
	c := torch.Config{Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14, KVHeads: 2, HeadDim: 64}
	w := Workload{Micro: 4, Seq: 2048, LogitsChunk: 256, HeadGrad: true, Bytes: 2, SDPA: true}
	logits := int64(311164928 + 14680064 + 272269312)
	if got, want := Activations(c, w), int64(11965235200+234881024)+logits; got != want {
		t.Errorf("bf16 under SDPA: %d bytes, want %d", got, want)
	}
	w.SDPA = false
	if got, want := Activations(c, w), int64(47185920000)+logits; got != want {
		t.Errorf("bf16 written out: %d bytes, want %d", got, want)
	}
}

// The decode state of the 0.5B shape's 24 attention layers for 64 slots of
// 2049 positions: 2 * 64 * 2049 * 2 * 64 = 33,570,816 numbers a layer,
// 805,699,584 in all: 1,611,399,168 bytes in bf16, twice that in f32.
func TestDecodeStateByDType(t *testing.T) {
	c := torch.Config{Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14, KVHeads: 2, HeadDim: 64}
	for _, k := range []struct {
		b    int64
		want int64
	}{{2, 1611399168}, {4, 3222798336}} {
		if kv, dn := DecodeState(c, 64, 2049, k.b); kv != k.want || dn != 0 {
			t.Errorf("%d bytes: kv %d, deltanet %d, want %d and 0", k.b, kv, dn, k.want)
		}
	}
}

// A Gemma 4 engine's caches: gemma4's six layers (sliding, sliding, full,
// twice; the last two kv-shared) for 4 slots of 100 positions in f32:
// three sliding layers of 2 kv heads x 16 holding their window of 8
// positions and one full of 1 x 32 holding all 100, 2 * 4 * (3 * 8 * 32 +
// 100 * 32) * 4 = 126,976 bytes; the shared two none. With 6 positions,
// fewer than the window, every layer holds 6: 2 * 4 * 6 * (3 * 32 + 32)
// * 4 = 24,576 bytes.
func TestDecodeStateGemma4(t *testing.T) {
	s, f := torch.SlidingAttention, torch.FullAttention
	c := torch.Config{Layers: 6, Heads: 4, KVHeads: 2, HeadDim: 16, LayerTypes: []string{s, s, f, s, s, f},
		Gemma: &torch.Gemma4{SlidingWindow: 8, GlobalHeadDim: 32, GlobalKVHeads: 1, KVSharedLayers: 2}}
	for _, k := range []struct{ positions, want int }{{100, 126976}, {6, 24576}} {
		if kv, dn := DecodeState(c, 4, k.positions, 4); kv != int64(k.want) || dn != 0 {
			t.Errorf("%d positions: kv %d, deltanet %d, want %d and 0", k.positions, kv, dn, k.want)
		}
	}
}

// A Qwen3 whose layer_types make its first layer slide over 8 and not its
// second, 2 kv heads of 16, 4 slots of 100 positions in bf16: the sliding
// layer's cache holds 8 positions, the full one's 100: 2 * 4 * (8 + 100) *
// 32 * 2 = 55,296 bytes.
func TestDecodeStateSlidingWindow(t *testing.T) {
	c := torch.Config{Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Window: 8, WindowLayers: []bool{true, false}}
	if kv, dn := DecodeState(c, 4, 100, 2); kv != 55296 || dn != 0 {
		t.Errorf("kv %d, deltanet %d, want 55296 and 0", kv, dn)
	}
}

// A Nemotron-H moe block keeps, per token, 5 hidden-sized values, the
// shared expert's 3 of its width, the latent's 2, the chosen experts' 3 of
// their width and 3 of their input (the latent) each, in the model's
// dtype, and the router's logits and scores in float32: a second block adds
// exactly that (10 tokens, hidden 64, shared 24, latent 16, 2 of 8
// experts of 16: (5x64 + 3x24 + 2x16 + 2 x (3x16 + 3x16)) x 4 + 2 x 8 x 4
// bytes a token).
func TestActivationsNemotronMoE(t *testing.T) {
	c := torch.Config{ModelType: torch.NemotronH, Vocab: 50, Hidden: 64, Layers: 1,
		Nemotron: torch.Nemotron{Blocks: []string{torch.MoEBlock}},
		MoE:      torch.MoE{Experts: 8, ExpertsPerToken: 2, Intermediate: 16, SharedIntermediate: 24, Latent: 16}}
	two := c
	two.Layers, two.Nemotron.Blocks = 2, []string{torch.MoEBlock, torch.MoEBlock}
	w := Workload{Micro: 1, Seq: 10, Bytes: 4}
	if got, want := Activations(two, w)-Activations(c, w), int64(10*((5*64+3*24+2*16+2*(3*16+3*16))*4+2*8*4)); got != want {
		t.Errorf("a moe block keeps %d bytes, want %d", got, want)
	}
}

// Gemma 4's activations, by hand, for 2 x 10 tokens (20) of a 3-layer
// model: sliding, full, and a kv-shared full layer with a double-wide MLP
// (hidden 32, 4 heads, sliding head_dim 8 and 2 kv heads, full head_dim 16
// and 1 kv head, intermediate 48, per-layer inputs of 4, vocabulary 50,
// logits capped), per token in f32 (each norm keeps its normalised value):
// every layer 6x32 + 4 norms x 32 = 320 hidden, 4 x 10 probabilities,
// per-layer 2x32 + 32 + 3x4 = 108; sliding: q 3x32 + 32 = 128, kv
// 3x16 + 2x16 = 80, MLP 4x48 = 192; full: q 3x64 + 64 = 256, kv 3x16 +
// 2x16 = 80, MLP 192; shared: q 256, MLP 4x96 = 384. Layers 868, 996,
// 1108 floats; the per-layer inputs 3 x 12 = 36; with the largest layer's
// gradients 868 + 996 + 2 x 1108 + 36 = 4116 floats a token, 329,280
// bytes. The capped logits are whole whatever the chunk, 4 x 20 x 50 x 4 =
// 16,000 bytes. In bf16 each norm also keeps its input in float32, each
// v norm's output its cast (k_eq_v dropping the full layers' v
// projection), and the rest is 2 bytes.
func TestActivationsGemma4(t *testing.T) {
	s, f := torch.SlidingAttention, torch.FullAttention
	c := torch.Config{Vocab: 50, Hidden: 32, Intermediate: 48, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 8,
		LayerTypes: []string{s, f, f}, Gemma: &torch.Gemma4{SlidingWindow: 4, GlobalHeadDim: 16, GlobalKVHeads: 1,
			KVSharedLayers: 1, DoubleWideMLP: true, PerLayerDim: 4, PerLayerVocab: 50, FinalSoftcap: 30}}
	w := Workload{Micro: 2, Seq: 10, LogitsChunk: 4, HeadGrad: true, Bytes: 4}
	if got, want := Activations(c, w), int64(20*4116*4+16000); got != want {
		t.Errorf("f32: %d bytes, want %d", got, want)
	}
	// bf16, k_eq_v: per token, bytes. Hidden: 6x32x2 + 4 norms x 32 x 8 +
	// probabilities 4 x 10 x (4+2) = 1,648; per-layer 2x32x2 + 3x4x2 + 32x8 =
	// 408. Sliding: q 3x32x2 + 32x8 = 448, kv (3+1)x16x2 + 2x16x8 = 384, MLP
	// 4x48x2 = 384: 3,272. Full: q 3x64x2 + 64x8 = 896, kv (2+1)x16x2 + 2x16x8
	// = 352, MLP 384: 3,688. Shared: q 896, MLP 768: 3,720. Per-layer
	// inputs 2x12x2 + 12x8 = 144. 3,272 + 3,688 + 2 x 3,720 + 144 = 14,544
	// bytes a token.
	c.Gemma.KEqV, w.Bytes = true, 2
	if got, want := Activations(c, w), int64(20*14544+16000); got != want {
		t.Errorf("bf16, k_eq_v: %d bytes, want %d", got, want)
	}
}

// TestActivationsGemma4's model with the MoE block in every layer (4
// experts of width 16, 2 a token), by hand: per token and layer the block
// adds, in f32, 4 hidden-sized (the router's normed input and its scaled
// copy, the experts' sum, the sum of the normed MLP and experts outputs:
// 128 floats), per chosen expert its gathered input and output (2 x 2 x
// 32 = 128) and its gate|up, GELU and product (2 x 4 x 16 = 128), three
// norms' normalised values (3 x 32 x 4 = 384 bytes), the router's softmax
// (4 x 4 = 16 bytes) and per chosen expert 3 float32 weights, its scale and
// 3 int64 indices (2 x (12 + 4 + 24) = 80 bytes): 384 x 4 + 384 + 16 + 80
// = 2,016 bytes; over three layers and the largest's gradients 4 x 2,016 =
// 8,064 bytes a token more than the dense model's 4,116 floats. In bf16
// the 384 floats are 2 bytes, each norm keeps its float32 input too (3 x
// 2 x 32 x 4 = 768), the router's norm its input's float32 copy (128)
// and the scales are 2 bytes (76): 768 + 768 + 16 + 76 + 128 = 1,756
// bytes, 4 x 1,756 = 7,024 more than the dense model's 14,544.
func TestActivationsGemma4MoE(t *testing.T) {
	s, f := torch.SlidingAttention, torch.FullAttention
	c := torch.Config{Vocab: 50, Hidden: 32, Intermediate: 48, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 8,
		LayerTypes: []string{s, f, f}, Gemma: &torch.Gemma4{SlidingWindow: 4, GlobalHeadDim: 16, GlobalKVHeads: 1,
			KVSharedLayers: 1, DoubleWideMLP: true, PerLayerDim: 4, PerLayerVocab: 50, FinalSoftcap: 30},
		MoE: torch.MoE{Experts: 4, ExpertsPerToken: 2, Intermediate: 16, NormTopKProb: true, SparseStep: 1}}
	w := Workload{Micro: 2, Seq: 10, LogitsChunk: 4, HeadGrad: true, Bytes: 4}
	if got, want := Activations(c, w), int64(20*(4116*4+8064)+16000); got != want {
		t.Errorf("f32: %d bytes, want %d", got, want)
	}
	c.Gemma.KEqV, w.Bytes = true, 2
	if got, want := Activations(c, w), int64(20*(14544+7024)+16000); got != want {
		t.Errorf("bf16, k_eq_v: %d bytes, want %d", got, want)
	}
}
