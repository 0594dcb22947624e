// model.h: the decoder shared by the training forward (model.cpp) and the
// KV-cache engine (engine.cpp, decode.cpp). Names follow the Hugging Face
// checkpoint keys of Qwen2ForCausalLM / Qwen3ForCausalLM / LlamaForCausalLM
// one to one, and the tables below list every parameter once: its key,
// shape and slot.
#pragma once

#include <ATen/autocast_mode.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"

// kDefaultLogitsChunk is a model's logits chunk until set: 256 tokens keep
// a chunk of Qwen's 151,936-entry vocabulary at 156 MB in f32.
constexpr int64_t kDefaultLogitsChunk = 256;

struct ar_model_s {
  // Layer holds the parameters of one decoder layer, each named after its
  // HF key under model.layers.{i} (kLayerParams, below, gives every one its
  // key, shape and the configs that have it). A parameter the config lacks
  // is an undefined tensor.
  struct Layer {
    at::Tensor input_layernorm;
    at::Tensor q_proj, q_bias, k_proj, k_bias, v_proj, v_bias, o_proj;
    at::Tensor q_norm, k_norm;
    at::Tensor post_attention_layernorm;
    at::Tensor gate_proj, up_proj, down_proj;
    // The LoRA adapters of each target (ar::LoraTarget), undefined where
    // the layer has none (every plain model): a [r, in] and b [out, r].
    struct Adapter {
      at::Tensor a, b;
    };
    Adapter lora[AR_LORA_TARGETS];
  };

  // Lora is a LoRA model's adapter settings (rank 0: a plain model). The
  // base weights it shares are frozen (no gradient); its names/params are
  // the adapters, then the value head.
  struct Lora {
    int64_t rank = 0;
    double alpha = 0, dropout = 0, scale = 0;  // scale = alpha / rank
    int targets = 0;                           // AR_LORA_* bits
    bool on = true;                            // ar_model_set_adapters
    at::ScalarType dtype = at::kFloat;         // the adapters' (f64 over an f64 base)
  };

  ar_model_config cfg;
  at::ScalarType dtype;
  at::Device dev{at::kCPU};
  std::vector<std::string> names;                   // every parameter, in table order
  std::unordered_map<std::string, at::Tensor> params;  // by HF name
  at::Tensor embed, norm, lm_head;                  // lm_head aliases embed when tied
  at::Tensor v_head_w, v_head_b;                    // the value head (TRL's v_head.summary.*)
  std::vector<Layer> layers;
  at::Tensor inv_freq;  // [head_dim/2] float32: cfg.rope_inv_freq (the angle per position)
  bool checkpointing = false;  // recompute layer activations in the backward pass
  // Tokens per chunk of the logits in the training forward (token_logprobs);
  // 0 computes the whole [B,T-1,V] logits at once.
  int64_t logits_chunk = kDefaultLogitsChunk;
  // Mixed precision: the forward runs under autocast to this dtype (matmuls
  // in it, reductions in float32) while weights stay in dtype; Undefined is off.
  at::ScalarType autocast = at::ScalarType::Undefined;
  Lora lora;

  // Rotary tables for positions [B,T] -> cos, sin [B,1,T,head_dim] in dtype,
  // each times cfg.rope_attention_factor.
  std::pair<at::Tensor, at::Tensor> rope(const at::Tensor &positions) const;
  // One decoder layer. x [B,T,H]; attention reads keys/values [B,kv,L,hd]
  // produced by kv(), masked by the additive mask [B,1,1,T,L].
  // attend is attention before the output projection: [B,T,heads*hd].
  at::Tensor attend(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const at::Tensor &mask) const;
  at::Tensor attention(const Layer &l, const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                       const at::Tensor &mask) const;
  at::Tensor mlp(const Layer &l, const at::Tensor &x) const;
  // project is target's projection of x (weight W of kLoraSites, bias b,
  // undefined where none) plus, on a LoRA model, its adapter's update.
  at::Tensor project(const Layer &l, int target, const at::Tensor &x, const at::Tensor &b) const;
  at::Tensor logits(const at::Tensor &h) const;
};

