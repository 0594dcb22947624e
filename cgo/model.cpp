// model.cpp: the Qwen2/Qwen3/Llama decoder and its training forward.
//
//   x = embed_tokens[ids]
//   for each layer:  x = decoder_layer(x)   (layer.h: attention block, then MLP block)
//   logits = lm_head(norm(x))
// with RMSNorm as in HF (computed in float32, cast back, then scaled by the
// weight) and grouped-query attention where query head h reads kv head
// h / (heads / kv_heads).
#include "model.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstring>

#include "internal.h"
#include "deltanet.h"
#include "gemma4.h"
#include "layer.h"
#include "mamba2.h"
#include "moe.h"

using namespace ar;

namespace ar {

at::Tensor linear(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b) {
  return at::linear(x, w, b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt);
}

bool has(When w, const ar_model_config &c, int64_t layer) {
  switch (w) {
    case kDenseMLP: return layer < 0 || !sparse(c, layer) || c.gemma != 0;  // (a Gemma 4 MoE layer keeps its MLP)
    case kSparseMLP: return layer >= 0 && sparse(c, layer) && c.gemma == 0;
    case kGemmaMoE: return layer >= 0 && sparse(c, layer) && c.gemma != 0;
    case kSharedExpert: return layer >= 0 && sparse(c, layer) && c.shared_expert_intermediate > 0;
    case kAttn: return layer < 0 || !linear_layer(c, layer);
    case kLinear: return layer >= 0 && linear_layer(c, layer);
    case kAlways: return true;
    case kQKVBias: return c.qkv_bias != 0 && (layer < 0 || !linear_layer(c, layer));
    case kQKNorm: return c.qk_norm != 0 && (layer < 0 || !linear_layer(c, layer));
    case kUntied: return c.tie_embeddings == 0;
    case kValueHead: return c.value_head != 0;
    case kOwnK: return has(kAttn, c, layer) && (layer < 0 || !kv_reuse(c, layer));
    case kOwnV: return has(kOwnK, c, layer) && !(c.k_eq_v != 0 && gemma_full(c, layer));
    case kKNorm: return has(kQKNorm, c, layer) && (layer < 0 || !kv_reuse(c, layer));
    case kGemma: return c.gemma != 0;
    case kPerLayer: return c.per_layer_dim > 0;
    case kMambaBlock: return layer >= 0 && block(c, layer) == AR_BLOCK_MAMBA;
    case kMambaConvBias: return layer >= 0 && block(c, layer) == AR_BLOCK_MAMBA && c.mamba_conv_bias != 0;
    case kAttnBlock: return layer >= 0 && block(c, layer) == AR_BLOCK_ATTENTION;
    case kMLPBlock: return layer >= 0 && block(c, layer) == AR_BLOCK_MLP;
    case kMoEBlock: return layer >= 0 && block(c, layer) == AR_BLOCK_MOE;
    case kMoELatent: return layer >= 0 && block(c, layer) == AR_BLOCK_MOE && c.moe_latent > 0;
  }
  return false;
}

std::vector<int64_t> shape(const Dim (&dims)[2], const ar_model_config &c, int64_t layer) {
  std::vector<int64_t> out;
  const int64_t hd = layer_head_dim(c, layer);
  for (Dim d : dims) {
    switch (d) {
      case kNone: break;
      case kOne: out.push_back(1); break;
      case kVocab: out.push_back(c.vocab); break;
      case kHidden: out.push_back(c.hidden); break;
      case kInter: out.push_back(layer_intermediate(c, layer)); break;
      case kQ: out.push_back(c.heads * hd); break;
      case kKV: out.push_back(layer_kv_heads(c, layer) * hd); break;
      case kHeadDim: out.push_back(hd); break;
      case kPLEVocab: out.push_back(c.per_layer_vocab); break;
      case kPLEAll: out.push_back(c.layers * c.per_layer_dim); break;
      case kPLE: out.push_back(c.per_layer_dim); break;
      case kExperts: out.push_back(c.experts); break;
      case kMoeInter: out.push_back(c.moe_intermediate); break;
      case kSharedInter: out.push_back(c.shared_expert_intermediate); break;
      case kQProj: out.push_back(c.heads * hd * (c.attn_output_gate != 0 ? 2 : 1)); break;
      case kLinQKV: out.push_back(2 * c.linear_k_heads * c.linear_k_dim + c.linear_v_heads * c.linear_v_dim); break;
      case kLinV: out.push_back(c.linear_v_heads * c.linear_v_dim); break;
      case kLinHeads: out.push_back(c.linear_v_heads); break;
      case kLinVDim: out.push_back(c.linear_v_dim); break;
      case kConvTaps:
        out.push_back(1);
        out.push_back(c.linear_conv_kernel);
        break;
      case kMambaInner: out.push_back(c.mamba_heads * c.mamba_head_dim); break;
      case kMambaConv: out.push_back(c.mamba_heads * c.mamba_head_dim + 2 * c.mamba_groups * c.ssm_state); break;
      case kMambaProj: out.push_back(2 * c.mamba_heads * c.mamba_head_dim + 2 * c.mamba_groups * c.ssm_state + c.mamba_heads); break;
      case kMambaHeads: out.push_back(c.mamba_heads); break;
      case kMoeIn: out.push_back(c.moe_latent > 0 ? c.moe_latent : c.hidden); break;
      case kMoeLatent: out.push_back(c.moe_latent); break;
      case kMoeGateUp:
        out.push_back(2 * c.moe_intermediate);
        out.push_back(c.hidden);
        break;
      case kMoeDown:
        out.push_back(c.hidden);
        out.push_back(c.moe_intermediate);
        break;
      case kMambaTaps:
        out.push_back(1);
        out.push_back(c.mamba_conv_kernel);
        break;
    }
  }
  return out;
}

}  // namespace ar

