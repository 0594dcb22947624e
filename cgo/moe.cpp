// moe.cpp: the mixture-of-experts MLP and the routers' load-balancing loss
// (moe.h).
#include "moe.h"

#include <cmath>
#include <limits>

#include "gemma4.h"
#include "layer.h"

namespace ar {

void check_moe_config(const ar_model_config &c) {
  if (c.experts == 0) return;
  TORCH_CHECK(c.experts > 0, "model config: num_experts must not be negative, got ", c.experts);
  TORCH_CHECK(c.experts_per_token > 0 && c.experts_per_token <= c.experts, "model config: num_experts_per_tok ",
              c.experts_per_token, " must be in 1..num_experts (", c.experts, ")");
  TORCH_CHECK(c.moe_intermediate > 0, "model config: moe_intermediate_size must be positive, got ", c.moe_intermediate);
  TORCH_CHECK(c.shared_expert_intermediate >= 0, "model config: shared_expert_intermediate_size must not be negative, got ",
              c.shared_expert_intermediate);
  TORCH_CHECK(c.layers <= AR_MAX_MOE_LAYERS, "model config: a model with mixture-of-experts layers has at most ",
              AR_MAX_MOE_LAYERS, " layers, got ", c.layers);
}

namespace {

// check_replay checks replayed experts [N,k] for N tokens of E experts and
// returns them as int64 on device d.
at::Tensor check_replay(const at::Tensor &replay, int64_t N, int64_t k, int64_t E, const at::Device &d) {
  TORCH_CHECK(replay.dim() == 2 && replay.size(0) == N && replay.size(1) == k, "routing replay: ", replay.sizes(),
              " experts for ", N, " tokens, want [", N, ", ", k, "]");
  at::Tensor chosen = replay.to(d, at::kLong);
  if (chosen.numel() > 0) {
    TORCH_CHECK(chosen.min().item<int64_t>() >= 0 && chosen.max().item<int64_t>() < E,
                "routing replay: an expert outside 0..", E - 1);
    at::Tensor sorted = std::get<0>(chosen.sort(-1));
    TORCH_CHECK(k < 2 || !(sorted.narrow(1, 1, k - 1) == sorted.narrow(1, 0, k - 1)).any().item<bool>(),
                "routing replay: a token takes the same expert twice");
  }
  return chosen;
}

// sigmoid_route is NemotronHTopkRouter's choice over the router logits
// [N,E] (acc_type): scores sigmoid(logits); each token's experts_per_token
// best of scores + e_score_correction_bias among the experts of its
// topk_group best groups (of n_group, a group ranked by the sum of its two
// best), or replay's where defined. Returns the chosen experts and their
// weights, the scores normalised to sum 1 (plus 1e-20) when norm_topk_prob,
// times routed_scaling_factor.
std::pair<at::Tensor, at::Tensor> sigmoid_route(const Layer &l, const ar_model_config &c, const at::Tensor &logits,
                                                const at::Tensor &replay) {
  const int64_t N = logits.size(0), E = c.experts, k = c.experts_per_token;
  at::Tensor scores = at::sigmoid(logits), chosen;
  if (replay.defined()) {
    chosen = check_replay(replay, N, k, E, scores.device());
  } else {
    at::Tensor choice = scores + l.e_score_bias.to(scores.scalar_type());
    if (c.topk_group < c.n_group) {
      const int64_t G = c.n_group;
      at::Tensor best = std::get<0>(choice.view({N, G, E / G}).topk(2, -1)).sum(-1);  // [N,G]
      at::Tensor keep = at::zeros_like(best).scatter_(1, std::get<1>(best.topk(c.topk_group, -1)), 1);
      keep = keep.unsqueeze(-1).expand({N, G, E / G}).reshape({N, E}).to(at::kBool);
      choice = choice.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
    }
    chosen = std::get<1>(choice.topk(k, -1));
  }
  at::Tensor top = scores.gather(-1, chosen);
  if (c.norm_topk_prob) top = top / (top.sum(-1, true) + 1e-20);
  return {top * c.routed_scaling_factor, chosen};
}

}  // namespace

at::Tensor moe_mlp(const Layer &l, const ar_model_config &c, const at::Tensor &h,
                   std::vector<at::Tensor> *router_logits, const at::Tensor &replay,
                   std::vector<at::Tensor> *chosen_out) {
  const int64_t H = h.size(-1), E = c.experts, k = c.experts_per_token;
  const bool nemotron = c.nemotron != 0, gemma = c.gemma != 0;
  at::Tensor x = h.reshape({-1, H});
  at::Tensor top, chosen;  // [N,k]
  if (gemma) {
    // Gemma4TextRouter: on the weightless norm of the layer's input times
    // scale and hidden^-0.5; the top-k renormalised in acc_type, then
    // times per_expert_scale (the weights stay in acc_type).
    at::Tensor r = gemma_norm(x, at::Tensor(), c.rms_eps) * l.router_scale *
                   at::scalar_tensor(std::pow(static_cast<double>(H), -0.5), x.options());
    at::Tensor logits = linear(r, l.router, at::Tensor());  // [N,E]
    if (router_logits != nullptr) router_logits->push_back(logits);
    at::Tensor probs = at::softmax(logits, -1, acc_type(logits.scalar_type()));
    if (replay.defined()) {
      chosen = check_replay(replay, x.size(0), k, E, probs.device());
      top = probs.gather(-1, chosen);
    } else {
      std::tie(top, chosen) = probs.topk(k, -1);
    }
    top = top / top.sum(-1, true) * l.per_expert_scale.index_select(0, chosen.reshape({-1})).view(chosen.sizes());
  } else if (nemotron) {
    // The router in acc_type (transformers keeps it in float32).
    const at::ScalarType ct = acc_type(x.scalar_type());
    at::Tensor logits = linear(x.to(ct), l.router.to(ct), at::Tensor());  // [N,E]
    if (router_logits != nullptr) router_logits->push_back(logits);
    std::tie(top, chosen) = sigmoid_route(l, c, logits, replay);
  } else {
    at::Tensor logits = linear(x, l.router, at::Tensor());  // [N,E]
    if (router_logits != nullptr) router_logits->push_back(logits);
    at::Tensor probs = at::softmax(logits, -1, acc_type(logits.scalar_type()));
    if (replay.defined()) {
      chosen = check_replay(replay, x.size(0), k, E, probs.device());
      top = probs.gather(-1, chosen);
    } else {
      std::tie(top, chosen) = probs.topk(k, -1);
    }
    if (c.norm_topk_prob) top = top / top.sum(-1, true);
    top = top.to(x.scalar_type());
  }
  if (chosen_out != nullptr) chosen_out->push_back(chosen);
  // Nemotron-H's experts run on the latent where it has one, Gemma 4's on
  // the input normed by pre_feedforward_layernorm_2.
  at::Tensor xin = l.fc1_latent.defined() ? linear(x, l.fc1_latent, at::Tensor())
                   : gemma                ? gemma_norm(x, l.pre_feedforward_layernorm_2, c.rms_eps)
                                          : x;
  // The (token, choice) pairs sorted by expert: expert e's are the
  // counts[e] pairs after those of experts before it.
  at::Tensor flat = chosen.reshape({-1});
  at::Tensor order = std::get<1>(at::sort(flat, c10::optional<bool>(true), 0, false));
  at::Tensor counts = at::bincount(flat, c10::nullopt, E).to(at::kCPU);
  at::Tensor token = at::div(order, k, "floor");
  at::Tensor weight = top.reshape({-1}).index_select(0, order).unsqueeze(1);
  at::Tensor out = at::zeros_like(xin);
  const int64_t *n = counts.data_ptr<int64_t>();
  int64_t at_pair = 0;
  for (int64_t e = 0; e < E; e++) {
    if (n[e] == 0) continue;
    at::Tensor idx = token.narrow(0, at_pair, n[e]);
    at::Tensor xe = xin.index_select(0, idx);
    at::Tensor act, down;
    if (gemma) {  // one product by the fused gate|up rows, GELU-tanh
      std::vector<at::Tensor> gu = linear(xe, l.experts_gate_up[e], at::Tensor()).chunk(2, -1);
      act = at::gelu(gu[0], "tanh") * gu[1];
      down = l.experts_down[e];
    } else {
      const Layer::Expert &ex = l.experts[e];
      act = nemotron ? at::relu(linear(xe, ex.up_proj, at::Tensor())).square()
                     : at::silu(linear(xe, ex.gate_proj, at::Tensor())) * linear(xe, ex.up_proj, at::Tensor());
      down = ex.down_proj;
    }
    at::Tensor ye = linear(act, down, at::Tensor()) * weight.narrow(0, at_pair, n[e]);
    out.index_add_(0, idx, ye.to(out.scalar_type()));
    at_pair += n[e];
  }
  if (l.fc2_latent.defined()) out = linear(out, l.fc2_latent, at::Tensor());
  if (nemotron) {
    at::Tensor act = at::relu(linear(x, l.shared_up_proj, at::Tensor())).square();
    out = out + linear(act, l.shared_down_proj, at::Tensor());
  } else if (l.shared_expert_gate.defined()) {
    at::Tensor act = at::silu(linear(x, l.shared_gate_proj, at::Tensor())) * linear(x, l.shared_up_proj, at::Tensor());
    at::Tensor shared = linear(act, l.shared_down_proj, at::Tensor());
    out = out + at::sigmoid(linear(x, l.shared_expert_gate, at::Tensor())) * shared;
  }
  return out.view(h.sizes());
}

at::Tensor router_aux_loss(const std::vector<at::Tensor> &logits, const at::Tensor &mask, int64_t experts,
                           int64_t top_k) {
  TORCH_CHECK(!logits.empty(), "router aux loss: the model has no mixture-of-experts layer");
  const at::ScalarType ct = acc_type(logits[0].scalar_type());
  at::Tensor m = mask.to(ct).reshape({-1});
  at::Tensor choices = at::zeros({experts}, m.options()), probs = at::zeros({experts}, m.options());
  at::Tensor mk = m.repeat_interleave(top_k);
  for (const auto &r : logits) {
    at::Tensor p = at::softmax(r, -1, ct);
    at::Tensor chosen = std::get<1>(p.topk(top_k, -1)).reshape({-1});
    choices = choices.scatter_add(0, chosen, mk);
    probs = probs + (p * m.unsqueeze(1)).sum(0);
  }
  const at::Tensor total = m.sum() * static_cast<double>(logits.size());
  return (choices / total * (probs / total)).sum() * static_cast<double>(experts);
}

}  // namespace ar