namespace ar {

using Layer = ar_model_s::Layer;

// Fused holds the fused decode path's copies of a layer's weights
// (engine.cpp): the parameters whose table row names one of these,
// concatenated by rows in table order, so that each group is one product.
struct Fused {
  at::Tensor qkv_w, qkv_b, gate_up;
};

// Dim is a size of the config that parameter shapes are made of: kQ and
// kKV are the widths of the query and of the key/value projections
// (heads * head_dim, kv_heads * head_dim).
enum Dim { kNone, kOne, kVocab, kHidden, kInter, kQ, kKV, kHeadDim };

// When says which configs have a parameter.
enum When { kAlways, kQKVBias, kQKNorm, kUntied, kValueHead };

// Param is a row of a parameter table: the HF key (under model.layers.{i}.
// for a layer's), the member of Owner (the model, or a Layer) that holds
// the tensor, its shape (one or two Dims), the configs that have it, and
// for a weight of the engine's fused decode path the fused copy it is part of.
template <class Owner>
struct Param {
  const char *key;
  at::Tensor Owner::*slot;
  Dim shape[2];
  When when;
  at::Tensor Fused::*fused = nullptr;
};

// Every parameter, in the order of HF's modules and of
// ar_model_param_names: kEmbedParams, kLayerParams for each layer, then
// kHeadParams. These tables are the one place a parameter is defined:
// creation, naming, checkpointing and the fused copies loop over them.
inline const Param<ar_model_s> kEmbedParams[] = {
    {"model.embed_tokens.weight", &ar_model_s::embed, {kVocab, kHidden}, kAlways},
};
inline const Param<Layer> kLayerParams[] = {
    // key                              slot                              shape              when      fused copy
    {"input_layernorm.weight",          &Layer::input_layernorm,          {kHidden},         kAlways},
    {"self_attn.q_proj.weight",         &Layer::q_proj,                   {kQ, kHidden},     kAlways,  &Fused::qkv_w},
    {"self_attn.q_proj.bias",           &Layer::q_bias,                   {kQ},              kQKVBias, &Fused::qkv_b},
    {"self_attn.k_proj.weight",         &Layer::k_proj,                   {kKV, kHidden},    kAlways,  &Fused::qkv_w},
    {"self_attn.k_proj.bias",           &Layer::k_bias,                   {kKV},             kQKVBias, &Fused::qkv_b},
    {"self_attn.v_proj.weight",         &Layer::v_proj,                   {kKV, kHidden},    kAlways,  &Fused::qkv_w},
    {"self_attn.v_proj.bias",           &Layer::v_bias,                   {kKV},             kQKVBias, &Fused::qkv_b},
    {"self_attn.o_proj.weight",         &Layer::o_proj,                   {kHidden, kQ},     kAlways},
    {"self_attn.q_norm.weight",         &Layer::q_norm,                   {kHeadDim},        kQKNorm},
    {"self_attn.k_norm.weight",         &Layer::k_norm,                   {kHeadDim},        kQKNorm},
    {"post_attention_layernorm.weight", &Layer::post_attention_layernorm, {kHidden},         kAlways},
    {"mlp.gate_proj.weight",            &Layer::gate_proj,                {kInter, kHidden}, kAlways,  &Fused::gate_up},
    {"mlp.up_proj.weight",              &Layer::up_proj,                  {kInter, kHidden}, kAlways,  &Fused::gate_up},
    {"mlp.down_proj.weight",            &Layer::down_proj,                {kHidden, kInter}, kAlways},
};
inline const Param<ar_model_s> kHeadParams[] = {
    {"model.norm.weight",                   &ar_model_s::norm,     {kHidden},         kAlways},
    {"lm_head.weight",                      &ar_model_s::lm_head,  {kVocab, kHidden}, kUntied},
    {AR_VALUE_HEAD_PREFIX "summary.weight", &ar_model_s::v_head_w, {kOne, kHidden},   kValueHead},
    {AR_VALUE_HEAD_PREFIX "summary.bias",   &ar_model_s::v_head_b, {kOne},            kValueHead},
};

// LoraTarget indexes a layer's adapters, in the order of the AR_LORA_*
// bits and of kLayerParams.
enum LoraTarget { kLoraQ, kLoraK, kLoraV, kLoraO, kLoraGate, kLoraUp, kLoraDown };

// LoraSite is where a target's adapter sits: the module's key under
// model.layers.{i}. (PEFT names the adapters after it) and the base weight
// [out, in] it adapts.
struct LoraSite {
  const char *module;
  at::Tensor Layer::*weight;
};
inline const LoraSite kLoraSites[AR_LORA_TARGETS] = {
    {"self_attn.q_proj", &Layer::q_proj}, {"self_attn.k_proj", &Layer::k_proj},
    {"self_attn.v_proj", &Layer::v_proj}, {"self_attn.o_proj", &Layer::o_proj},
    {"mlp.gate_proj", &Layer::gate_proj}, {"mlp.up_proj", &Layer::up_proj},
    {"mlp.down_proj", &Layer::down_proj},
};

// merged_weight is W + scale B A for the adapter ad over W, in float32
// (float64 over an f64 W) and rounded once to W's dtype: the decode
// model's weights and, without grad, a LoRA forward's (model.cpp).
at::Tensor merged_weight(const at::Tensor &w, const ar_model_s::Layer::Adapter &ad, double scale);

// acc_type is the dtype norms, attention scores, logits and the forward's
// outputs are computed in for tensors of dtype t: float32, or float64 for
// a float64 model (which so computes in float64 throughout: the reference
// of precision tests).
inline at::ScalarType acc_type(at::ScalarType t) { return at::promote_types(at::kFloat, t); }

// has says whether config c has the parameters of rows marked w.
bool has(When w, const ar_model_config &c);
// shape is a row's shape for config c.
std::vector<int64_t> shape(const Dim (&dims)[2], const ar_model_config &c);

at::Tensor rms_norm(const at::Tensor &x, const at::Tensor &w, double eps);
at::Tensor linear(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b);
at::Tensor apply_rope(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin);
// position_qk turns the heads q [B,heads,T,hd] and k [B,kv,T,hd], as split
// from the projections, into the ones attention reads: each head
// RMSNorm'd by q_norm and k_norm when the layer has them (Qwen3), then
// RoPE applied.
void position_qk(const ar_model_s &m, const Layer &l, at::Tensor &q, at::Tensor &k, const at::Tensor &cos,
                 const at::Tensor &sin);
// Projects h [B,T,H] to q [B,heads,T,hd], k and v [B,kv,T,hd], positioned
// by position_qk.
void qkv(const ar_model_s &m, const Layer &l, const at::Tensor &h, const at::Tensor &cos, const at::Tensor &sin,
         at::Tensor &q, at::Tensor &k, at::Tensor &v);

// token_logprobs is the log-probability of each target under
// softmax(h w^T / temperature) and, when entropy, each row's entropy
// (undefined otherwise), for hidden states h [N,H], an LM head w [V,H] and
// targets [N], computed chunk rows at a time (logprobs.cpp). The logits'
// products run in autocast's dtype when it is defined, then in float32.
// With grad mode on, both results have a graph back to h and w (the
// entropy's only when entropy_grad) whose backward recomputes each chunk's
// logits instead of keeping them.
std::pair<at::Tensor, at::Tensor> token_logprobs(const at::Tensor &h, const at::Tensor &w, const at::Tensor &targets,
                                                 double temperature, int64_t chunk, bool entropy, bool entropy_grad,
                                                 at::ScalarType autocast);
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
