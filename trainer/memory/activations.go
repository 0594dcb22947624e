package memory

import "github.com/agentrl/agentrl/torch"

// Workload is one micro-batch of the training forward and how it runs.
type Workload struct {
	// Micro sequences of Seq tokens each.
	Micro, Seq int
	// LogitsChunk is model.logits_chunk (0: the logits whole).
	LogitsChunk int
	// Checkpointing is model.checkpointing.
	Checkpointing bool
	// HeadGrad says the LM head takes a gradient (not under LoRA, whose
	// head is frozen).
	HeadGrad bool
	// Bytes is the size of one activation: the model's dtype (2 for bf16
	// and f16, 4 for f32; 4 for an f32 model under autocast, whose norms
	// and residuals stay in float32: an upper bound).
	Bytes int64
	// SDPA says the attention runs libtorch's scaled_dot_product_attention
	// (on CUDA, libtorch 2.5 and later), which keeps a log-sum-exp per head
	// instead of a row of probabilities, and takes the mask as an additive
	// bias made once per forward.
	SDPA bool
}

// Activations estimates what the training forward of one micro-batch
// keeps for its backward pass, and the LM head's share of the backward's
// peak.
//
// A decoder layer keeps, per token, about 10 hidden-sized tensors (the
// residual input, the two RMSNorms' normalised values and outputs, q
// before and after RoPE, the attention output), 6 of the key/value width
// (k, v and k's RoPE), 4 of the MLP's intermediate size (gate, its SiLU,
// up and their product), each w.Bytes a number, and, where the attention is
// written out (the CPU), a row of attention probabilities per head:
// softmax's float32 output, and its copy in the model's dtype when that is
// narrower. Under SDPA a float32 log-sum-exp per head instead, and the
// additive mask once for all layers (micro x heads/kv_heads x seq x seq
// rounded up to 8, in the model's dtype).
// The backward of a layer holds, besides them, the gradients of its
// activations: one layer's worth more. With activation checkpointing only
// each layer's input is kept, and one layer's activations (and their
// gradients) exist at a time, while its backward recomputes them.
//
// A sparse (mixture-of-experts) layer keeps, instead of the dense MLP's 4
// intermediate-sized tensors, those of the experts each token runs
// (experts_per_token x 4 of the expert width), the token's rows gathered
// for them and their outputs (2 x experts_per_token hidden-sized), and
// the router's logits and probabilities (2 x experts). A shared expert
// (Qwen3.5 MoE) adds its MLP's 4 tensors of its width, its output
// (hidden-sized) and its gate's logit and sigmoid (2).
//
// A Gated DeltaNet layer (Qwen3.5's linear_attention) keeps, instead of
// the attention's, what transformers' chunked form
// (torch_chunk_gated_delta_rule, chunks of C = 64 tokens) and the layer
// around it keep, counted per token in floats (4 bytes whatever the
// model's dtype: the delta rule runs in float32), with q and k repeated to
// the V value heads (Q = V x k_dim, W = V x v_dim, D the conv's channels
// 2 x k_heads x k_dim + W): 6 hidden-sized (the residual input, the two
// RMSNorms' normalised values and outputs, the residual sum); 3 x D (the
// qkv projection, the conv's output and its SiLU); 4 x V (the a and b
// projections, g and beta); 10 x Q (q and k in float32 and L2-normalised,
// q scaled; k times beta and its decayed copy, the UT solve's decayed
// keys, q and k decayed for the scan); 11 x W (v in float32 and times
// beta, the UT solve's new values, the scan's corrected values, its read
// of the state, the intra-chunk product, the output; z, silu(z), the gated
// norm's normalised value and product); 7 x V x C (a row of the chunk's
// pairwise decays, before the mask, masked and exponentiated, and of the
// UT system and the intra-chunk attention, each before and after the
// decay); and the state entering each chunk, V x k_dim x v_dim per C
// tokens (padding to whole chunks aside). Qwen3.5's gated attention layer
// keeps, besides an attention layer's, the gate half of its twice-as-wide
// q_proj, the gate's sigmoid and the gated output (3 x heads x head_dim).
//
// A Nemotron-H layer is one block. Its attention block keeps the residual
// input, the norm's normalised value and output, q, k, v, the attention
// output and the residual sum (4 hidden-sized, 2 of the query width, 2 of
// the key/value width) and the probabilities; its MLP block the residual
// input, the norm's two, the up projection, its ReLU and square, and the
// residual sum (4 hidden-sized, 3 of the intermediate size); its moe block
// the residual input, the norm's two, the residual sum and the shared
// expert's output (5 hidden-sized), the router's logits and sigmoid scores
// in float32 (2 x experts), the latent input and output where it has one
// (2 x moe_latent_size), the shared expert's up projection, ReLU and square
// (3 x its width) and, per chosen expert, its gathered input, down output
// and weighted output (3 x its input width) and its up projection, ReLU and
// square (3 x moe_intermediate_size); its Mamba-2
// block, counted in floats as the Gated DeltaNet's (I = heads x head_dim,
// D the conv's channels I + 2 x n_groups x ssm_state, N = ssm_state,
// H the heads, C the chunk), what autograd keeps of cgo/mamba2.cpp's
// forward (views of one tensor counted once): 4 hidden-sized; in_proj's
// output (I + D + H, kept whole by the views of z and dt); the conv's
// output and its masked SiLU (2 x D); B and C repeated to the heads and C
// decayed (3 x H x N); 7 x I (x times dt, x decayed to the chunk's end,
// the output with D's skip, the gate's SiLU, the gated product, its
// normalised value and the weighted norm); 4 x H (dt plus its bias, its
// softplus, the decays to the chunk's end and from its start); 3 x H x C
// (a row of the chunk's pairwise decays, of C.B and of their product);
// and the state entering each chunk, H x head_dim x N per C tokens.
//
// A Gemma 4 layer keeps what gemmaLayer says (its own head size and
// key/value heads, a kv-shared layer no keys or values, a double-wide
// MLP, the per-layer input's gate, the MoE block beside the MLP where it
// has one: gemmaMoE), and the per-layer inputs are made once
// for all layers: their projection, its norm's and the inputs themselves
// (2 x layers x hidden_size_per_layer_input in the model's dtype, the
// norm's in float32).
//
// The LM head's logits whole (LogitsChunk 0) are three [tokens, vocab]
// float32 tensors at the backward's peak (the log-softmax kept by the
// forward, its gradient and the gradient of the logits). In chunks, two
// [chunk, vocab] float32 buffers at a time, the LM head's gradient [vocab,
// hidden] before it is added to the parameter's (when HeadGrad), and the
// hidden states' gradient [tokens, hidden]. Gemma 4's capped logits
// (final_logit_softcapping) are whole whatever LogitsChunk (the chunks'
// backward knows no cap): four [tokens, vocab] float32 tensors, tanh's
// output kept besides.
func Activations(c torch.Config, w Workload) int64 {
	tok := int64(w.Micro) * int64(w.Seq)
	h, v, b := int64(c.Hidden), int64(c.Vocab), w.Bytes
	kv := int64(c.KVHeads) * int64(c.HeadDim)
	// Written out, a row of probabilities per head: softmax's float32
	// output, and its copy in the model's dtype when that is narrower.
	attention := int64(c.Heads) * int64(w.Seq) * 4
	if b < 4 {
		attention += int64(c.Heads) * int64(w.Seq) * b
	}
	if w.SDPA {
		attention = int64(c.Heads) * 4 // a float32 log-sum-exp per head
	}
	layer := func(i int) int64 { // the bytes layer i keeps
		if c.IsGemma4() {
			return gemmaLayer(c, w, i, attention)
		}
		if c.IsNemotron() {
			return nemotronLayer(c, w, c.Nemotron.Blocks[i], attention)
		}
		mlp := 4 * int64(c.Intermediate)
		if c.SparseLayer(i) {
			k := int64(c.MoE.ExpertsPerToken)
			mlp = 4*k*int64(c.MoE.Intermediate) + 2*k*h + 2*int64(c.MoE.Experts)
			if s := int64(c.MoE.SharedIntermediate); s > 0 { // the shared expert's MLP, output and gate
				mlp += 4*s + h + 2
			}
		}
		if linearLayer(c, i) {
			const chunk = 64
			vh := int64(c.LinearValueHeads)
			q, wv := vh*int64(c.LinearKeyDim), vh*int64(c.LinearValueDim)
			d := 2*int64(c.LinearKeyHeads*c.LinearKeyDim) + wv
			state := vh * int64(c.LinearKeyDim) * int64(c.LinearValueDim)
			chunks := int64(w.Micro) * ((int64(w.Seq) + chunk - 1) / chunk)
			return (tok*(6*h+3*d+4*vh+10*q+11*wv+7*vh*chunk+mlp) + chunks*state) * 4
		}
		gate := int64(0)
		if c.LayerTypes != nil { // Qwen3.5's attention layers are gated
			gate = 3 * int64(c.Heads) * int64(c.HeadDim)
		}
		return tok * ((10*h+6*kv+gate+mlp)*b + attention)
	}
	var all, largest int64
	for i := range c.Layers {
		all += layer(i)
		largest = max(largest, layer(i))
	}
	layers := all + largest
	if w.Checkpointing {
		layers = int64(c.Layers)*tok*h*b + 2*largest
	}
	if w.SDPA && c.KVHeads > 0 {
		layers += int64(w.Micro) * int64(c.Heads/c.KVHeads) * int64(w.Seq) * ((int64(w.Seq) + 7) / 8 * 8) * b
	}
	if g := c.Gemma; g != nil && g.PerLayerDim > 0 { // the per-layer inputs, made once for every layer
		lp := int64(c.Layers) * int64(g.PerLayerDim)
		layers += tok * (2*lp*b + gemmaNorm(lp, b))
	}
	logits := 3 * tok * v * 4
	if c.Gemma != nil && c.Gemma.FinalSoftcap > 0 { // capped: whole, and tanh's output kept too
		return layers + 4*tok*v*4
	}
	if w.LogitsChunk > 0 {
		logits = 2*min(int64(w.LogitsChunk), tok)*v*4 + tok*h*b
		if w.HeadGrad {
			logits += v * h * b
		}
	}
	return layers + logits
}

