// gemma4.cpp: Gemma 4's parts of the decoder (gemma4.h), as transformers
// 5.25's Gemma4TextModel computes them.
#include "gemma4.h"

#include <cmath>

namespace ar {

int64_t layer_head_dim(const ar_model_config &c, int64_t i) {
  return gemma_full(c, i) && c.global_head_dim > 0 ? c.global_head_dim : c.head_dim;
}

int64_t layer_kv_heads(const ar_model_config &c, int64_t i) {
  return gemma_full(c, i) && c.global_kv_heads > 0 ? c.global_kv_heads : c.kv_heads;
}

int64_t layer_intermediate(const ar_model_config &c, int64_t i) {
  return c.double_wide_mlp != 0 && i >= 0 && kv_reuse(c, i) ? 2 * c.intermediate : c.intermediate;
}

void set_layer_shape(Layer &l, const ar_model_config &c, int64_t i) {
  l.head_dim = layer_head_dim(c, i);
  l.kv_heads = layer_kv_heads(c, i);
  l.sliding = c.sliding_window > 0 && i < AR_MAX_MOE_LAYERS && c.sliding_layer[i] != 0;
  l.kv_reuse = kv_reuse(c, i);
  // The last layer of each type before the shared ones keeps its keys and
  // values (transformers' kv_sharing_modes "store").
  const int64_t first = c.layers - c.kv_shared_layers;
  l.kv_store = false;
  if (c.kv_shared_layers > 0 && i < first) {
    l.kv_store = true;
    for (int64_t j = i + 1; j < first; j++)
      if ((c.sliding_layer[j] != 0) == (c.sliding_layer[i] != 0)) l.kv_store = false;
  }
}

void check_window_config(const ar_model_config &c) {
  for (int64_t i = 0; i < c.layers && i < AR_MAX_MOE_LAYERS; i++)
    TORCH_CHECK(c.sliding_layer[i] == 0 || c.sliding_window > 0, "model config: layer ", i,
                " slides but sliding_window is ", c.sliding_window);
}

void check_gemma_config(const ar_model_config &c) {
  if (c.gemma == 0) {
    TORCH_CHECK(c.global_head_dim == 0 && c.global_kv_heads == 0 && c.k_eq_v == 0 && c.kv_shared_layers == 0 &&
                    c.double_wide_mlp == 0 && c.per_layer_dim == 0 && c.final_softcap == 0,
                "model config: Gemma 4's settings on a model that is not Gemma 4");
    return;
  }
  TORCH_CHECK(c.layers <= AR_MAX_MOE_LAYERS, "model config: Gemma 4 has at most ", AR_MAX_MOE_LAYERS, " layers");
  TORCH_CHECK(c.experts == 0 || c.norm_topk_prob != 0, "model config: Gemma 4's router divides the top-k by their sum");
  TORCH_CHECK(c.shared_expert_intermediate == 0, "model config: Gemma 4's MoE block has no shared expert");
  TORCH_CHECK(c.global_head_dim > 0 && c.global_head_dim % 2 == 0 && c.global_head_dim <= AR_MAX_HEAD_DIM,
              "model config: the full layers' head_dim must be positive, even and at most ", AR_MAX_HEAD_DIM, ", got ",
              c.global_head_dim);
  TORCH_CHECK(c.global_kv_heads > 0 && c.heads % c.global_kv_heads == 0, "model config: num_attention_heads (", c.heads,
              ") must be a positive multiple of the full layers' key/value heads (", c.global_kv_heads, ")");
  TORCH_CHECK(c.kv_shared_layers >= 0 && c.kv_shared_layers < c.layers,
              "model config: num_kv_shared_layers must be in 0..num_hidden_layers-1, got ", c.kv_shared_layers);
  TORCH_CHECK(c.per_layer_dim >= 0 && (c.per_layer_dim == 0 || c.per_layer_vocab > 0),
              "model config: the per-layer inputs' sizes must be positive");
  TORCH_CHECK(c.final_softcap >= 0 && std::isfinite(c.final_softcap), "model config: final_logit_softcapping must be positive");
  for (int64_t j = 0; j < c.global_head_dim / 2; j++)
    TORCH_CHECK(c.global_rope_inv_freq[j] >= 0 && std::isfinite(c.global_rope_inv_freq[j]),
                "model config: full-attention RoPE inverse frequency ", j, " must be finite and not negative");
  // Every type a shared layer has, an earlier unshared layer has.
  const int64_t first = c.layers - c.kv_shared_layers;
  for (int64_t i = first; i < c.layers; i++) {
    bool found = false;
    for (int64_t j = 0; j < first && !found; j++) found = (c.sliding_layer[j] != 0) == (c.sliding_layer[i] != 0);
    TORCH_CHECK(found, "model config: kv-shared layer ", i, " has no earlier layer of its type to read keys and values from");
  }
}

at::Tensor gemma_norm(const at::Tensor &x, const at::Tensor &w, double eps) {
  const at::ScalarType ct = acc_type(x.scalar_type());
  at::Tensor xf = x.to(ct);
  at::Tensor y = xf * at::pow(xf.pow(2).mean(-1, true) + eps, -0.5);
  if (w.defined()) y = y * w.to(ct);
  return y.to(x.scalar_type());
}

at::Tensor sliding_mask(const at::Tensor &mask, const at::Tensor &qpos, const at::Tensor &kpos, int64_t window) {
  at::Tensor far = (qpos.unsqueeze(2) - kpos.unsqueeze(1)) >= window;  // [B,T,L]
  at::Tensor out = mask.masked_fill(far.view(mask.sizes()), -std::numeric_limits<float>::infinity());
  // A padding query of a right-padded row (full_mask lets no query attend
  // a padding key, its own included) at window or more past the row's last
  // real token is left with no key: its softmax over -inf alone is NaN, and
  // the NaN reaches every real query of the row through the next layer's
  // attention (a zero probability times a NaN value). Such a query attends
  // its own key instead; its output is never read, and every query with a
  // key keeps its mask.
  if (far.size(1) == far.size(2)) {
    at::Tensor none = (out == 0).any(-1, true).logical_not();  // [B,1,1,T,1]
    out.masked_fill_(none & at::eye(far.size(1), far.options()), 0);
  }
  return out;
}

GemmaInputs gemma_inputs(const ar_model_s &m, const at::Tensor &ids, const at::Tensor &embedded) {
  const auto &c = m.cfg;
  GemmaInputs in;
  in.x = embedded * at::scalar_tensor(std::sqrt(static_cast<double>(c.hidden)), embedded.options());
  if (c.per_layer_dim == 0) return in;
  const int64_t B = ids.size(0), T = ids.size(1), P = c.per_layer_dim;
  at::Tensor tok = (m.dev.is_meta() ? at::index(m.embed_per_layer, {ids}) : at::embedding(m.embed_per_layer, ids)) *
                   at::scalar_tensor(std::sqrt(static_cast<double>(P)), embedded.options());
  at::Tensor proj = m.project(m.per_layer_model_projection, m.per_layer_model_lora, in.x, at::Tensor()) *
                   (1.0 / std::sqrt(static_cast<double>(c.hidden)));
  proj = gemma_norm(proj.view({B, T, c.layers, P}), m.per_layer_projection_norm, c.rms_eps);
  in.per_layer = (proj + tok.view({B, T, c.layers, P})) * std::pow(2.0, -0.5);
  return in;
}

at::Tensor per_layer_block(const ar_model_s &m, const Layer &l, const at::Tensor &h, const at::Tensor &p) {
  at::Tensor g = at::gelu(m.project(l, kLoraPerLayerGate, h, at::Tensor()), "tanh") * p;
  return h + gemma_norm(m.project(l, kLoraPerLayerProj, g, at::Tensor()), l.post_per_layer_input_norm, m.cfg.rms_eps);
}

at::Tensor softcap(const at::Tensor &z, double cap) {
  if (cap == 0) return z;
  return at::tanh(z / cap) * cap;
}

}  // namespace ar