// libtorch 2.4 replaced the per-device autocast calls (set_enabled,
// set_autocast_gpu_dtype, set_cpu_enabled, ...) by calls that take the
// device type, and the old ones print a deprecation warning each time.
#if AR_TORCH_AT_LEAST(2, 4)
static bool autocast_enabled(at::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
static at::ScalarType autocast_dtype(at::DeviceType d) { return at::autocast::get_autocast_dtype(d); }
static void set_autocast(at::DeviceType d, bool on, at::ScalarType dt) {
  at::autocast::set_autocast_dtype(d, dt);
  at::autocast::set_autocast_enabled(d, on);
}
#else
static bool autocast_enabled(at::DeviceType d) {
  return d == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
static at::ScalarType autocast_dtype(at::DeviceType d) {
  return d == at::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
static void set_autocast(at::DeviceType d, bool on, at::ScalarType dt) {
  if (d == at::kCUDA) {
    at::autocast::set_autocast_gpu_dtype(dt);
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_autocast_cpu_dtype(dt);
    at::autocast::set_cpu_enabled(on);
  }
}
#endif

std::pair<at::Tensor, at::Tensor> ar_model_s::rope(const at::Tensor &positions, const at::Tensor &freq) const {
  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * freq;  // [B,T,hd/2]
  at::Tensor emb = at::cat({freqs, freqs}, -1).unsqueeze(1);             // [B,1,T,hd]
  at::Tensor cos = emb.cos(), sin = emb.sin();
  const double f = cfg.rope_attention_factor;
  if (f != 1) {  // in float32 before the cast, as transformers scales them
    cos.mul_(f);
    sin.mul_(f);
  }
  return {cos.to(dtype), sin.to(dtype)};
}

// uses_sdpa says whether attention on tensors of device d runs libtorch's
// scaled_dot_product_attention (ar_model_set_attention).
static bool uses_sdpa(const ar_model_s &m, const at::Device &d) {
  // Gemma 4's layers differ in key/value heads (the grouped bias is made
  // once for all layers) and its scores are unscaled: plain ops.
  if (m.cfg.gemma != 0) return false;
  if (m.attention_mode == AR_ATTENTION_SDPA) return true;
#if AR_TORCH_AT_LEAST(2, 5)
  return m.attention_mode == AR_ATTENTION_AUTO && d.is_cuda();
#else
  (void)d;
  return false;
#endif
}

at::Tensor ar_model_s::attention_mask(const at::Tensor &mask) const {
  if (!uses_sdpa(*this, mask.device())) return mask;
  const int64_t B = mask.size(0), T = mask.size(3), L = mask.size(4), g = cfg.heads / cfg.kv_heads;
  const at::DeviceType type = mask.is_cuda() ? at::kCUDA : at::kCPU;
  const at::ScalarType ct = autocast_enabled(type) ? autocast_dtype(type) : dtype;
  const int64_t padded = (L + 7) / 8 * 8;
  at::Tensor bias = at::zeros({B, 1, g, T, padded}, mask.options().dtype(ct));
  bias.narrow(-1, 0, L).copy_(mask.view({B, 1, 1, T, L}));  // the same mask for each of the g heads of a group
  return bias.view({B, 1, g * T, padded}).narrow(-1, 0, L);
}

at::Tensor ar_model_s::attend(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                              const at::Tensor &mask) const {
  // q [B,heads,T,hd] is viewed as [B,kv,group*T,hd] so each kv head serves
  // its group of query heads without copying the keys. The layer's shape
  // is the tensors' (Gemma 4's full layers have their own).
  int64_t B = q.size(0), T = q.size(2), L = k.size(2);
  const int64_t heads = q.size(1), kv_heads = k.size(1), head_dim = q.size(3);
  int64_t g = heads / kv_heads;
  if (mask.dim() == 4) {
    // The SDPA path (attention_mask made the grouped bias [B,1,g*T,L]).
    // In the grouped layout query and key heads are equal in number and
    // the bias is additive: the memory-efficient kernel qualifies, where
    // enable_gqa with a mask leaves only the math backend, which repeats
    // the keys and values g times and computes in float32.
    at::Tensor qg = q.reshape({B, kv_heads, g * T, head_dim});
    const at::ScalarType ct = mask.scalar_type();
    at::Tensor qc = qg.to(ct), kc = k.to(ct), vc = v.to(ct);
#if AR_TORCH_AT_LEAST(2, 5)
    sdpa_backend.store(static_cast<int>(at::_fused_sdp_choice(qc, kc, vc, mask)), std::memory_order_relaxed);
    at::Tensor o = at::scaled_dot_product_attention(qc, kc, vc, mask);
#else
    // The same computation with plain ops (libtorch without SDPA).
    at::Tensor s = at::matmul(qc, kc.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(head_dim))) + mask;
    at::Tensor o = at::matmul(at::softmax(s, -1), vc);
#endif
    return o.reshape({B, heads, T, head_dim})  // head = kv*g + j
        .transpose(1, 2)
        .reshape({B, T, heads * head_dim});
  }
  // The scale 1/sqrt(hd) multiplies the queries [..,T,hd] where they are
  // in their accumulation dtype (float32, float64), not the scores
  // [..,T,L], L/hd times as many numbers, forward and backward: one
  // rounding either way (none where the scale is a power of two). Low
  // precision queries keep the scale on the float32 scores, as a product
  // in their own dtype would round them again.
  // Gemma 4's scores are unscaled (its q_norm and k_norm set their size).
  const double scale = cfg.gemma != 0 ? 1.0 : 1.0 / std::sqrt(static_cast<double>(head_dim));
  const bool scale_queries = acc_type(q.scalar_type()) == q.scalar_type();
  at::Tensor qg = (scale_queries && scale != 1 ? q * scale : q).reshape({B, kv_heads, g * T, head_dim});
  at::Tensor scores = at::matmul(qg, k.transpose(-1, -2)).view({B, kv_heads, g, T, L});
  scores = scores.to(acc_type(scores.scalar_type()));
  scores = (scale_queries || scale == 1 ? scores : scores * scale) + mask;
  at::Tensor probs = at::softmax(scores, -1).to(q.scalar_type()).view({B, kv_heads, g * T, L});
  return at::matmul(probs, v)                  // [B,kv,g*T,hd]
      .view({B, heads, T, head_dim})           // head = kv*g + j
      .transpose(1, 2)
      .reshape({B, T, heads * head_dim});
}

// project is target's projection of x, W x + b, and on a LoRA model with
// an adapter there its update as PEFT's Linear computes it (Hu et al.
// 2021, arXiv:2106.09685): + scale B A dropout(x), the adapters in their
// own dtype (float32 over a bf16 base) and the update cast to the
// result's. With a graph to build, the update is one GEMM accumulating
// into the projection's output (no temporaries for the product, its
// scaling and the sum). Without one (the forward of a checkpointed layer,
// logprob and evaluation passes), the adapter is merged into a copy of W
// for this product, as the decode model's weights are (merged_weight):
// one product of x instead of three, equal to the unmerged update up to
// rounding.
at::Tensor ar_model_s::project(const Layer &l, int target, const at::Tensor &x, const at::Tensor &b) const {
  return project(l.*kLoraSites[target].weight, l.lora[target], x, b);
}

at::Tensor ar_model_s::project(const at::Tensor &w, const Layer::Adapter &ad, const at::Tensor &x,
                               const at::Tensor &b) const {
  if (!lora.on || !ad.a.defined()) return linear(x, w, b);
  if (!at::GradMode::is_enabled()) return linear(x, merged_weight(w, ad, lora.scale), b);
  const int64_t in = x.size(-1);
  at::Tensor xa = x.to(lora.dtype).reshape({-1, in});
  if (lora.dropout > 0) xa = at::dropout(xa, lora.dropout, /*train=*/true);
  at::Tensor y = linear(x.reshape({-1, in}), w, b);  // [N, out], a fresh tensor no backward needs
  at::Tensor ax = at::mm(xa, ad.a.t());              // [N, r]
  if (y.scalar_type() == lora.dtype)
    y.addmm_(ax, ad.b.t(), 1, lora.scale);
  else
    y = y + at::mm(ax, ad.b.t()).mul(lora.scale).to(y.scalar_type());
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = y.size(1);
  return y.view(sizes);
}

// merged_weight is W + scale B A for adapter ad over W, computed in float32
// (float64 for an f64 base) and rounded once to W's dtype: a new tensor.
at::Tensor ar::merged_weight(const at::Tensor &w, const ar_model_s::Layer::Adapter &ad, double scale) {
  const at::ScalarType ct = at::promote_types(at::kFloat, w.scalar_type());
  return at::addmm(w.to(ct), ad.b.to(ct), ad.a.to(ct), 1, scale).to(w.scalar_type());
}

at::Tensor ar_model_s::logits(const at::Tensor &h) const { return softcap(at::linear(h, lm_head), cfg.final_softcap); }

bool ar_model_s::hybrid() const {
  for (const auto &l : layers)
    if (l.linear() || l.mamba()) return true;
  return false;
}

AutocastScope::AutocastScope(const at::Device &dev, at::ScalarType dtype) {
  on_ = dtype != at::ScalarType::Undefined;
  if (!on_) return;
  type_ = dev.is_cuda() ? at::kCUDA : at::kCPU;
  prev_ = autocast_enabled(type_);
  prev_dtype_ = autocast_dtype(type_);
  set_autocast(type_, true, dtype);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!on_) return;
  // The cache of casted weights lives for the outermost scope only.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(type_, prev_, prev_dtype_);
}

namespace {

// The additive attention mask for a full sequence: query t may attend key
// s <= t whose attn bit is 1 (HF's convention; pad queries included).
at::Tensor full_mask(const at::Tensor &attn) {
  int64_t T = attn.size(1);
  at::Tensor causal = at::ones({T, T}, attn.options().dtype(at::kBool)).tril();
  at::Tensor allowed = causal.unsqueeze(0) & attn.to(at::kBool).unsqueeze(1);  // [B,T,T]
  at::Tensor m = at::zeros(allowed.sizes(), attn.options().dtype(at::kFloat));
  m.masked_fill_(~allowed, -std::numeric_limits<float>::infinity());
  // Under right padding every query has key 0; a sliding layer's window
  // can leave a padding query none, which sliding_mask sees to.
  return m.view({attn.size(0), 1, 1, T, T});
}

// kQueryBlock is the number of queries in a block of attend_blocks.
constexpr int64_t kQueryBlock = 64;

// causal_blocks says whether a forward's attention runs in query blocks
// (attend_blocks) for the additive mask full [B,1,1,T,T] and attend's
// mask (attention_mask's result): on the CPU's plain-op path (not SDPA),
// over more than one block, and only where no query may attend a later
// key (always so for full_mask; checked for an explicit one).
bool causal_blocks(const at::Tensor &full, const at::Tensor &mask) {
  if (!full.is_cpu() || mask.dim() != 5 || full.size(3) <= kQueryBlock) return false;
  return !(full == 0).triu(1).any().item<bool>();
}

// attend_blocks is m.attend(q, k, v, mask) for a mask under which no query
// attends a later key, by blocks of kQueryBlock queries, each with the
// keys up to its last query only: the keys after them are masked for the
// whole block, so leaving them out changes no probability (their exp is 0)
// and adds nothing to the output, and the products and softmax over them
// (near half of a long sequence's attention) are not computed. Only the
// sums over queries in the backward (the keys' and values' gradients) are
// grouped by block.
at::Tensor attend_blocks(const ar_model_s &m, const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                         const at::Tensor &mask) {
  std::vector<at::Tensor> outs;
  int64_t t0 = 0;
  for (const at::Tensor &qb : q.split(kQueryBlock, 2)) {  // (one backward node for all blocks, not one each)
    const int64_t n = qb.size(2), L = t0 + n;
    outs.push_back(m.attend(qb, k.narrow(2, 0, L), v.narrow(2, 0, L), mask.narrow(3, t0, n).narrow(4, 0, L)));
    t0 = L;
  }
  return at::cat(outs, 1);
}

// One decoder layer over a full sequence; without grad, the output goes
// into out when it is defined. A sparse layer appends its router logits
// to router_logits when that is not null. A Gated DeltaNet layer runs over
// the prefix trees of seqs [B,T] where that holds int64 parents (a packed
// forward), else over whole rows, seqs (bool), where not empty, marking
// their real tokens. With blocks (causal_blocks), attention runs by
// attend_blocks. A sparse layer takes the experts replay [N,k] gives,
// where defined, and appends those it took to chosen when that is not null
// (moe_mlp's routing replay).
// A Gemma 4 layer reads its per-layer input per_layer [B,T,P] where
// defined and keeps or reads shared keys and values in *share.
at::Tensor layer_forward(const ar_model_s &m, const Layer &l, const at::Tensor &x, const at::Tensor &cos,
                         const at::Tensor &sin, const at::Tensor &mask, const at::Tensor &seqs, bool blocks,
                         at::Tensor out = at::Tensor(), std::vector<at::Tensor> *router_logits = nullptr,
                         const at::Tensor &replay = at::Tensor(), std::vector<at::Tensor> *chosen = nullptr,
                         KVShare *share = nullptr, const at::Tensor &per_layer = at::Tensor()) {
  auto attend = [&](const at::Tensor &q, const at::Tensor &k, const at::Tensor &v) {
    return blocks ? attend_blocks(m, q, k, v, mask) : m.attend(q, k, v, mask);
  };
  const bool tree = seqs.numel() > 0 && seqs.scalar_type() == at::kLong;
  const at::Tensor keep = seqs.numel() > 0 && !tree ? seqs : at::Tensor();
  Scan scan = l.mamba() ? (tree ? mamba_tree_scan(m, l, seqs) : mamba_whole_scan(m, l, keep))
                        : (tree ? tree_scan(m, l, seqs) : whole_scan(m, l, keep));
  return decoder_layer({m, l, nullptr, router_logits, replay, chosen, share, per_layer}, x, cos, sin, attend, nullptr,
                       std::move(out), &scan);
}

// The tensors of layer l of m that take gradients: its parameters in table
// order, then its LoRA adapters, each where defined and requiring grad (a
// LoRA model's base weights are frozen: autograd::grad refuses inputs
// without grad).
std::vector<at::Tensor> layer_params(const ar_model_s &m, const Layer &l) {
  std::vector<at::Tensor> out;
  auto add = [&](const at::Tensor &t) {
    if (t.defined() && t.requires_grad()) out.push_back(t);
  };
  if (m.cfg.nemotron != 0)
    for (const auto &p : kNemotronLayerParams) add(l.*p.slot);
  else
    for (const auto &p : kLayerParams)
      if (p.when != kGemmaMoE || p.slot != &Layer::router) add(l.*p.slot);  // (mlp.gate.weight's row holds it too)
  for (const auto &ex : l.experts)
    for (const auto &p : kExpertParams) add(ex.*p.slot);
  for (const auto &ad : l.lora) {
    add(ad.a);
    add(ad.b);
  }
  return out;
}

// CheckpointedLayer is activation checkpointing (Chen et al. 2016,
// arXiv:1604.06174): the forward keeps only the layer's input, the
// backward runs the layer again with grad and differentiates it. The
// layer's parameters are inputs of the node (a tensor list: one input
// each), so their gradients flow. The forward writes its output into
// *out, a tensor hidden() allocated before any layer ran (see there).
// With router, a sparse layer's router logits are a second output (the
// load-balancing loss reads them), recomputed and differentiated with the
// layer's output. A sparse layer takes the experts replay gives (empty:
// its router's choice) and appends those it took to *chosen (when chosen
// is not 0); the backward pass recomputes it with the experts the forward
// took, so that a near tie cannot route the recomputation differently.
//
// A Gemma 4 layer's per-layer input per_layer [B,T,P] (empty: none) is an
// input of the node, and so are the keys and values kin, vin a kv-shared
// layer reads (empty for the others); a layer that keeps its keys and
// values for the shared layers (Layer::kv_store) returns them as its last
// two outputs, so that the shared layers' gradients of them reach it.
struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x,
                                                at::TensorList params, const at::Tensor &cos, const at::Tensor &sin,
                                                const at::Tensor &mask, const at::Tensor &seqs, bool blocks,
                                                const at::Tensor &replay, int64_t model, int64_t layer, int64_t out,
                                                bool router, int64_t chosen, const at::Tensor &per_layer,
                                                const at::Tensor &kin, const at::Tensor &vin) {
    ctx->saved_data["blocks"] = blocks;
    ctx->saved_data["model"] = model;
    ctx->saved_data["layer"] = layer;
    ctx->set_materialize_grads(false);  // a router output no loss reads gets no gradient
    at::NoGradGuard no_grad;
    const auto *m = reinterpret_cast<const ar_model_s *>(model);
    const Layer &l = m->layers[layer];
    KVShare share;
    if (l.kv_reuse) {
      share.k[l.sliding] = kin;
      share.v[l.sliding] = vin;
    }
    std::vector<at::Tensor> logits, took;
    at::Tensor y = layer_forward(*m, l, x, cos, sin, mask, seqs, blocks, *reinterpret_cast<at::Tensor *>(out),
                                 router ? &logits : nullptr, replay.numel() > 0 ? replay : at::Tensor(), &took, &share,
                                 per_layer.numel() > 0 ? per_layer : at::Tensor());
    ctx->save_for_backward(
        {x, cos, sin, mask, seqs, took.empty() ? at::empty({0}, at::kLong) : took[0], per_layer, kin, vin});
    if (chosen != 0 && !took.empty()) reinterpret_cast<std::vector<at::Tensor> *>(chosen)->push_back(took[0]);
    torch::autograd::variable_list ys{y};
    ctx->saved_data["logits"] = !logits.empty();
    if (!logits.empty()) ys.push_back(logits[0]);
    if (l.kv_store) {
      ys.push_back(share.k[l.sliding]);
      ys.push_back(share.v[l.sliding]);
    }
    return ys;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    const auto *m = reinterpret_cast<const ar_model_s *>(ctx->saved_data["model"].toInt());
    const auto &l = m->layers[ctx->saved_data["layer"].toInt()];
    const bool has_logits = ctx->saved_data["logits"].toBool();
    // A leaf with grad for each tensor input that is there (an empty one is
    // none: its gradient stays undefined).
    auto leaf = [](const at::Tensor &t) { return t.numel() > 0 ? t.detach().requires_grad_(true) : at::Tensor(); };
    at::Tensor x = leaf(saved[0]), per_layer = leaf(saved[6]);
    KVShare share;
    if (l.kv_reuse) {
      share.k[l.sliding] = leaf(saved[7]);
      share.v[l.sliding] = leaf(saved[8]);
    }
    std::vector<at::Tensor> inputs{x};
    const std::vector<at::Tensor> params = layer_params(*m, l);
    inputs.insert(inputs.end(), params.begin(), params.end());
    if (per_layer.defined()) inputs.push_back(per_layer);
    if (l.kv_reuse) {
      inputs.push_back(share.k[l.sliding]);
      inputs.push_back(share.v[l.sliding]);
    }
    // The outputs that received a gradient, and their gradients.
    std::vector<at::Tensor> ys, grads;
    {
      // Recomputed as it was computed: under the model's autocast.
      c10::AutoGradMode on(true);
      AutocastScope ac(m->dev, m->autocast);
      std::vector<at::Tensor> logits;
      at::Tensor y = layer_forward(*m, l, x, saved[1], saved[2], saved[3], saved[4],
                                   ctx->saved_data["blocks"].toBool(), at::Tensor(), has_logits ? &logits : nullptr,
                                   saved[5].numel() > 0 ? saved[5] : at::Tensor(), nullptr, &share, per_layer);
      std::vector<at::Tensor> outs{y};
      if (has_logits) outs.push_back(logits[0]);
      if (l.kv_store) {
        outs.push_back(share.k[l.sliding]);
        outs.push_back(share.v[l.sliding]);
      }
      for (size_t i = 0; i < grad_out.size(); i++) {
        if (!grad_out[i].defined()) continue;
        ys.push_back(outs[i]);
        grads.push_back(grad_out[i]);
      }
    }
    torch::autograd::variable_list got(inputs.size());
    if (!ys.empty()) got = torch::autograd::grad(ys, inputs, grads, false, false, true);
    // The gradients were allocated among the recomputation's temporaries:
    // copied now that those are freed, they sit together instead of
    // splitting the memory the next layer's recomputation reuses (see
    // hidden()).
    ys.clear();
    x.reset();
    inputs.clear();
    for (auto &g : got)
      if (g.defined()) g = g.clone();
    // One gradient per forward input: x and each parameter, none for cos,
    // sin, mask, seqs, blocks, replay, model, layer, out, router and
    // chosen, then per_layer's, kin's and vin's.
    torch::autograd::variable_list out(got.begin(), got.begin() + 1 + static_cast<int64_t>(params.size()));
    for (int i = 0; i < 11; i++) out.emplace_back();
    size_t next = 1 + params.size();
    out.push_back(per_layer.defined() ? got[next++] : at::Tensor());
    out.push_back(l.kv_reuse ? got[next++] : at::Tensor());
    out.push_back(l.kv_reuse ? got[next++] : at::Tensor());
    return out;
  }
};