// nemotronLayer is the bytes a Nemotron-H layer of the block kind keeps
// (Activations says what), attention the per-token bytes of its
// attention probabilities.
func nemotronLayer(c torch.Config, w Workload, block string, attention int64) int64 {
	tok, h, b := int64(w.Micro)*int64(w.Seq), int64(c.Hidden), w.Bytes
	switch block {
	case torch.AttentionBlock:
		q, kv := int64(c.Heads)*int64(c.HeadDim), int64(c.KVHeads)*int64(c.HeadDim)
		return tok * ((4*h+2*q+2*kv)*b + attention)
	case torch.MLPBlock:
		return tok * (4*h + 3*int64(c.Intermediate)) * b
	case torch.MoEBlock:
		m := c.MoE
		in, lat := h, int64(0)
		if m.Latent > 0 {
			in, lat = int64(m.Latent), 2*int64(m.Latent)
		}
		k, inter, shared := int64(m.ExpertsPerToken), int64(m.Intermediate), int64(m.SharedIntermediate)
		return tok * ((5*h+3*shared+lat+k*(3*inter+3*in))*b + 2*int64(m.Experts)*4)
	}
	n := c.Nemotron
	heads, state, chunk := int64(n.Heads), int64(n.State), int64(n.Chunk)
	inner := heads * int64(n.HeadDim)
	d := inner + 2*int64(n.Groups)*state
	chunks := int64(w.Micro) * ((int64(w.Seq) + chunk - 1) / chunk)
	return (tok*(4*h+inner+d+heads+2*d+3*heads*state+7*inner+4*heads+3*heads*min(chunk, int64(w.Seq))) + chunks*inner*state) * 4
}

