// model.h: the decoder shared by the training forward (model.cpp) and the
// KV-cache engine (engine.cpp). Names follow the Hugging Face checkpoint
// keys of Qwen2ForCausalLM / LlamaForCausalLM one to one.
#pragma once

#include <ATen/autocast_mode.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"

struct ar_model_s {
  struct Layer {
    at::Tensor input_layernorm;           // model.layers.{i}.input_layernorm.weight
    at::Tensor q_w, q_b, k_w, k_b, v_w, v_b;  // self_attn.{q,k,v}_proj.{weight,bias}
    at::Tensor o_w;                       // self_attn.o_proj.weight
    at::Tensor post_attention_layernorm;  // post_attention_layernorm.weight
    at::Tensor gate, up, down;            // mlp.{gate,up,down}_proj.weight
  };

  ar_model_config cfg;
  at::ScalarType dtype;
  at::Device dev{at::kCPU};
  std::vector<std::string> names;                   // every parameter, fixed order
  std::unordered_map<std::string, at::Tensor> params;  // by HF name
  at::Tensor embed, norm, lm_head;                  // lm_head aliases embed when tied
  at::Tensor v_head_w, v_head_b;                    // v_head.summary.{weight,bias} (TRL's names)
  std::vector<Layer> layers;
  at::Tensor inv_freq;  // [head_dim/2] float32: rope_theta^(-2j/head_dim)
  bool checkpointing = false;  // recompute layer activations in the backward pass
  // Mixed precision: the forward runs under autocast to this dtype (matmuls
  // in it, reductions in float32) while weights stay in dtype; Undefined is off.
  at::ScalarType autocast = at::ScalarType::Undefined;

  // Rotary tables for positions [B,T] -> cos, sin [B,1,T,head_dim] in dtype.
  std::pair<at::Tensor, at::Tensor> rope(const at::Tensor &positions) const;
  // One decoder layer. x [B,T,H]; attention reads keys/values [B,kv,L,hd]
  // produced by kv(), masked by the additive mask [B,1,1,T,L].
  // attend is attention before the output projection: [B,T,heads*hd].
  at::Tensor attend(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const at::Tensor &mask) const;
  at::Tensor attention(const Layer &l, const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                       const at::Tensor &mask) const;
  at::Tensor mlp(const Layer &l, const at::Tensor &x) const;
  at::Tensor logits(const at::Tensor &h) const;
};

namespace ar {
at::Tensor rms_norm(const at::Tensor &x, const at::Tensor &w, double eps);
at::Tensor linear(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b);
at::Tensor apply_rope(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin);
// Projects h [B,T,H] to q [B,heads,T,hd], k and v [B,kv,T,hd], RoPE applied.
void qkv(const ar_model_s &m, const ar_model_s::Layer &l, const at::Tensor &h, const at::Tensor &cos,
         const at::Tensor &sin, at::Tensor &q, at::Tensor &k, at::Tensor &v);
}  // namespace ar

// AutocastScope runs its lifetime under autocast to dtype on dev's device
// type (CUDA, or the CPU), like `with torch.autocast(device, dtype)`:
// the thread's autocast state is restored when it ends. Undefined: no-op.
class AutocastScope {
 public:
  AutocastScope(const at::Device &dev, at::ScalarType dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope &) = delete;
  AutocastScope &operator=(const AutocastScope &) = delete;

 private:
  bool on_ = false, prev_ = false;
  at::DeviceType type_ = at::kCPU;
  at::ScalarType prev_dtype_ = at::ScalarType::Undefined;
};