// The rows of the embedding for ids. On the meta device (shapes only, used
// by tests as a second device) libtorch 1.13 has no kernel for
// embedding's index_select, and advanced indexing is the same lookup.
at::Tensor embed(const ar_model_s &m, const at::Tensor &ids) {
  return m.dev.is_meta() ? at::index(m.embed, {ids}) : at::embedding(m.embed, ids);
}

// The additive attention mask [B,1,1,T,T] of an explicit one: query t
// may attend key s where allowed[b,t,s] is nonzero. A query must allow
// itself (a row with no key would give NaN).
at::Tensor explicit_mask(const at::Tensor &allowed) {
  at::Tensor ok = allowed.to(at::kBool);
  TORCH_CHECK(ok.diagonal(0, 1, 2).all().item<bool>(), "packed forward: a query that may not attend itself");
  at::Tensor m = at::zeros(ok.sizes(), allowed.options().dtype(at::kFloat));
  m.masked_fill_(~ok, -std::numeric_limits<float>::infinity());
  return m.view({allowed.size(0), 1, 1, allowed.size(1), allowed.size(2)});
}

// Final hidden states [B,T,H] for full sequences with the additive mask
// of full_mask or explicit_mask. With router_logits, each sparse layer's
// router logits [B*T,E] are appended to it. seqs says how a hybrid
// model's DeltaNet layers run (layer_forward; empty: whole rows). Where
// replay [B,T,L,k] (int64; L the sparse layers in order) is defined, the
// j-th sparse layer takes the experts replay[:,:,j] gives; with chosen,
// the experts each sparse layer took [B*T,k] are appended to it, in order.
// A sliding layer's window counts in window_pos [B,T] (undefined: pos):
// a packed row's positions (the distance along its tree), a plain row's
// indices (transformers' sliding mask counts cache positions, whatever
// the position ids).
at::Tensor hidden_masked(const ar_model_s &m, const at::Tensor &ids, const at::Tensor &full,
                         const at::Tensor &pos, std::vector<at::Tensor> *router_logits = nullptr,
                         const at::Tensor &seqs = at::empty({0}, at::kLong), const at::Tensor &replay = at::Tensor(),
                         std::vector<at::Tensor> *chosen = nullptr, const at::Tensor &window_pos = at::Tensor()) {
  at::Tensor x = embed(m, ids), per_layer;
  if (m.cfg.gemma != 0) {
    GemmaInputs in = gemma_inputs(m, ids, x);
    x = in.x;
    per_layer = in.per_layer;
  }
  // Empty tables for Nemotron-H, whose attention has no RoPE.
  at::Tensor cos = at::empty({0}, x.options()), sin = cos;
  if (m.cfg.nemotron == 0) std::tie(cos, sin) = m.rope(pos);
  at::Tensor gcos = cos, gsin = sin;  // a Gemma 4 full layer's
  if (m.global_inv_freq.defined()) std::tie(gcos, gsin) = m.rope(pos, m.global_inv_freq);
  at::Tensor mask = m.attention_mask(full);
  const bool blocks = causal_blocks(full, mask);
  at::Tensor smask;  // a sliding layer's
  for (const auto &l : m.layers)
    if (l.sliding && !smask.defined()) {
      const at::Tensor &wp = window_pos.defined() ? window_pos : pos;
      smask = m.attention_mask(sliding_mask(full, wp, wp, m.cfg.sliding_window));
    }
  KVShare share;  // (checkpointed: the kv_store layers' key and value outputs)
  bool ckpt = m.checkpointing && at::GradMode::is_enabled();
  // The checkpoints (each layer's output) are allocated before any layer
  // runs. On the CPU a tensor under 4 MB lives in the C heap, which keeps
  // what is freed (keep_heap, library.cpp): a checkpoint allocated among a
  // layer's temporaries would split their freed memory, which the next
  // layer's could then not reuse whole, and resident memory would grow by
  // about a layer's activations per layer.
  std::vector<at::Tensor> outs(ckpt ? m.layers.size() : 0);
  for (auto &o : outs) o = at::empty(x.sizes(), x.options().requires_grad(false));
  int64_t sparse = 0;
  for (size_t i = 0; i < m.layers.size(); i++) {
    at::Tensor r;
    if (replay.defined() && m.layers[i].router.defined())
      r = replay.select(2, sparse).reshape({-1, m.cfg.experts_per_token});
    if (m.layers[i].router.defined()) sparse++;
    const Layer &l = m.layers[i];
    const bool local = l.sliding || m.cfg.gemma == 0;
    const at::Tensor &lcos = local ? cos : gcos, &lsin = local ? sin : gsin, &lmask = l.sliding ? smask : mask;
    const at::Tensor none = at::empty({0}, x.options());
    if (ckpt) {
      std::vector<at::Tensor> params = layer_params(m, l);
      auto ys = CheckpointedLayer::apply(
          x, at::TensorList(params), lcos, lsin, lmask, seqs, blocks, r.defined() ? r : at::empty({0}, at::kLong),
          reinterpret_cast<int64_t>(&m), static_cast<int64_t>(i), reinterpret_cast<int64_t>(&outs[i]),
          router_logits != nullptr, reinterpret_cast<int64_t>(chosen),
          per_layer.defined() ? per_layer.select(2, static_cast<int64_t>(i)) : none,
          l.kv_reuse ? share.k[l.sliding] : none, l.kv_reuse ? share.v[l.sliding] : none);
      x = ys[0];
      size_t next = 1;
      if (router_logits != nullptr && l.router.defined()) router_logits->push_back(ys[next++]);
      if (l.kv_store) {
        share.k[l.sliding] = ys[next];
        share.v[l.sliding] = ys[next + 1];
      }
    } else {
      x = layer_forward(m, l, x, lcos, lsin, lmask, seqs, blocks, at::Tensor(), router_logits, r, chosen, &share,
                        per_layer.defined() ? per_layer.select(2, static_cast<int64_t>(i)) : at::Tensor());
    }
  }
  return m.cfg.gemma != 0 ? gemma_norm(x, m.norm, m.cfg.rms_eps) : norm(m, x, m.norm);
}

