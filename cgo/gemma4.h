// gemma4.h: what Gemma 4's text model (transformers' Gemma4TextModel)
// adds to the one decoder (model.h, layer.h): its layers' shapes (full
// layers with their own head size and key/value heads, kv-shared layers),
// sliding-window masks, its scaled embeddings and per-layer inputs, its
// norms and the per-layer input block of each layer.
#pragma once

#include "model.h"

namespace ar {

// kv_reuse says whether layer i of c reads an earlier layer's keys and
// values (Gemma 4's last num_kv_shared_layers layers).
inline bool kv_reuse(const ar_model_config &c, int64_t i) {
  return c.kv_shared_layers > 0 && i >= c.layers - c.kv_shared_layers;
}
// gemma_full says whether layer i of c is a Gemma 4 full-attention layer.
inline bool gemma_full(const ar_model_config &c, int64_t i) {
  return c.gemma != 0 && i >= 0 && c.sliding_layer[i] == 0;
}
// layer_head_dim, layer_kv_heads and layer_intermediate are layer i's
// head size, key/value heads and MLP width (i < 0: the config's).
int64_t layer_head_dim(const ar_model_config &c, int64_t i);
int64_t layer_kv_heads(const ar_model_config &c, int64_t i);
int64_t layer_intermediate(const ar_model_config &c, int64_t i);

// check_window_config refuses a sliding window that is not positive where
// a layer slides, and check_gemma_config a Gemma 4 config out of range
// (ar_model_new).
void check_window_config(const ar_model_config &c);
void check_gemma_config(const ar_model_config &c);

// gemma_norm is Gemma4RMSNorm: x / sqrt(mean(x^2) + eps) times w (none
// where w is undefined: the values' norm), in acc_type, cast back to x's
// dtype.
at::Tensor gemma_norm(const at::Tensor &x, const at::Tensor &w, double eps);

// sliding_mask is the additive mask [B,1,1,T,L] with the keys outside
// window also masked: query position p may attend key position s only
// where p - s < window, for the queries' and keys' positions qpos [B,T]
// and kpos [B,L].
at::Tensor sliding_mask(const at::Tensor &mask, const at::Tensor &qpos, const at::Tensor &kpos, int64_t window);

// GemmaInputs are a Gemma 4 forward's inputs to its layers: the embeddings
// times sqrt(hidden) [B,T,H] and, where the model has per-layer inputs,
// each layer's [B,T,layers,per_layer_dim] (undefined otherwise).
struct GemmaInputs {
  at::Tensor x, per_layer;
};
GemmaInputs gemma_inputs(const ar_model_s &m, const at::Tensor &ids, const at::Tensor &embedded);

// per_layer_block is the per-layer input's update of a layer's output h
// with its input p [B,T,per_layer_dim]: h + post_per_layer_input_norm(
// per_layer_projection(gelu_tanh(per_layer_input_gate(h)) * p)), each
// projection with its adapter on a LoRA model (ar_model_s::project).
at::Tensor per_layer_block(const ar_model_s &m, const Layer &l, const at::Tensor &h, const at::Tensor &p);

// softcap is cap * tanh(z / cap) (Gemma 4's final logits), z where cap is 0.
at::Tensor softcap(const at::Tensor &z, double cap);

}  // namespace ar
