// moe.cpp: the mixture-of-experts MLP and the routers' load-balancing loss
// (moe.h).
#include "moe.h"

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

at::Tensor moe_mlp(const Layer &l, const ar_model_config &c, const at::Tensor &h,
                   std::vector<at::Tensor> *router_logits, const at::Tensor &replay,
                   std::vector<at::Tensor> *chosen_out) {
  const int64_t H = h.size(-1), E = c.experts, k = c.experts_per_token;
  at::Tensor x = h.reshape({-1, H});
  at::Tensor logits = linear(x, l.router, at::Tensor());  // [N,E]
  if (router_logits != nullptr) router_logits->push_back(logits);
  at::Tensor probs = at::softmax(logits, -1, acc_type(logits.scalar_type()));
  at::Tensor top, chosen;  // [N,k]
  if (replay.defined()) {
    TORCH_CHECK(replay.dim() == 2 && replay.size(0) == x.size(0) && replay.size(1) == k, "routing replay: ",
                replay.sizes(), " experts for ", x.size(0), " tokens, want [", x.size(0), ", ", k, "]");
    chosen = replay.to(probs.device(), at::kLong);
    if (chosen.numel() > 0) {
      TORCH_CHECK(chosen.min().item<int64_t>() >= 0 && chosen.max().item<int64_t>() < E,
                  "routing replay: an expert outside 0..", E - 1);
      at::Tensor sorted = std::get<0>(chosen.sort(-1));
      TORCH_CHECK(k < 2 || !(sorted.narrow(1, 1, k - 1) == sorted.narrow(1, 0, k - 1)).any().item<bool>(),
                  "routing replay: a token takes the same expert twice");
    }
    top = probs.gather(-1, chosen);
  } else {
    std::tie(top, chosen) = probs.topk(k, -1);
  }
  if (chosen_out != nullptr) chosen_out->push_back(chosen);
  if (c.norm_topk_prob) top = top / top.sum(-1, true);
  top = top.to(x.scalar_type());
  // The (token, choice) pairs sorted by expert: expert e's are the
  // counts[e] pairs after those of experts before it.
  at::Tensor flat = chosen.reshape({-1});
  at::Tensor order = std::get<1>(at::sort(flat, c10::optional<bool>(true), 0, false));
  at::Tensor counts = at::bincount(flat, c10::nullopt, E).to(at::kCPU);
  at::Tensor token = at::div(order, k, "floor");
  at::Tensor weight = top.reshape({-1}).index_select(0, order).unsqueeze(1);
  at::Tensor out = at::zeros_like(x);
  const int64_t *n = counts.data_ptr<int64_t>();
  int64_t at_pair = 0;
  for (int64_t e = 0; e < E; e++) {
    if (n[e] == 0) continue;
    const Layer::Expert &ex = l.experts[e];
    at::Tensor idx = token.narrow(0, at_pair, n[e]);
    at::Tensor xe = x.index_select(0, idx);
    at::Tensor act = at::silu(linear(xe, ex.gate_proj, at::Tensor())) * linear(xe, ex.up_proj, at::Tensor());
    at::Tensor ye = linear(act, ex.down_proj, at::Tensor()) * weight.narrow(0, at_pair, n[e]);
    out.index_add_(0, idx, ye.to(out.scalar_type()));
    at_pair += n[e];
  }
  if (l.shared_expert_gate.defined()) {
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