// tree_parents reads the prefix trees of a packed batch's rows off its
// mask allowed [B,T,T] (host memory): each token's parent is the latest
// earlier key it may attend (-1: none), and its keys must be its parent's
// and itself, else the mask is not a prefix tree and a Gated DeltaNet
// layer, whose state runs along the sequence, cannot read it.
at::Tensor tree_parents(const uint8_t *allowed, int64_t B, int64_t T) {
  at::Tensor out = at::empty({B, T}, at::kLong);
  int64_t *p = out.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++) {
      const uint8_t *row = allowed + (b * T + t) * T;
      int64_t par = -1;
      for (int64_t s = t - 1; s >= 0 && par < 0; s--)
        if (row[s] != 0) par = s;
      const uint8_t *prow = par >= 0 ? allowed + (b * T + par) * T : nullptr;
      for (int64_t s = 0; s < T; s++) {
        const bool want = s == t || s == par || (prow != nullptr && s < par && prow[s] != 0);
        TORCH_CHECK((row[s] != 0) == want, "packed forward: row ", b, " is not a prefix tree (query ", t,
                    " attends key ", s, " as its parent ", par, " does not), which a Gated DeltaNet or Mamba-2 layer cannot run");
      }
      p[b * T + t] = par;
    }
  return out;
}

