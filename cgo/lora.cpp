// lora.cpp: LoRA models (Hu et al. 2021, arXiv:2106.09685) laid out as
// PEFT lays them out, and the merged copies the decode engine runs on.
//
// A LoRA model is an ar_model_s whose weights are its base's tensors,
// detached (the same storage and version counter, no autograd history, no
// gradient), plus per layer and target an adapter A [r, in], B [out, r]:
// the forward (model.cpp, ar_model_s::project) adds (alpha / r) B A x to the
// target's projection W x + b. Gemma 4's per_layer_model_projection, a
// module of the model and not of a layer, has its adapter beside the
// layers' (per_layer_model_lora). Only the adapters and the value head are
// its parameters, so an optimizer over them never sees the base.
//
// A merged model is a plain model whose target weights are W + (alpha/r) B A
// and whose other weights are the base's: the engine decodes from it at
// full speed, and ar_model_merge_lora rewrites its targets in place when
// the adapters change.
#include <cmath>
#include <cstring>

#include "mamba2.h"
#include "model.h"

using namespace ar;

namespace {

// kModelTarget is the target that is the model's, not a layer's.
constexpr int kModelTarget = AR_LORA_PER_LAYER_MODEL_PROJECTION;
constexpr int kAllTargets = ((1 << AR_LORA_TARGETS) - 1) | kModelTarget;

// frozen shares t's storage and version counter, without gradient.
at::Tensor frozen(const at::Tensor &t) { return t.defined() ? t.detach() : t; }

// share_base gives m base's config, settings and frozen weights.
void share_base(ar_model_s &m, const ar_model_s &base) {
  m.cfg = base.cfg;
  m.dtype = base.dtype;
  m.dev = base.dev;
  m.inv_freq = base.inv_freq;
  m.checkpointing = base.checkpointing;
  m.logits_chunk = base.logits_chunk;
  m.autocast = base.autocast;
  m.attention_mode = base.attention_mode;
  m.embed = frozen(base.embed);
  m.norm = frozen(base.norm);
  m.lm_head = base.cfg.tie_embeddings ? m.embed : frozen(base.lm_head);
  m.global_inv_freq = base.global_inv_freq;
  for (const auto &p : kEmbedParams) m.*p.slot = frozen(base.*p.slot);
  m.layers.resize(base.layers.size());
  for (size_t i = 0; i < base.layers.size(); i++) {
    set_layer_shape(m.layers[i], m.cfg, static_cast<int64_t>(i));
    if (base.cfg.nemotron != 0)
      for (const auto &p : kNemotronLayerParams) m.layers[i].*p.slot = frozen(base.layers[i].*p.slot);
    else
      for (const auto &p : kLayerParams) m.layers[i].*p.slot = frozen(base.layers[i].*p.slot);
    m.layers[i].experts.resize(base.layers[i].experts.size());
    for (size_t e = 0; e < base.layers[i].experts.size(); e++)
      for (const auto &p : kExpertParams) m.layers[i].experts[e].*p.slot = frozen(base.layers[i].experts[e].*p.slot);
  }
}

// list_params names the tensors in owner's slots for the rows m's config
// has (in layer `layer` for a layer's rows, else -1), as ar_model_new
// names the ones it creates.
template <class Owner, size_t N>
void list_params(ar_model_s &m, Owner &owner, const Param<Owner> (&rows)[N], const std::string &prefix,
                 int64_t layer = -1) {
  for (const auto &r : rows) {
    if (!has(r.when, m.cfg, layer)) continue;
    m.names.push_back(prefix + r.key);
    m.params[m.names.back()] = owner.*r.slot;
  }
}

std::string layer_key(const ar_model_config &c, size_t i, int target) {
  return "model.layers." + std::to_string(i) + "." + lora_module(c, target) + ".weight";
}

// merged is target t's weight of layer l of a LoRA model with its adapter
// merged in (merged_weight).
at::Tensor merged(const ar_model_s &lora, const Layer &l, int t) {
  return merged_weight(l.*kLoraSites[t].weight, l.lora[t], lora.lora.scale);
}

void check_lora(const ar_model_s &m, const char *op) {
  TORCH_CHECK(m.lora.rank > 0, op, ": the model is not a LoRA model");
}

}  // namespace