// gemmaNorm is the bytes per token a Gemma 4 RMSNorm of width n keeps
// (cgo/gemma4.cpp's gemma_norm, in float32 whatever the model's dtype):
// its normalised value, and its input's float32 copy where the model's
// dtype b is narrower. Its input and output are counted where they are
// made and read.
func gemmaNorm(n, b int64) int64 {
	if b < 4 {
		return 2 * n * 4
	}
	return n * 4
}

// gemmaLayer is the bytes Gemma 4's layer i keeps (cgo/layer.cpp's
// attention_block and Gemma 4 branch of decoder_layer, cgo/gemma4.cpp),
// attention the per-token bytes of its attention probabilities. Per
// token, in the model's dtype: 6 hidden-sized (the layer's input, the
// input norm's output, the o projection, the residual sum, the
// pre-feedforward norm's output, the down projection) and four norms'
// (gemmaNorm) over the hidden size (input, post-attention,
// pre-feedforward, post-feedforward); of the layer's query width (heads x
// its head size: a full layer's is global_head_dim) the q projection, the
// roped queries' grouped copy and the attention output, and q_norm's; of
// its key/value width (its key/value heads x head size), where the layer
// has keys and values of its own (a kv-shared layer reads another's), the
// k projection and the roped keys, the v projection (none where
// attention_k_eq_v makes a full layer's values its keys' projection) and
// v's unweighted norm's output where it is cast narrower, and the two
// norms'; 4 of its MLP's width (gate, its GELU, up, their product;
// twice intermediate_size in a kv-shared layer under
// use_double_wide_mlp); with per-layer inputs, 2 hidden-sized more (the
// sum the per-layer gate reads, its projection) and its norm's, and 3 of
// the per-layer width (the gate, its GELU, their product with the layer's
// input).
func gemmaLayer(c torch.Config, w Workload, i int, attention int64) int64 {
	g, b := c.Gemma, w.Bytes
	tok, h := int64(w.Micro)*int64(w.Seq), int64(c.Hidden)
	heads, hd, inter := int64(c.KVHeads), int64(c.HeadDim), int64(c.Intermediate)
	full := c.LayerTypes[i] != torch.SlidingAttention
	if full {
		heads, hd = int64(g.GlobalKVHeads), int64(g.GlobalHeadDim)
	}
	shared := i >= c.Layers-g.KVSharedLayers
	if shared && g.DoubleWideMLP {
		inter *= 2
	}
	q, kv := int64(c.Heads)*hd, heads*hd
	n := (6*h+3*q+4*inter)*b + 4*gemmaNorm(h, b) + gemmaNorm(q, b)
	if !shared {
		own := int64(3)
		if full && g.KEqV {
			own = 2
		}
		if b < 4 {
			own++
		}
		n += own*kv*b + 2*gemmaNorm(kv, b)
	}
	if p := int64(g.PerLayerDim); p > 0 {
		n += (2*h+3*p)*b + gemmaNorm(h, b)
	}
	if c.SparseLayer(i) {
		n += gemmaMoE(c, b)
	}
	return tok * (n + attention)
}