// Final hidden states [B,T,H] for a full sequence (replay and chosen as
// hidden_masked's).
at::Tensor hidden(const ar_model_s &m, const at::Tensor &ids, const at::Tensor &attn,
                  const at::Tensor &pos, std::vector<at::Tensor> *router_logits = nullptr,
                  const at::Tensor &replay = at::Tensor(), std::vector<at::Tensor> *chosen = nullptr) {
  return hidden_masked(m, ids, full_mask(attn), pos, router_logits,
                       m.hybrid() ? attn.to(at::kBool) : at::empty({0}, at::kLong), replay, chosen,
                       at::arange(ids.size(1), pos.options()).expand(ids.sizes()));
}

at::Tensor ids_tensor(const int64_t *p, int64_t B, int64_t T, const at::Device &d) {
  return at::from_blob(const_cast<int64_t *>(p), {B, T}, at::kLong).to(d, at::kLong, false, true);
}

// add_params adds the parameters of the table rows that m's config has:
// zero tensors named prefix + key, held by owner's slots.
// layer is the layer index of a layer's rows (-1 for the others).
template <class Owner, size_t N>
void add_params(ar_model_s &m, Owner &owner, const Param<Owner> (&rows)[N], const std::string &prefix,
                int64_t layer = -1) {
  for (const auto &r : rows) {
    if (!has(r.when, m.cfg, layer)) continue;
    // A Nemotron-H router's weight and score bias stay float32 in a bf16 or
    // f16 model, as transformers keeps them (_keep_in_fp32_modules_strict).
    at::ScalarType dt = m.dtype;
    if (m.cfg.nemotron != 0 && (dt == at::kBFloat16 || dt == at::kHalf) &&
        (std::strcmp(r.key, "mixer.gate.weight") == 0 || std::strcmp(r.key, "mixer.gate.e_score_correction_bias") == 0))
      dt = at::kFloat;
    at::Tensor t = at::zeros(shape(r.shape, m.cfg, layer), at::TensorOptions().dtype(dt).device(m.dev));
    // Buffers in transformers: not trained.
    t.set_requires_grad(std::strcmp(r.key, "layer_scalar") != 0 && std::strcmp(r.key, "mixer.gate.e_score_correction_bias") != 0);
    m.names.push_back(prefix + r.key);
    m.params[m.names.back()] = t;
    owner.*r.slot = t;
  }
}

}  // namespace