extern "C" {

int ar_model_lora_new(ar_model base, const ar_lora_config *cfg, int value_head, uint64_t seed, ar_model *out,
                      char **err) {
  return guard(err, [&] {
    const auto &c = *cfg;
    TORCH_CHECK(base->lora.rank == 0, "lora_new: the base is itself a LoRA model");
    TORCH_CHECK(c.rank > 0, "lora rank must be positive, got ", c.rank);
    TORCH_CHECK(c.alpha > 0, "lora alpha must be positive, got ", c.alpha);
    TORCH_CHECK(c.dropout >= 0 && c.dropout < 1, "lora dropout must be in [0, 1), got ", c.dropout);
    TORCH_CHECK(c.targets > 0 && (c.targets & ~kAllTargets) == 0,
                "lora targets: want a nonempty set of AR_LORA_* bits, got ", c.targets);
    constexpr int kMLP = AR_LORA_GATE_PROJ | AR_LORA_UP_PROJ | AR_LORA_DOWN_PROJ;
    for (size_t i = 0; i < base->layers.size(); i++)
      TORCH_CHECK(!base->layers[i].router.defined() || (c.targets & kMLP) == 0,
                  "lora targets: gate_proj, up_proj and down_proj are not supported on a model with "
                  "mixture-of-experts layers (layer ", i, " is one): LoRA on the experts and shared experts (mlp.experts.*, mlp.shared_expert.*; Nemotron-H's mixer.experts.*, mixer.shared_experts.*) is not "
                  "implemented; target the attention's q_proj, k_proj, v_proj, o_proj");
    // A target sits on the layers that have its projection; one that no
    // layer has (in_proj_qkv on a model without Gated DeltaNet layers) is
    // refused, as PEFT refuses a target module the model lacks.
    for (int t = 0; t < AR_LORA_TARGETS; t++) {
      if ((c.targets & (1 << t)) == 0) continue;
      bool found = false;
      for (const Layer &l : base->layers) found = found || (l.*kLoraSites[t].weight).defined();
      TORCH_CHECK(found, "lora target ", lora_target_name(t), ": no layer of the model has ",
                  lora_module(base->cfg, t));
    }
    TORCH_CHECK((c.targets & kModelTarget) == 0 || base->per_layer_model_projection.defined(),
                "lora target per_layer_model_projection: the model has no model.per_layer_model_projection "
                "(Gemma 4's, with per-layer inputs)");
    DeviceScope on(base->dev);
    auto m = std::make_unique<ar_model_s>();
    share_base(*m, *base);
    m->cfg.value_head = value_head != 0;
    m->lora.rank = c.rank;
    m->lora.alpha = c.alpha;
    m->lora.dropout = c.dropout;
    m->lora.scale = c.alpha / static_cast<double>(c.rank);
    m->lora.targets = c.targets;
    m->lora.dtype = base->dtype == at::kDouble ? at::kDouble : at::kFloat;
    // Drawn on the CPU from seed, then moved: the same values on any device.
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    const auto host = at::TensorOptions().dtype(m->lora.dtype);
    auto add = [&](const std::string &name, const at::Tensor &drawn) {
      at::Tensor t = drawn.to(m->dev);
      t.set_requires_grad(true);
      m->names.push_back(name);
      m->params[name] = t;
      return t;
    };
    // adapter draws an adapter over w [out, in] under PEFT's key prefix.
    // PEFT's init of lora_A: nn.init.kaiming_uniform_(a=sqrt(5)), whose
    // bound gain * sqrt(3 / fan_in) with gain sqrt(2 / (1 + 5)) is
    // 1 / sqrt(in); lora_B starts at zero.
    auto adapter = [&](const at::Tensor &w, const std::string &key) {
      const int64_t out_dim = w.size(0), in_dim = w.size(1);
      const double bound = 1.0 / std::sqrt(static_cast<double>(in_dim));
      Layer::Adapter ad;
      ad.a = add(key + "A.weight", at::empty({c.rank, in_dim}, host).uniform_(-bound, bound, gen));
      ad.b = add(key + "B.weight", at::zeros({out_dim, c.rank}, host));
      return ad;
    };
    if ((c.targets & kModelTarget) != 0)
      m->per_layer_model_lora =
          adapter(m->per_layer_model_projection, "base_model.model.model.per_layer_model_projection.lora_");
    for (size_t i = 0; i < m->layers.size(); i++) {
      Layer &l = m->layers[i];
      for (int t = 0; t < AR_LORA_TARGETS; t++) {
        if ((c.targets & (1 << t)) == 0) continue;
        const at::Tensor &w = l.*kLoraSites[t].weight;  // [out, in]
        if (!w.defined()) continue;                      // a layer without this projection
        l.lora[t] = adapter(w, "base_model.model.model.layers." + std::to_string(i) + "." + lora_module(m->cfg, t) +
                                   ".lora_");
      }
    }
    if (value_head != 0) {
      m->v_head_w = add(AR_VALUE_HEAD_PREFIX "summary.weight", at::empty({1, m->cfg.hidden}, host).normal_(0, 0.02, gen));
      m->v_head_b = add(AR_VALUE_HEAD_PREFIX "summary.bias", at::zeros({1}, host));
    }
    *out = m.release();
  });
}

int ar_model_set_adapters(ar_model m, int on, char **err) {
  return guard(err, [&] {
    check_lora(*m, "set_adapters");
    m->lora.on = on != 0;
  });
}

int ar_model_merged_new(ar_model lora, ar_model *out, char **err) {
  return guard(err, [&] {
    check_lora(*lora, "merged_new");
    DeviceScope on(lora->dev);
    c10::NoGradGuard no_grad;
    auto m = std::make_unique<ar_model_s>();
    share_base(*m, *lora);
    m->cfg.value_head = 0;
    if (lora->per_layer_model_lora.a.defined())
      m->per_layer_model_projection =
          merged_weight(lora->per_layer_model_projection, lora->per_layer_model_lora, lora->lora.scale);
    for (size_t i = 0; i < m->layers.size(); i++) {
      const Layer &l = lora->layers[i];
      for (int t = 0; t < AR_LORA_TARGETS; t++)
        if (l.lora[t].a.defined()) m->layers[i].*kLoraSites[t].weight = merged(*lora, l, t);
    }
    const bool nemotron = m->cfg.nemotron != 0;
    if (nemotron)
      list_params(*m, *m, kNemotronEmbedParams, "");
    else
      list_params(*m, *m, kEmbedParams, "");
    for (size_t i = 0; i < m->layers.size(); i++) {
      const std::string prefix = "model.layers." + std::to_string(i) + ".";
      const auto layer = static_cast<int64_t>(i);
      if (nemotron)
        list_params(*m, m->layers[i], kNemotronLayerParams, prefix, layer);
      else
        list_params(*m, m->layers[i], kLayerParams, prefix, layer);
      for (size_t e = 0; e < m->layers[i].experts.size(); e++) {
        if (nemotron)
          list_params(*m, m->layers[i].experts[e], kNemotronExpertParams, nemotron_expert_prefix(i, e), layer);
        else
          list_params(*m, m->layers[i].experts[e], kExpertParams, expert_prefix(i, e));
      }
    }
    if (nemotron)
      list_params(*m, *m, kNemotronHeadParams, "");
    else
      list_params(*m, *m, kHeadParams, "");
    *out = m.release();
  });
}

int ar_model_merge_lora(ar_model dst, ar_model lora, char **err) {
  return guard(err, [&] {
    check_lora(*lora, "merge_lora");
    TORCH_CHECK(dst->lora.rank == 0, "merge_lora: the destination is a LoRA model, not a plain one");
    TORCH_CHECK(dst->layers.size() == lora->layers.size(), "merge_lora: the destination has ", dst->layers.size(),
                " layers, the LoRA model ", lora->layers.size());
    TORCH_CHECK(dst->dtype == lora->dtype, "merge_lora: the destination is ", dst->dtype, ", the LoRA model's base ",
                lora->dtype);
    DeviceScope on(dst->dev);
    c10::NoGradGuard no_grad;
    if (lora->per_layer_model_lora.a.defined()) {
      at::Tensor &w = dst->per_layer_model_projection;
      const at::Tensor &base = lora->per_layer_model_projection;
      TORCH_CHECK(w.defined() && w.sizes() == base.sizes() && !w.is_alias_of(base),
                  "merge_lora: the destination's model.per_layer_model_projection.weight is missing, of another "
                  "shape, or the LoRA model's base weight itself; merge into a copy made by ar_model_merged_new");
      w.copy_(merged_weight(base, lora->per_layer_model_lora, lora->lora.scale));
    }
    for (size_t i = 0; i < lora->layers.size(); i++) {
      for (int t = 0; t < AR_LORA_TARGETS; t++) {
        if (!lora->layers[i].lora[t].a.defined()) continue;
        at::Tensor &w = dst->layers[i].*kLoraSites[t].weight;
        const at::Tensor &base = lora->layers[i].*kLoraSites[t].weight;
        TORCH_CHECK(w.sizes() == base.sizes(), "merge_lora: ", layer_key(dst->cfg, i, t), " is ", w.sizes(),
                    " in the destination, ", base.sizes(), " in the LoRA model's base");
        TORCH_CHECK(!w.is_alias_of(base), "merge_lora: the destination's ", layer_key(dst->cfg, i, t),
                    " is the LoRA model's base weight itself, which merging would change; merge into a copy made "
                    "by ar_model_merged_new");
        w.copy_(merged(*lora, lora->layers[i], t));
      }
    }
  });
}

}  // extern "C"
