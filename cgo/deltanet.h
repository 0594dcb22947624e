// deltanet.h: the Gated DeltaNet layer of Qwen3.5 (Yang et al. 2024,
// arXiv:2412.06464), as transformers 5's Qwen3_5GatedDeltaNet computes it.
// Its token mixer replaces attention in the layers config.json's
// layer_types marks linear_attention:
//   q|k|v = in_proj_qkv(h), through a depthwise causal conv1d (kernel K)
//           and SiLU, split into k_heads q and k heads of k_dim and v_heads
//           v heads of v_dim (each q, k head serves v_heads/k_heads v heads)
//   q, k L2-normalised per head, q times k_dim^-1/2
//   g     = -exp(A_log) softplus(in_proj_a(h) + dt_bias)   (a log decay)
//   beta  = sigmoid(in_proj_b(h))
//   per v head a k_dim x v_dim state S, per token t:
//           S = exp(g_t) S;  S += k_t (beta_t (v_t - S^T k_t))^T;  o_t = S^T q_t
//   out   = out_proj(RMSNorm(o) * linear_norm * silu(in_proj_z(h)))
// The state runs over a sequence in transformers' chunked form (training,
// prefill: chunks of 64 tokens as matrix products) or token by token (a
// decode step); both start from a given state and return the last one.
#pragma once

#include "layer.h"

namespace ar {

// deltanet_block is the token mixer of the Gated DeltaNet layer l over its
// normed input h [B,T,H], without the residual; scan runs the sequence
// part (the conv and the recurrence) with the caller's state.
at::Tensor deltanet_block(const ar_model_s &m, const Layer &l, const at::Tensor &h, const Scan &scan);

// causal_conv is the depthwise causal conv of x [B,T,C] by w [C,1,K] and
// SiLU, in x's dtype: output t reads inputs t-K+1..t, those before the
// first from prev [B,C,K-1] (zeros where prev is undefined).
at::Tensor causal_conv(const at::Tensor &x, const at::Tensor &w, const at::Tensor &prev);

// DeltaOut is the gated delta rule's output [B,T,v_heads,v_dim] (in the
// conv output's dtype) and its last state [B,v_heads,k_dim,v_dim] (acc_type).
struct DeltaOut {
  at::Tensor out, state;
};

// delta_rule runs the rule over qkv [B,T,C] (the conv's output), g and
// beta [B,T,v_heads], from state (zeros where undefined): in the chunked
// form, or token by token.
DeltaOut delta_rule(const ar_model_s &m, const at::Tensor &qkv, const at::Tensor &g, const at::Tensor &beta,
                    const at::Tensor &state, bool chunked);

// whole_scan is the scan of layer l over whole sequences from the zero
// state (right-padded rows: the padding follows every real token; keep
// [B,T] marks the real tokens, where defined).
Scan whole_scan(const ar_model_s &m, const Layer &l, const at::Tensor &keep);

// tree_conv is causal_conv (with the bias b, where defined) over packed
// rows whose tokens form prefix trees: parents [B,T] (int64) is each
// token's parent in its row, -1 for a first token, and a token's conv
// reads its ancestors (zeros before the first).
at::Tensor tree_conv(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b, const at::Tensor &parents);

// Piece is a run of tokens s..e-1 of a packed row, each the child of the
// one before, ending where a token has a child elsewhere (a branch point):
// its recurrence continues the state after token from (the end of another
// piece), or starts from zero (from -1).
struct Piece {
  int64_t s, e, from;
};

// tree_pieces splits a packed row of T tokens, parents pb, into its
// pieces, in order (a piece comes after the one it continues).
std::vector<Piece> tree_pieces(const int64_t *pb, int64_t T, int64_t row);

// tree_scan is the scan of layer l over packed rows whose tokens form
// prefix trees (trainer/packing): parents [B,T] (int64, on the CPU) is
// each token's parent in its row, -1 for a first token. A token's conv
// reads its ancestors and its state continues its parent's, so no state
// passes between tokens of different sequences.
Scan tree_scan(const ar_model_s &m, const Layer &l, const at::Tensor &parents);

}  // namespace ar