extern "C" {

int ar_model_new(const ar_model_config *cfg, int dtype, int dev, ar_model *out, char **err) {
  return guard(err, [&] {
    const auto &c = *cfg;
    TORCH_CHECK(c.vocab > 0 && c.hidden > 0 && c.layers > 0, "model config: sizes must be positive");
    bool any_dense = false;  // a layer with the dense MLP, of width intermediate
    for (int64_t i = 0; i < c.layers; i++) any_dense = any_dense || has(kDenseMLP, c, i);
    TORCH_CHECK(c.intermediate > 0 || !any_dense, "model config: intermediate_size must be positive, got ", c.intermediate);
    TORCH_CHECK(c.heads > 0 && c.kv_heads > 0 && c.heads % c.kv_heads == 0,
                "model config: num_attention_heads (", c.heads, ") must be a positive multiple of num_key_value_heads (", c.kv_heads, ")");
    TORCH_CHECK(c.head_dim > 0 && c.head_dim % 2 == 0, "model config: head_dim must be positive and even, got ", c.head_dim);
    TORCH_CHECK(c.rms_eps > 0, "model config: rms_norm_eps must be positive");
    TORCH_CHECK(c.head_dim <= AR_MAX_HEAD_DIM, "model config: head_dim ", c.head_dim, " exceeds ", AR_MAX_HEAD_DIM);
    TORCH_CHECK(c.rope_attention_factor > 0, "model config: the RoPE attention factor must be positive");
    check_moe_config(c);
    check_window_config(c);
    check_gemma_config(c);
    const int64_t rd = c.rotary_dim > 0 ? c.rotary_dim : c.head_dim;
    TORCH_CHECK(rd % 2 == 0 && rd <= c.head_dim, "model config: RoPE dimensions ", rd, " must be even and at most head_dim");
    bool any_linear = false;
    for (int64_t i = 0; i < c.layers && i < AR_MAX_MOE_LAYERS; i++) any_linear = any_linear || linear_layer(c, i);
    TORCH_CHECK(!any_linear || c.layers <= AR_MAX_MOE_LAYERS, "model config: a hybrid model has at most ",
                AR_MAX_MOE_LAYERS, " layers");
    if (any_linear) {
      TORCH_CHECK(c.linear_k_heads > 0 && c.linear_v_heads > 0 && c.linear_k_dim > 0 && c.linear_v_dim > 0 &&
                      c.linear_conv_kernel > 0,
                  "model config: the Gated DeltaNet sizes must be positive");
      TORCH_CHECK(c.linear_v_heads % c.linear_k_heads == 0, "model config: linear_num_value_heads (", c.linear_v_heads,
                  ") must be a multiple of linear_num_key_heads (", c.linear_k_heads, ")");
    }
    if (c.nemotron != 0) check_nemotron_config(c);
    for (int64_t j = 0; j < rd / 2; j++)
      TORCH_CHECK(c.rope_inv_freq[j] > 0 && std::isfinite(c.rope_inv_freq[j]),
                  "model config: RoPE inverse frequency ", j, " must be positive and finite, got ", c.rope_inv_freq[j]);
    auto m = std::make_unique<ar_model_s>();
    m->cfg = c;
    m->dtype = scalar_type(dtype);
    m->dev = device(dev);
    DeviceScope on(m->dev);
    // f32 matrix products on CUDA use TF32 tensor cores (for the whole
    // process: libtorch keeps the setting globally); the CPU's do not.
    if (m->dev.is_cuda()) allow_cuda_tf32_matmul();
    if (c.nemotron != 0) {
      add_params(*m, *m, kNemotronEmbedParams, "");
      m->layers.resize(c.layers);
      for (int64_t i = 0; i < c.layers; i++) {
        set_layer_shape(m->layers[i], c, i);
        add_params(*m, m->layers[i], kNemotronLayerParams, "model.layers." + std::to_string(i) + ".", i);
        if (!sparse(c, i)) continue;
        m->layers[i].experts.resize(c.experts);
        for (int64_t e = 0; e < c.experts; e++)
          add_params(*m, m->layers[i].experts[e], kNemotronExpertParams, nemotron_expert_prefix(i, e), i);
      }
      add_params(*m, *m, kNemotronHeadParams, "");
    } else {
      add_params(*m, *m, kEmbedParams, "");
      m->layers.resize(c.layers);
    }
    for (int64_t i = 0; i < c.layers && c.nemotron == 0; i++) {
      Layer &l = m->layers[i];
      set_layer_shape(l, c, i);
      add_params(*m, l, kLayerParams, "model.layers." + std::to_string(i) + ".", i);
      if (!has(kSparseMLP, c, i)) continue;  // (a Gemma 4 layer's experts are two tensors of kLayerParams)
      l.experts.resize(c.experts);
      for (int64_t e = 0; e < c.experts; e++) add_params(*m, l.experts[e], kExpertParams, expert_prefix(i, e));
    }
    if (c.nemotron == 0) add_params(*m, *m, kHeadParams, "");
    if (c.tie_embeddings) m->lm_head = m->embed;
    m->inv_freq = at::from_blob(const_cast<double *>(c.rope_inv_freq), {rd / 2}, at::kDouble)
                      .to(m->dev, at::kFloat, false, true);
    if (c.gemma != 0)
      m->global_inv_freq = at::from_blob(const_cast<double *>(c.global_rope_inv_freq), {c.global_head_dim / 2}, at::kDouble)
                               .to(m->dev, at::kFloat, false, true);
    *out = m.release();
  });
}

int ar_model_free(ar_model m) {
  delete m;
  return AR_OK;
}

int ar_model_init_random(ar_model m, uint64_t seed, double std, char **err) {
  return guard(err, [&] {
    DeviceScope on(m->dev);
    c10::NoGradGuard no_grad;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    for (const auto &n : m->names) {
      at::Tensor &p = m->params[n];
      auto ends_with = [&](const std::string &suffix) {
        return n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      // Every RMSNorm weight (*layernorm.weight, model.norm.weight) and
      // Gemma 4's layer_scalar, MoE norms and router scales start at 1.
      bool is_norm = ends_with("norm.weight") || ends_with("norm_f.weight") || ends_with("layer_scalar") ||
                     ends_with("layernorm_1.weight") || ends_with("layernorm_2.weight") ||
                     ends_with("router.scale") || ends_with("router.per_expert_scale");
      bool is_bias = ends_with(".bias");
      if (is_norm) {
        // A 1 + w norm starts at 0, as transformers' Qwen3_5RMSNorm; the
        // DeltaNet layers' gated norm scales by w.
        p.fill_(m->cfg.norm_offset != 0 && !ends_with("linear_attn.norm.weight") ? 0 : 1);
      } else if (is_bias) {
        p.zero_();
      } else {
        at::Tensor r = at::empty(p.sizes(), at::kFloat);
        r.normal_(0, std, gen);
        p.copy_(r);
      }
    }
  });
}

int ar_model_param_names(ar_model m, char ***names, int *n, char **err) {
  return guard(err, [&] {
    *n = static_cast<int>(m->names.size());
    *names = static_cast<char **>(std::malloc(sizeof(char *) * m->names.size()));
    for (size_t i = 0; i < m->names.size(); i++) (*names)[i] = strdup(m->names[i].c_str());
  });
}

int ar_model_set_param(ar_model m, const char *name, ar_tensor t, char **err) {
  return guard(err, [&] {
    DeviceScope on(m->dev);
    auto it = m->params.find(name);
    TORCH_CHECK(it != m->params.end(), "model has no parameter named ", name);
    TORCH_CHECK(it->second.sizes() == T(t).sizes(), "parameter ", name, ": expected shape ", it->second.sizes(),
                ", checkpoint has ", T(t).sizes());
    c10::NoGradGuard no_grad;
    it->second.copy_(T(t));
  });
}

int ar_model_param(ar_model m, const char *name, ar_tensor *out, char **err) {
  return guard(err, [&] {
    auto it = m->params.find(name);
    TORCH_CHECK(it != m->params.end(), "model has no parameter named ", name);
    *out = wrap(it->second);
  });
}

int ar_model_set_autocast(ar_model m, int dtype, char **err) {
  return guard(err, [&] {
    if (dtype < 0) {
      m->autocast = at::ScalarType::Undefined;
      return;
    }
    at::ScalarType dt = scalar_type(dtype);
    TORCH_CHECK(dt == at::kBFloat16 || dt == at::kHalf, "autocast to ", dt, ": want bf16 or f16");
    m->autocast = dt;
  });
}

int ar_model_set_attention(ar_model m, int mode, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(mode >= AR_ATTENTION_AUTO && mode <= AR_ATTENTION_MATH, "unknown attention mode ", mode);
    m->attention_mode = mode;
  });
}

