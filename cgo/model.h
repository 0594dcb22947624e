// model.h: the decoder shared by the training forward (model.cpp) and the
// KV-cache engine (engine.cpp, decode.cpp); its layer is layer.h's. Names
// follow the Hugging Face checkpoint keys of Qwen2ForCausalLM /
// Qwen3ForCausalLM / LlamaForCausalLM one to one, and the tables below list
// every parameter once (its key, shape and slot) and the fused decode
// paths' layout once (which projections are one product).
#pragma once

#include <ATen/autocast_mode.h>

#include <atomic>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"
#include "internal.h"

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
    at::Tensor gate_proj, up_proj, down_proj;  // the dense MLP (undefined in a sparse layer)
    // A Gated DeltaNet layer's (Qwen3.5 linear_attn.*, deltanet.h), in
    // place of self_attn's; undefined in an attention layer.
    at::Tensor in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, conv1d, dt_bias, A_log, linear_norm, out_proj;
    // linear says whether the layer is a Gated DeltaNet layer.
    bool linear() const { return in_proj_qkv.defined(); }
    // A Nemotron-H Mamba-2 layer's own (mamba2.h): the input projection,
    // the conv's bias and the skip D; its conv1d, dt_bias, A_log, gated
    // norm (linear_norm) and out_proj sit in the DeltaNet's slots.
    at::Tensor in_proj, conv1d_bias, D;
    // mamba says whether the layer is a Mamba-2 layer.
    bool mamba() const { return in_proj.defined(); }
    // A sparse (mixture-of-experts) layer's MLP (moe.h): the router
    // mlp.gate [experts, hidden] and the experts mlp.experts.{e}.*, each a
    // SwiGLU MLP of width moe_intermediate (kExpertParams; a Nemotron-H
    // expert has up_proj and down_proj only, kNemotronExpertParams); an undefined
    // router and no experts in a dense layer.
    struct Expert {
      at::Tensor gate_proj, up_proj, down_proj;
    };
    at::Tensor router;
    std::vector<Expert> experts;
    // A sparse layer's shared expert (Qwen3.5 MoE: mlp.shared_expert.*, a
    // SwiGLU MLP of width shared_expert_intermediate) and its gate
    // mlp.shared_expert_gate [1, hidden]; undefined where the config has none.
    at::Tensor shared_gate_proj, shared_up_proj, shared_down_proj, shared_expert_gate;
    // A Nemotron-H moe block's (mamba2.h): the router's score correction
    // (a buffer: no gradient) and the latent projections around the
    // experts, undefined without moe_latent_size.
    at::Tensor e_score_bias, fc1_latent, fc2_latent;
    // The LoRA adapters of each target (ar::LoraTarget), undefined where
    // the layer has none (every plain model): a [r, in] and b [out, r].
    struct Adapter {
      at::Tensor a, b;
    };
    Adapter lora[AR_LORA_TARGETS];
    // Gemma 4's (gemma4.h): the MLP's sandwich norms, the per-layer
    // input's gate, projection and norm, and the output's scalar (a
    // buffer transformers saves; no gradient).
    at::Tensor pre_feedforward_layernorm, post_feedforward_layernorm;
    at::Tensor per_layer_input_gate, per_layer_projection, post_per_layer_input_norm, layer_scalar;
    // A Gemma 4 MoE layer's (enable_moe_block, moe.h), beside its dense
    // MLP: the router's proj (in the router slot), scale and
    // per_expert_scale; the experts fused as the checkpoint holds them,
    // experts.gate_up_proj [experts, 2 moe_intermediate, hidden] (each
    // expert's gate rows, then its up rows) and experts.down_proj
    // [experts, hidden, moe_intermediate]; the norms before the experts
    // and after the dense MLP and the experts.
    at::Tensor router_scale, per_expert_scale, experts_gate_up, experts_down;
    at::Tensor pre_feedforward_layernorm_2, post_feedforward_layernorm_1, post_feedforward_layernorm_2;
    // The layer's attention shape (set_layer_shape): its head size and
    // key/value heads, whether it is a sliding-window layer, and whether it
    // keeps its keys and values for later layers (kv_store) or reads an
    // earlier layer's (kv_reuse: it has no k_proj, v_proj).
    int64_t head_dim = 0, kv_heads = 0;
    bool sliding = false, kv_store = false, kv_reuse = false;
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
  at::Tensor inv_freq;  // [rotary_dim/2] float32: cfg.rope_inv_freq (the angle per position)
  // Gemma 4's: the full layers' RoPE [global_head_dim/2] (cfg.global_rope_inv_freq)
  // and the per-layer inputs' table, projection and norm (undefined elsewhere).
  at::Tensor global_inv_freq, embed_per_layer, per_layer_model_projection, per_layer_projection_norm;
  // A LoRA model's adapter on per_layer_model_projection (the model's one
  // target, AR_LORA_PER_LAYER_MODEL_PROJECTION), undefined elsewhere.
  Layer::Adapter per_layer_model_lora;
  bool checkpointing = false;  // recompute layer activations in the backward pass
  // Tokens per chunk of the logits in the training forward (token_logprobs);
  // 0 computes the whole [B,T-1,V] logits at once.
  int64_t logits_chunk = kDefaultLogitsChunk;
  // Mixed precision: the forward runs under autocast to this dtype (matmuls
  // in it, reductions in float32) while weights stay in dtype; Undefined is off.
  at::ScalarType autocast = at::ScalarType::Undefined;
  Lora lora;
  // How attention runs (AR_ATTENTION_*, internal.h): libtorch's
  // scaled_dot_product_attention on CUDA, or everywhere (tests), or never.
  int attention_mode = AR_ATTENTION_AUTO;
  // The at::SDPBackend the last scaled_dot_product_attention call chose
  // (-1: none yet), for ar_model_sdpa_backend.
  mutable std::atomic<int> sdpa_backend{-1};

  // attention_mask turns the additive mask [B,1,1,T,L] of a forward into
  // the one attend takes: unchanged, or, where attention runs libtorch's
  // scaled_dot_product_attention, the bias of the grouped layout (see
  // attend) [B,1,g*T,L] in the dtype attention computes in (autocast's on
  // this thread, else the model's), its rows padded to a multiple of 8
  // elements so that the memory-efficient kernel takes it without a copy.
  // Made once per forward and shared by every layer: a kernel that keeps
  // its bias for the backward then keeps one, not one per layer.
  at::Tensor attention_mask(const at::Tensor &mask) const;
  // Rotary tables for positions [B,T] -> cos, sin [B,1,T,head_dim] in dtype,
  // each times cfg.rope_attention_factor.
  std::pair<at::Tensor, at::Tensor> rope(const at::Tensor &positions) const { return rope(positions, inv_freq); }
  // rope with the inverse frequencies freq (Gemma 4's full layers' own).
  std::pair<at::Tensor, at::Tensor> rope(const at::Tensor &positions, const at::Tensor &freq) const;
  // attend is attention before the output projection: queries q
  // [B,heads,T,hd] read keys and values k, v [B,kv,L,hd], masked by
  // attention_mask's result for the additive mask [B,1,1,T,L]; the result
  // is [B,T,heads*hd].
  at::Tensor attend(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const at::Tensor &mask) const;
  // project is target's projection of x (weight W of kLoraSites, bias b,
  // undefined where none) plus, on a LoRA model, its adapter's update.
  at::Tensor project(const Layer &l, int target, const at::Tensor &x, const at::Tensor &b) const;
  // project of x by weight w with adapter ad (undefined: none).
  at::Tensor project(const at::Tensor &w, const Layer::Adapter &ad, const at::Tensor &x, const at::Tensor &b) const;
  at::Tensor logits(const at::Tensor &h) const;
  // rotary_dim is the leading dimensions of a head RoPE rotates.
  int64_t rotary_dim() const { return cfg.rotary_dim > 0 ? cfg.rotary_dim : cfg.head_dim; }
  // hybrid says whether some layer is a Gated DeltaNet layer.
  bool hybrid() const;
};