// gemmaMoE is the bytes per token a Gemma 4 layer's MoE block keeps
// besides the dense layer's (cgo/moe.cpp's moe_mlp and the Gemma 4 branch
// of cgo/layer.cpp's decoder_layer), b the model dtype's bytes. In it: 4
// hidden-sized (the router's weightless norm's output, its product with
// router.scale, the experts' summed output, the sum of the two normed
// outputs that post_feedforward_layernorm reads) and, where b is narrower
// than float32, the router norm's float32 copy of its input (4 x hidden);
// the norms of pre_feedforward_layernorm_2 (the experts' input),
// post_feedforward_layernorm_1 and _2 (gemmaNorm); per chosen expert
// (top_k_experts), its gathered input and down projection (2 hidden-sized)
// and the fused gate|up product (2 x moe_intermediate_size, kept whole by
// its halves), its GELU-tanh and their product (4 of the expert width);
// the router's softmax in float32 (experts), and per chosen expert its
// weight before and after the renormalisation and as the experts' product
// reads it (3 float32), its per_expert_scale (b) and three int64 indices
// (the expert, the pairs' order, the pair's token).
func gemmaMoE(c torch.Config, b int64) int64 {
	h, m := int64(c.Hidden), c.MoE
	k, inter := int64(m.ExpertsPerToken), int64(m.Intermediate)
	n := (4*h+2*k*h+4*k*inter)*b + 3*gemmaNorm(h, b) + int64(m.Experts)*4 + k*(3*4+b+3*8)
	if b < 4 {
		n += 4 * h
	}
	return n
}