int ar_model_sdpa_backend(ar_model m, int *backend, char **err) {
  return guard(err, [&] { *backend = m->sdpa_backend.load(std::memory_order_relaxed); });
}

int ar_model_set_checkpointing(ar_model m, int on, char **err) {
  return guard(err, [&] { m->checkpointing = on != 0; });
}

int ar_model_set_logits_chunk(ar_model m, int64_t tokens, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(tokens >= 0, "logits chunk must be 0 (whole) or a positive number of tokens, got ", tokens);
    m->logits_chunk = tokens;
  });
}

int ar_model_copy_weights(ar_model dst, ar_model src, char **err) {
  return guard(err, [&] {
    DeviceScope on(dst->dev);
    c10::NoGradGuard no_grad;
    for (const auto &n : dst->names) {
      auto it = src->params.find(n);
      // A critic made from a policy keeps its own value head.
      if (it == src->params.end() && n.rfind(AR_VALUE_HEAD_PREFIX, 0) == 0) continue;
      TORCH_CHECK(it != src->params.end(), "copy_weights: source has no parameter ", n);
      dst->params[n].copy_(it->second);
    }
  });
}

int ar_model_logits(ar_model m, const int64_t *ids, const int64_t *attn, const int64_t *positions,
                    int64_t B, int64_t T, ar_tensor *out, char **err) {
  return guard(err, [&] {
    DeviceScope on(m->dev);
    c10::InferenceMode inference;
    at::Tensor h = hidden(*m, ids_tensor(ids, B, T, m->dev), ids_tensor(attn, B, T, m->dev),
                          ids_tensor(positions, B, T, m->dev));
    at::Tensor l = m->logits(h).to(acc_type(m->dtype));
    { c10::InferenceMode off(false); *out = wrap(l.clone()); }
  });
}

// HeadOutputs are what a training forward reads off the LM head for the
// hidden states that predict its targets, each [N]: log-probabilities and
// entropies (undefined where not asked for).
struct HeadOutputs {
  at::Tensor lp, ent;
};

// head_outputs reads them off hs [N,H] for targets [N] at temperature: the
// LM head in chunks of logits_chunk (token_logprobs) or whole, the entropy
// with a graph only when entropyGrad.
static HeadOutputs head_outputs(ar_model m, const at::Tensor &hs, const at::Tensor &targets, double temperature,
                                bool wantLogprobs, bool wantEntropy, bool entropyGrad) {
  HeadOutputs o;
  // Gemma 4's capped logits take the whole path (the chunks' backward
  // knows no cap).
  if ((wantLogprobs || wantEntropy) && m->logits_chunk > 0 && m->cfg.final_softcap == 0) {
    auto [l, e] = token_logprobs(hs, m->lm_head, targets, temperature, m->logits_chunk, wantEntropy, entropyGrad,
                                 m->autocast);
    if (wantLogprobs) o.lp = l;
    if (wantEntropy) o.ent = e;
  } else if (wantLogprobs || wantEntropy) {
    at::Tensor z = m->logits(hs).to(acc_type(m->dtype));
    if (temperature != 1) z = z / temperature;  // (at 1 the division changes no value)
    at::Tensor logp = at::log_softmax(z, -1);  // [N,V]
    if (wantLogprobs) o.lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
    if (wantEntropy) {
      c10::AutoGradMode entropy_grad_mode(entropyGrad);
      o.ent = -(logp.exp() * logp).sum(-1);
    }
  }
  return o;
}

// value_head is the value head's reading of hidden states [...,H], in
// the head's own dtype (a LoRA model's is float32): [...].
static at::Tensor value_head(ar_model m, const at::Tensor &hs) {
  return linear(hs.to(m->v_head_w.scalar_type()), m->v_head_w, m->v_head_b).squeeze(-1).to(acc_type(m->dtype));
}

// check_forward_request refuses what neither training forward (plain or
// packed) can do: a non-positive temperature, values without a value head,
// and LoRA dropout under activation checkpointing with gradients.
static void check_forward_request(ar_model m, bool grad, double temperature, bool values, bool aux) {
  TORCH_CHECK(temperature > 0, "temperature must be positive, got ", temperature);
  TORCH_CHECK(!values || m->v_head_w.defined(), "values requested but the model has no value head");
  bool any_sparse = false;
  for (const auto &l : m->layers) any_sparse = any_sparse || l.router.defined();
  TORCH_CHECK(!aux || any_sparse, "the router load-balancing loss was requested but the model has no mixture-of-experts layer");
  TORCH_CHECK(!aux || m->cfg.nemotron == 0,
              "the router load-balancing loss: Nemotron-H's sigmoid routers have none (NemotronHForCausalLM adds no "
              "auxiliary loss)");
  TORCH_CHECK(!aux || m->cfg.gemma == 0,
              "the router load-balancing loss: Gemma 4's routers have none (Gemma4ForCausalLM adds no auxiliary loss)");
  TORCH_CHECK(!(grad && m->checkpointing && m->lora.rank > 0 && m->lora.on && m->lora.dropout > 0),
              "LoRA dropout ", m->lora.dropout,
              " with activation checkpointing: the backward pass would recompute each layer with another dropout "
              "mask than its forward; set the LoRA dropout to 0 or turn checkpointing off");
}

int ar_model_forward(ar_model m, const int64_t *ids, const int64_t *attn, const int64_t *positions,
                     int64_t B, int64_t T, double temperature, int flags, const int64_t *head_rows, int64_t n_head,
                     ar_tensor *logprobs, ar_tensor *entropy, ar_tensor *values, ar_tensor *aux, char **err) {
  return ar_model_forward_routed(m, ids, attn, positions, B, T, temperature, flags, head_rows, n_head, nullptr, nullptr,
                                 logprobs, entropy, values, aux, err);
}

// head_on runs head_outputs on the rows rows [n] (a long tensor, undefined:
// all) of hs [N,H] for targets [N] and lays each output back out over the
// N positions, 0 at the rows left out (index_copy keeps the graph).
static HeadOutputs head_on(ar_model m, const at::Tensor &hs, const at::Tensor &targets, const at::Tensor &rows,
                           double temperature, bool wantLogprobs, bool wantEntropy, bool entropyGrad) {
  if (!rows.defined()) return head_outputs(m, hs, targets, temperature, wantLogprobs, wantEntropy, entropyGrad);
  HeadOutputs o = head_outputs(m, hs.index_select(0, rows), targets.index_select(0, rows), temperature, wantLogprobs,
                               wantEntropy, entropyGrad);
  auto spread = [&](const at::Tensor &x) {
    return x.defined() ? at::zeros({hs.size(0)}, x.options()).index_copy(0, rows, x) : x;
  };
  return HeadOutputs{spread(o.lp), spread(o.ent)};
}