namespace ar {

using Layer = ar_model_s::Layer;

// Fused holds the fused decode path's copies of a layer's weights
// (engine.cpp): each Group's weights (and biases) concatenated by rows, in
// the order of its parts, so that the group is one product.
struct Fused {
  at::Tensor qkv_w, qkv_b, gate_up;
};

// Dim is a size of the config that parameter shapes are made of: kQ and
// kKV are the widths of the query and of the key/value projections
// (heads * head_dim, kv_heads * head_dim).
// kExperts and kMoeInter are a sparse layer's expert count and expert
// width, kSharedInter its shared expert's width.
// kQProj is q_proj's rows (kQ, twice that with the attention output
// gate). The Gated DeltaNet sizes: kLinQKV the conv channels (q|k|v:
// 2 k_heads*k_dim + v_heads*v_dim), kLinV v_heads*v_dim, kLinHeads
// v_heads, kLinVDim v_dim, kConvTaps two sizes, [1, kernel] (the
// depthwise conv's weight is [channels, 1, kernel]).
// kQ, kKV, kHeadDim and kInter are the layer's (Gemma 4's full layers
// have their own head size and key/value heads, its kv-shared layers may
// have twice as wide an MLP). kPLEVocab, kPLEAll and kPLE are Gemma 4's
// per-layer inputs: the table's rows, layers * per_layer_dim, and
// per_layer_dim. kMoeGateUp and kMoeDown are two sizes each, a Gemma 4
// expert's fused gate|up [2 moe_intermediate, hidden] and down [hidden,
// moe_intermediate]. The Mamba-2 sizes (mamba2.h): kMambaProj in_proj's rows,
// kMambaConv the conv channels, kMambaInner heads*head_dim, kMambaHeads,
// kMambaTaps [1, kernel].
enum Dim { kNone, kOne, kVocab, kHidden, kInter, kQ, kKV, kHeadDim, kExperts, kMoeInter, kSharedInter,
           kQProj, kLinQKV, kLinV, kLinHeads, kLinVDim, kConvTaps, kPLEVocab, kPLEAll, kPLE, kMambaProj, kMambaConv,
           kMambaInner, kMambaHeads, kMambaTaps, kMoeIn, kMoeLatent, kMoeGateUp, kMoeDown };

// When says which configs (and, for kDenseMLP and kSparseMLP, kAttn and
// kLinear, which of their layers) have a parameter: kAttn an attention
// layer's, kLinear a Gated DeltaNet layer's (Qwen3.5), kSharedExpert a
// sparse layer's with a shared expert (Qwen3.5 MoE). kOwnK and kKNorm: an
// attention layer that computes its keys (not a Gemma 4 kv-shared one);
// kOwnV: that also has a v_proj (not a Gemma 4 k_eq_v full layer); kGemma
// Gemma 4's layers, kPerLayer its per-layer inputs. The Nemotron-H
// blocks' (mamba2.h): kMambaBlock, kMambaConvBias (with use_conv_bias),
// kAttnBlock, kMLPBlock, kMoEBlock and kMoELatent (a moe block with the
// latent projection). kGemmaMoE: a Gemma 4 MoE layer's router, experts
// and norms (kSparseMLP is the other families' sparse layers).
enum When { kAlways, kQKVBias, kQKNorm, kUntied, kValueHead, kDenseMLP, kSparseMLP, kAttn, kLinear, kSharedExpert,
            kOwnK, kOwnV, kKNorm, kGemma, kPerLayer, kMambaBlock, kMambaConvBias, kAttnBlock, kMLPBlock,
            kMoEBlock, kMoELatent, kGemmaMoE };

// Param is a row of a parameter table: the HF key (under model.layers.{i}.
// for a layer's), the member of Owner (the model, or a Layer) that holds
// the tensor, its shape (one or two Dims) and the configs that have it.
template <class Owner>
struct Param {
  const char *key;
  at::Tensor Owner::*slot;
  Dim shape[2];
  When when;
};

// Every parameter, in the order of HF's modules and of
// ar_model_param_names: kEmbedParams, kLayerParams for each layer, then
// kHeadParams. These tables are the one place a parameter is defined:
// creation, naming, checkpointing and the fused copies loop over them.
inline const Param<ar_model_s> kEmbedParams[] = {
    {"model.embed_tokens.weight", &ar_model_s::embed, {kVocab, kHidden}, kAlways},
    {"model.embed_tokens_per_layer.weight", &ar_model_s::embed_per_layer, {kPLEVocab, kPLEAll}, kPerLayer},
    {"model.per_layer_model_projection.weight", &ar_model_s::per_layer_model_projection, {kPLEAll, kHidden}, kPerLayer},
    {"model.per_layer_projection_norm.weight", &ar_model_s::per_layer_projection_norm, {kPLE}, kPerLayer},
};
inline const Param<Layer> kLayerParams[] = {
    // key                              slot                              shape              when
    {"input_layernorm.weight",          &Layer::input_layernorm,          {kHidden},         kAlways},
    {"self_attn.q_proj.weight",         &Layer::q_proj,                   {kQProj, kHidden}, kAttn},
    {"self_attn.q_proj.bias",           &Layer::q_bias,                   {kQ},              kQKVBias},
    {"self_attn.k_proj.weight",         &Layer::k_proj,                   {kKV, kHidden},    kOwnK},
    {"self_attn.k_proj.bias",           &Layer::k_bias,                   {kKV},             kQKVBias},
    {"self_attn.v_proj.weight",         &Layer::v_proj,                   {kKV, kHidden},    kOwnV},
    {"self_attn.v_proj.bias",           &Layer::v_bias,                   {kKV},             kQKVBias},
    {"self_attn.o_proj.weight",         &Layer::o_proj,                   {kHidden, kQ},     kAttn},
    {"self_attn.q_norm.weight",         &Layer::q_norm,                   {kHeadDim},        kQKNorm},
    {"self_attn.k_norm.weight",         &Layer::k_norm,                   {kHeadDim},        kKNorm},
    {"linear_attn.A_log",               &Layer::A_log,                    {kLinHeads},       kLinear},
    {"linear_attn.conv1d.weight",       &Layer::conv1d,                   {kLinQKV, kConvTaps}, kLinear},
    {"linear_attn.dt_bias",             &Layer::dt_bias,                  {kLinHeads},       kLinear},
    {"linear_attn.in_proj_a.weight",    &Layer::in_proj_a,                {kLinHeads, kHidden}, kLinear},
    {"linear_attn.in_proj_b.weight",    &Layer::in_proj_b,                {kLinHeads, kHidden}, kLinear},
    {"linear_attn.in_proj_qkv.weight",  &Layer::in_proj_qkv,              {kLinQKV, kHidden}, kLinear},
    {"linear_attn.in_proj_z.weight",    &Layer::in_proj_z,                {kLinV, kHidden},  kLinear},
    {"linear_attn.norm.weight",         &Layer::linear_norm,              {kLinVDim},        kLinear},
    {"linear_attn.out_proj.weight",     &Layer::out_proj,                 {kHidden, kLinV},  kLinear},
    {"post_attention_layernorm.weight", &Layer::post_attention_layernorm, {kHidden},         kAlways},
    {"mlp.gate_proj.weight",            &Layer::gate_proj,                {kInter, kHidden}, kDenseMLP},
    {"mlp.up_proj.weight",              &Layer::up_proj,                  {kInter, kHidden}, kDenseMLP},
    {"mlp.down_proj.weight",            &Layer::down_proj,                {kHidden, kInter}, kDenseMLP},
    {"mlp.gate.weight",                 &Layer::router,                   {kExperts, kHidden}, kSparseMLP},
    {"mlp.shared_expert.gate_proj.weight", &Layer::shared_gate_proj,      {kSharedInter, kHidden}, kSharedExpert},
    {"mlp.shared_expert.up_proj.weight",   &Layer::shared_up_proj,        {kSharedInter, kHidden}, kSharedExpert},
    {"mlp.shared_expert.down_proj.weight", &Layer::shared_down_proj,      {kHidden, kSharedInter}, kSharedExpert},
    {"mlp.shared_expert_gate.weight",   &Layer::shared_expert_gate,       {kOne, kHidden},   kSharedExpert},
    {"pre_feedforward_layernorm.weight",  &Layer::pre_feedforward_layernorm,  {kHidden},     kGemma},
    {"post_feedforward_layernorm.weight", &Layer::post_feedforward_layernorm, {kHidden},     kGemma},
    {"per_layer_input_gate.weight",     &Layer::per_layer_input_gate,     {kPLE, kHidden},   kPerLayer},
    {"per_layer_projection.weight",     &Layer::per_layer_projection,     {kHidden, kPLE},   kPerLayer},
    {"post_per_layer_input_norm.weight", &Layer::post_per_layer_input_norm, {kHidden},       kPerLayer},
    {"layer_scalar",                    &Layer::layer_scalar,             {kOne},            kGemma},
    {"router.proj.weight",              &Layer::router,                   {kExperts, kHidden}, kGemmaMoE},
    {"router.scale",                    &Layer::router_scale,             {kHidden},         kGemmaMoE},
    {"router.per_expert_scale",         &Layer::per_expert_scale,         {kExperts},        kGemmaMoE},
    {"experts.gate_up_proj",            &Layer::experts_gate_up,          {kExperts, kMoeGateUp}, kGemmaMoE},
    {"experts.down_proj",               &Layer::experts_down,             {kExperts, kMoeDown}, kGemmaMoE},
    {"post_feedforward_layernorm_1.weight", &Layer::post_feedforward_layernorm_1, {kHidden}, kGemmaMoE},
    {"post_feedforward_layernorm_2.weight", &Layer::post_feedforward_layernorm_2, {kHidden}, kGemmaMoE},
    {"pre_feedforward_layernorm_2.weight",  &Layer::pre_feedforward_layernorm_2,  {kHidden}, kGemmaMoE},
};
// Each expert's parameters, under model.layers.{i}.mlp.experts.{e}. (the
// keys transformers saves and published checkpoints hold), after the
// layer's own in the order of the parameters: expert 0's three, then
// expert 1's, ...
inline const Param<Layer::Expert> kExpertParams[] = {
    {"gate_proj.weight", &Layer::Expert::gate_proj, {kMoeInter, kHidden}, kAlways},
    {"up_proj.weight",   &Layer::Expert::up_proj,   {kMoeInter, kHidden}, kAlways},
    {"down_proj.weight", &Layer::Expert::down_proj, {kHidden, kMoeInter}, kAlways},
};
// expert_prefix is the key prefix of expert e of layer i's parameters.
inline std::string expert_prefix(size_t i, size_t e) {
  return "model.layers." + std::to_string(i) + ".mlp.experts." + std::to_string(e) + ".";
}
inline const Param<ar_model_s> kHeadParams[] = {
    {"model.norm.weight",                   &ar_model_s::norm,     {kHidden},         kAlways},
    {"lm_head.weight",                      &ar_model_s::lm_head,  {kVocab, kHidden}, kUntied},
    {AR_VALUE_HEAD_PREFIX "summary.weight", &ar_model_s::v_head_w, {kOne, kHidden},   kValueHead},
    {AR_VALUE_HEAD_PREFIX "summary.bias",   &ar_model_s::v_head_b, {kOne},            kValueHead},
};

// LoraTarget indexes a layer's adapters, in the order of the AR_LORA_*
// bits and of kLayerParams.
enum LoraTarget { kLoraQ, kLoraK, kLoraV, kLoraO, kLoraInQKV, kLoraInZ, kLoraInB, kLoraInA, kLoraOut,
                  kLoraGate, kLoraUp, kLoraDown, kLoraInProj, kLoraPerLayerGate, kLoraPerLayerProj };

// LoraSite is where a target's adapter sits: the module's key under
// model.layers.{i}. (PEFT names the adapters after it) and the base weight
// [out, in] it adapts (undefined in a layer without the projection: a
// Gated DeltaNet layer has no self_attn, an attention layer no
// linear_attn).
struct LoraSite {
  const char *module;
  at::Tensor Layer::*weight;
};
inline const LoraSite kLoraSites[AR_LORA_TARGETS] = {
    {"self_attn.q_proj", &Layer::q_proj}, {"self_attn.k_proj", &Layer::k_proj},
    {"self_attn.v_proj", &Layer::v_proj}, {"self_attn.o_proj", &Layer::o_proj},
    {"linear_attn.in_proj_qkv", &Layer::in_proj_qkv}, {"linear_attn.in_proj_z", &Layer::in_proj_z},
    {"linear_attn.in_proj_b", &Layer::in_proj_b}, {"linear_attn.in_proj_a", &Layer::in_proj_a},
    {"linear_attn.out_proj", &Layer::out_proj},
    {"mlp.gate_proj", &Layer::gate_proj}, {"mlp.up_proj", &Layer::up_proj},
    {"mlp.down_proj", &Layer::down_proj}, {"mixer.in_proj", &Layer::in_proj},
    {"per_layer_input_gate", &Layer::per_layer_input_gate}, {"per_layer_projection", &Layer::per_layer_projection},
};

// lora_target_name is target t's module name without its block
// (q_proj, per_layer_input_gate).
inline const char *lora_target_name(int t) {
  const char *module = kLoraSites[t].module;
  const char *dot = std::strrchr(module, '.');
  return dot != nullptr ? dot + 1 : module;
}

// lora_module is target t's module under model.layers.{i}. in a model of
// config c: kLoraSites' own, a Nemotron-H block's mixer.<name> (its q_proj,
// out_proj, up_proj ... sit under mixer).
inline std::string lora_module(const ar_model_config &c, int t) {
  const char *module = kLoraSites[t].module;
  if (c.nemotron == 0) return module;
  return std::string("mixer.") + lora_target_name(t);
}

// Group is the projections of one input that the fused decode paths
// compute as one product: q|k|v, and gate|up. Its parts, in the order of
// their output columns, are LoRA targets (kLoraSites gives each one's
// weight) with their bias (null: none); w and b are where Fused holds the
// parts' weights and biases concatenated by rows (b null: no bias). These
// two rows are the one definition of the fused layout: the fused copies
// (engine.cpp), the split of their products (decoder_layer, layer.cpp) and
// the hand-written step's products (decode.cpp) read them.
//
// order is the order a forward on the model's own tensors computes the
// parts in, one product each. It is part of the numbers: a LoRA model's
// dropout draws the parts' masks in it, and the backward sums their
// gradients into the shared input in an order it sets (with more than two
// terms, rounding depends on the order). gate|up runs up first, as the
// forward always has.
struct Group {
  struct Part {
    LoraTarget target;
    at::Tensor Layer::*bias_slot;
    const at::Tensor &weight(const Layer &l) const { return l.*kLoraSites[target].weight; }
    // bias is the part's bias tensor in l (undefined where the config has
    // none), or null for a part that never has one.
    const at::Tensor *bias(const Layer &l) const { return bias_slot != nullptr ? &(l.*bias_slot) : nullptr; }
  };
  Part parts[3];
  int n;  // parts used
  at::Tensor Fused::*w, Fused::*b;
  int order[3];  // the first n: a permutation of 0..n-1
};
inline const Group kQKV = {{{kLoraQ, &Layer::q_bias}, {kLoraK, &Layer::k_bias}, {kLoraV, &Layer::v_bias}}, 3,
                           &Fused::qkv_w, &Fused::qkv_b, {0, 1, 2}};
inline const Group kGateUp = {{{kLoraGate, nullptr}, {kLoraUp, nullptr}}, 2, &Fused::gate_up, nullptr, {1, 0}};
inline const Group *const kGroups[] = {&kQKV, &kGateUp};

// merged_weight is W + scale B A for the adapter ad over W, in float32
// (float64 over an f64 W) and rounded once to W's dtype: the decode
// model's weights and, without grad, a LoRA forward's (model.cpp).
at::Tensor merged_weight(const at::Tensor &w, const ar_model_s::Layer::Adapter &ad, double scale);

// acc_type is the dtype norms, attention scores, logits and the forward's
// outputs are computed in for tensors of dtype t: float32, or float64 for
// a float64 model (which so computes in float64 throughout: the reference
// of precision tests).
inline at::ScalarType acc_type(at::ScalarType t) { return at::promote_types(at::kFloat, t); }

// sparse says whether layer i of config c is a mixture-of-experts layer.
inline bool sparse(const ar_model_config &c, int64_t i) { return c.experts > 0 && c.moe_layer[i] != 0; }
// linear_layer says whether layer i of config c is a Gated DeltaNet layer.
inline bool linear_layer(const ar_model_config &c, int64_t i) { return c.linear_layer[i] != 0; }
// block is layer i's Nemotron-H block kind (AR_BLOCK_*), 0 in the other families.
inline int block(const ar_model_config &c, int64_t i) { return c.nemotron != 0 ? c.block[i] : 0; }
// has says whether config c has the parameters of rows marked w: in layer
// `layer` for a layer's rows (kDenseMLP, kSparseMLP), -1 for the others.
bool has(When w, const ar_model_config &c, int64_t layer = -1);
// shape is a row's shape for config c, in layer `layer` for a layer's
// rows (-1 for the others).
std::vector<int64_t> shape(const Dim (&dims)[2], const ar_model_config &c, int64_t layer = -1);
// set_layer_shape sets layer i's attention shape (Layer::head_dim, ...)
// from config c (gemma4.cpp).
void set_layer_shape(Layer &l, const ar_model_config &c, int64_t i);

// linear is x [.., in] times w [out, in]^T, plus b where defined.
at::Tensor linear(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b);

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
