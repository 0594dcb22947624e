// layer.h: the decoder layer, written once. The training forward
// (model.cpp), prefill and the decode steps of the engine, eager and
// captured as CUDA graphs (engine.cpp), all run decoder_layer; what differs
// between them is data: where the layer's weights are read from
// (LayerWeights: the Hugging Face tensors, or the engine's fused copies)
// and what attention reads (Attend: the forward's own tokens, or a KV
// cache the new keys and values are first written to). The hand-written
// CPU decode step (decode.cpp) computes the same layer with its own
// kernels on raw buffers, its products laid out by the same Group table.
#pragma once

#include <functional>

#include "model.h"
#include "profile.h"

namespace ar {

// rms_norm is HF's RMSNorm of x over its last dimension: computed in
// acc_type, cast back to x's dtype, then scaled by the weight w.
at::Tensor rms_norm(const at::Tensor &x, const at::Tensor &w, double eps);

// norm is m's RMSNorm of x by the weight w: rms_norm, or for a model with
// cfg.norm_offset (Qwen3.5) transformers' Qwen3_5RMSNorm, the normed x
// times 1 + w in acc_type, then cast to x's dtype.
at::Tensor norm(const ar_model_s &m, const at::Tensor &x, const at::Tensor &w);

// decode_product is x [.., in] times w [out, in]^T (+ b), as the fused
// decode path multiplies. For a decode batch on the CPU (at most 16 rows)
// it computes w x^T: with the weight as the left operand libtorch's BLAS
// streams it without first packing it for a many-row product, about twice
// as fast at 8 rows in f32. Elsewhere it is linear.
at::Tensor decode_product(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b);

// LayerWeights is where a forward reads one layer's weights, and so how it
// multiplies: with fused null, the model's own tensors, one product per
// projection (ar_model_s::project, LoRA adapters included: the training
// forward, and the engine's unfused path); otherwise the engine's fused
// copies of the layer, each Group one product split by columns, every
// product by decode_product (the fused path, eager and captured).
//
// A sparse layer's MLP is moe_mlp (moe.h) on either: its experts are the
// model's tensors. router_logits, when not null, receives its router
// logits (the load-balancing loss is computed from them); replay, where
// defined, gives the experts each token takes [N,k], and chosen, when not
// null, receives those it took (moe_mlp's routing replay).
//
// A Gemma 4 layer keeps its keys and values in *share (Layer::kv_store)
// or reads them from it (Layer::kv_reuse), and adds its per-layer input
// per_layer [B,T,P] where defined.
struct KVShare {
  at::Tensor k[2], v[2];  // by Layer::sliding
};
struct LayerWeights {
  const ar_model_s &m;
  const Layer &l;
  const Fused *fused = nullptr;
  std::vector<at::Tensor> *router_logits = nullptr;
  at::Tensor replay = at::Tensor();
  std::vector<at::Tensor> *chosen = nullptr;
  KVShare *share = nullptr;
  at::Tensor per_layer = at::Tensor();
};

// Attend is attention before the output projection: the queries q
// [B,heads,T,hd] and this layer's new keys and values k, v [B,kv,T,hd],
// positioned (q_norm, k_norm and RoPE applied), to [B,T,heads*hd].
using Attend = std::function<at::Tensor(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v)>;

// Scan is a Gated DeltaNet layer's sequence part (deltanet.h): from the
// conv's inputs mixed [B,T,C] (q|k|v before the conv), the log decays g
// and the rates beta [B,T,v_heads] (acc_type), the core output
// [B,T,v_heads,v_dim]: the causal conv and SiLU, the L2 norms and the
// gated delta rule, from and into whatever state the caller keeps. keep
// [B,T] (bool), where defined, marks the real tokens of right-padded rows:
// the layer's input is zeroed at the others, as transformers'
// apply_mask_to_padding_states does (it changes the padding's outputs only).
//
// A Mamba-2 layer's (mamba2.h) is ssd in place of run: from the conv's
// inputs xbc [B,T,C] and the raw time steps dt [B,T,heads], the scan's
// output y [B,T,heads*head_dim] (acc_type, D's skip included).
struct Scan {
  std::function<at::Tensor(const at::Tensor &mixed, const at::Tensor &g, const at::Tensor &beta)> run;
  at::Tensor keep;
  std::function<at::Tensor(const at::Tensor &xbc, const at::Tensor &dt)> ssd;
};

// decoder_layer is one Qwen2/Qwen3/Llama decoder layer over x [B,T,H],
// with the rotary tables cos, sin [B,1,T,hd] of its positions:
//   q|k|v = the projections of input_layernorm(x) (Group kQKV), each split
//           into heads; q and k RMSNorm'd per head by q_norm and k_norm
//           where the layer has them (Qwen3), then RoPE applied
//   r     = x + o_proj(attend(q, k, v))
//   out   = r + down_proj(silu(gate) * up), gate|up the projections of
//           post_attention_layernorm(r) (Group kGateUp); in a sparse
//           layer r + moe_mlp(post_attention_layernorm(r))
// With a lap, the time of the projections (RoPE with them) goes to
// products and attend's to attention, the norm before them to no phase.
// Without grad, out (when defined) receives the result.
//
// Qwen3.5's attention layers differ: the q_proj rows of each head are its
// query then a gate (cfg.attn_output_gate), the attention output is
// multiplied by sigmoid(gate) before o_proj, RoPE turns only the first
// rotary_dim dimensions of a head, and the norms are norm's (1 + w). Its
// Gated DeltaNet layers (l.linear()) run deltanet_block with scan in place
// of the attention block.
//
// Gemma 4's layers (cfg.gemma, gemma4.h) norm the attention output by
// post_attention_layernorm before the residual, and the MLP's input and
// output by pre_ and post_feedforward_layernorm (a MoE layer's output is
// post_feedforward_layernorm_1 of the MLP's plus post_feedforward_layernorm_2
// of moe_mlp's on r, before post_feedforward_layernorm); their values are RMSNorm'd
// without a weight, their scores unscaled, their MLP GELU-tanh; the
// per-layer input's block follows the MLP, and the output is multiplied by
// layer_scalar. A kv-shared layer attends with an earlier layer's keys and
// values; a k_eq_v full layer's values are its keys' projection.
//
// A Nemotron-H layer (cfg.nemotron, mamba2.h) is one block instead:
// x + mixer(input_layernorm(x)), the mixer a Mamba-2 layer (l.mamba(),
// mamba2_block with scan), attention without RoPE (cos, sin empty)
// or the MLP down_proj(relu(up)^2), its norm's weight multiplying in
// acc_type.
at::Tensor decoder_layer(const LayerWeights &w, const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin,
                         const Attend &attend, Lap *lap = nullptr, at::Tensor out = at::Tensor(),
                         const Scan *scan = nullptr);

}  // namespace ar