int ar_model_forward_routed(ar_model m, const int64_t *ids, const int64_t *attn, const int64_t *positions,
                            int64_t B, int64_t T, double temperature, int flags, const int64_t *head_rows,
                            int64_t n_head, const int16_t *replay, int16_t *record, ar_tensor *logprobs,
                            ar_tensor *entropy, ar_tensor *values, ar_tensor *aux, char **err) {
  return guard(err, [&] {
    DeviceScope on(m->dev);
    const bool grad = (flags & AR_FORWARD_GRAD) != 0;
    TORCH_CHECK(T >= 2, "forward needs sequences of at least 2 tokens, got ", T);
    check_forward_request(m, grad, temperature, values != nullptr, aux != nullptr);
    TORCH_CHECK(head_rows == nullptr || n_head >= 1, "forward: head rows given but none listed (n_head ", n_head, ")");
    for (int64_t j = 0; head_rows != nullptr && j < n_head; j++)
      TORCH_CHECK(head_rows[j] >= 0 && head_rows[j] < B * (T - 1), "forward: head row ", j, " (", head_rows[j],
                  ") is outside 0..", B * (T - 1) - 1);
    int64_t L = 0;
    for (const auto &l : m->layers) L += l.router.defined() ? 1 : 0;
    TORCH_CHECK((replay == nullptr && record == nullptr) || L > 0,
                "routing replay or record: the model has no mixture-of-experts layer");
    const int64_t k = m->cfg.experts_per_token;
    at::Tensor lp, ent, val, aux_loss, took;
    {
      // Without grad the work runs in inference mode; results are cloned
      // outside it so later autograd code may use them freely.
      c10::AutoGradMode grad_mode(grad);
      c10::optional<c10::InferenceMode> inference;
      if (!grad) inference.emplace();
      AutocastScope ac(m->dev, m->autocast);
      at::Tensor idt = ids_tensor(ids, B, T, m->dev), attnt = ids_tensor(attn, B, T, m->dev);
      std::vector<at::Tensor> router_logits, chosen;
      at::Tensor rep;
      if (replay != nullptr)
        rep = at::from_blob(const_cast<int16_t *>(replay), {B, T, L, k}, at::kShort).to(m->dev, at::kLong, false, true);
      at::Tensor h = hidden(*m, idt, attnt, ids_tensor(positions, B, T, m->dev), aux != nullptr ? &router_logits : nullptr,
                            rep, record != nullptr ? &chosen : nullptr);
      if (record != nullptr) took = at::stack(chosen, 1).to(at::kCPU, at::kShort).contiguous();  // [B*T,L,k]
      if (aux != nullptr)
        aux_loss = router_aux_loss(router_logits, attnt, m->cfg.experts, m->cfg.experts_per_token);
      at::Tensor hs = h.narrow(1, 0, T - 1);
      at::Tensor rows;
      if (head_rows != nullptr)
        rows = at::from_blob(const_cast<int64_t *>(head_rows), {n_head}, at::kLong).to(m->dev, at::kLong, false, true);
      HeadOutputs o = head_on(m, hs.reshape({-1, hs.size(2)}), idt.narrow(1, 1, T - 1).reshape({-1}), rows, temperature,
                              logprobs != nullptr, entropy != nullptr, grad && (flags & AR_FORWARD_ENTROPY_GRAD) != 0);
      if (o.lp.defined()) lp = o.lp.view({B, T - 1});
      if (o.ent.defined()) ent = o.ent.view({B, T - 1});
      if (values != nullptr) val = value_head(m, hs);
    }
    auto out = [&](const at::Tensor &t) { return grad ? t : t.clone(); };
    if (logprobs != nullptr) *logprobs = wrap(out(lp));
    if (entropy != nullptr) *entropy = wrap(out(ent));
    if (values != nullptr) *values = wrap(out(val));
    if (aux != nullptr) *aux = wrap(out(aux_loss));
    if (record != nullptr) std::memcpy(record, took.data_ptr<int16_t>(), sizeof(int16_t) * B * T * L * k);
  });
}

int ar_model_forward_packed(ar_model m, const int64_t *ids, const uint8_t *allowed, const int64_t *positions,
                            int64_t B, int64_t T, int64_t n, const int64_t *row, const int64_t *src,
                            const int64_t *tgt, const int64_t *lens, double temperature, int flags,
                            ar_tensor *logprobs, ar_tensor *entropy, ar_tensor *values, ar_tensor *aux, char **err) {
  return guard(err, [&] {
    DeviceScope on(m->dev);
    const bool grad = (flags & AR_FORWARD_GRAD) != 0;
    TORCH_CHECK(n >= 1, "packed forward needs at least one target, got ", n);
    check_forward_request(m, grad, temperature, values != nullptr, aux != nullptr);
    if (lens != nullptr)
      for (int64_t b = 0; b < B; b++)
        TORCH_CHECK(lens[b] >= 0 && lens[b] <= T, "packed forward: row ", b, " has ", lens[b], " real tokens, outside 0..", T);
    for (int64_t j = 0; j < n; j++)
      TORCH_CHECK(row[j] >= 0 && row[j] < B && src[j] >= 0 && src[j] < T && tgt[j] >= 0 && tgt[j] < m->cfg.vocab,
                  "packed forward: target ", j, " (row ", row[j], ", position ", src[j], ", token ", tgt[j], ") is out of range");
    at::Tensor lp, ent, val, aux_loss;
    {
      c10::AutoGradMode grad_mode(grad);
      c10::optional<c10::InferenceMode> inference;
      if (!grad) inference.emplace();
      AutocastScope ac(m->dev, m->autocast);
      at::Tensor allow = at::from_blob(const_cast<uint8_t *>(allowed), {B, T, T}, at::kByte).to(m->dev, at::kByte, false, true);
      std::vector<at::Tensor> router_logits;
      at::Tensor h = hidden_masked(*m, ids_tensor(ids, B, T, m->dev), explicit_mask(allow), ids_tensor(positions, B, T, m->dev),
                                   aux != nullptr ? &router_logits : nullptr,
                                   m->hybrid() ? tree_parents(allowed, B, T) : at::empty({0}, at::kLong));
      if (aux != nullptr) {
        at::Tensor real = at::ones({B, T}, at::TensorOptions().dtype(at::kLong).device(m->dev));
        if (lens != nullptr)
          real = at::arange(T, real.options()).unsqueeze(0) < ids_tensor(lens, B, 1, m->dev);
        aux_loss = router_aux_loss(router_logits, real, m->cfg.experts, m->cfg.experts_per_token);
      }
      at::Tensor flat = ids_tensor(row, 1, n, m->dev).view({n}) * T + ids_tensor(src, 1, n, m->dev).view({n});
      at::Tensor hs = h.reshape({B * T, h.size(2)}).index_select(0, flat);  // [n,H]: the states that predict
      at::Tensor targets = ids_tensor(tgt, 1, n, m->dev).view({n});
      HeadOutputs o = head_outputs(m, hs, targets, temperature, logprobs != nullptr, entropy != nullptr,
                                   grad && (flags & AR_FORWARD_ENTROPY_GRAD) != 0);
      lp = o.lp, ent = o.ent;
      if (values != nullptr) val = value_head(m, hs);
    }
    auto out = [&](const at::Tensor &t) { return grad ? t : t.clone(); };
    if (logprobs != nullptr) *logprobs = wrap(out(lp));
    if (entropy != nullptr) *entropy = wrap(out(ent));
    if (values != nullptr) *values = wrap(out(val));
    if (aux != nullptr) *aux = wrap(out(aux_loss));
  });
}

}  // extern "C"
