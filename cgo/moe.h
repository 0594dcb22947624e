// moe.h: the mixture-of-experts MLP of a sparse layer (Qwen3 MoE, Qwen3.5
// MoE) and the routers' load-balancing loss, as transformers 5's qwen3_moe
// and qwen3_5_moe compute them (Qwen3MoeSparseMoeBlock,
// Qwen3_5MoeSparseMoeBlock, load_balancing_loss_func: the same function in
// both).
#pragma once

#include <vector>

#include "model.h"

namespace ar {

// check_moe_config refuses a config whose mixture-of-experts fields do not
// make a model: an expert count, top-k or width out of range, or sparse
// layers beyond AR_MAX_MOE_LAYERS.
void check_moe_config(const ar_model_config &c);

// moe_mlp is sparse layer l's MLP on its normed input h [..,H]: the router
// logits r = h W_gate^T; probabilities softmax(r) in acc_type; each token's
// experts_per_token most probable experts, weighted by their probabilities
// (divided by their sum when norm_topk_prob) cast to h's dtype; the sum
// over them of weight * down(silu(gate(h)) * up(h)) by that expert's
// weights; plus, where the layer has a shared expert (Qwen3.5 MoE),
// sigmoid(shared_expert_gate(h)) * down(silu(gate(h)) * up(h)) by the
// shared expert's weights, for every token. Each expert runs once on the
// tokens that chose it (their indices come to the host: one
// synchronisation per layer). When router_logits is not null, r [N,E] (N
// the tokens) is appended to it.
//
// Routing replay: where replay [N,k] (int64, on h's device) is defined,
// token n takes the experts replay[n] instead of its k most probable ones,
// each weighted by its probability under this router (normalised over the
// k when norm_topk_prob), so the router still learns through the weights;
// the experts must be distinct and in 0..experts-1. When chosen is not
// null, the experts the tokens took [N,k] (int64) are appended to it.
//
// A Nemotron-H moe block (cfg.nemotron) routes as NemotronHTopkRouter
// instead (sigmoid scores, the correction bias, group-limited choice,
// routed_scaling_factor: moe.cpp's sigmoid_route; r in acc_type), its
// experts are relu² MLPs, down(relu(up(x))^2), on fc1_latent_proj(h) where
// it has the latent projection (their sum then through fc2_latent_proj),
// and its shared expert, a relu² MLP, is added ungated.
// A Gemma 4 MoE layer (cfg.gemma, enable_moe_block) routes as
// Gemma4TextRouter on h, the layer's input before any norm: the logits are
// router.proj of gemma_norm(h) (no weight) times router.scale and
// hidden^-0.5; the top-k probabilities, divided by their sum, are
// multiplied by per_expert_scale and stay in acc_type; its experts are
// GELU-tanh MLPs by the fused experts.gate_up_proj and experts.down_proj
// on pre_feedforward_layernorm_2(h). Its dense MLP and the norms around
// both are decoder_layer's.
at::Tensor moe_mlp(const Layer &l, const ar_model_config &c, const at::Tensor &h,
                   std::vector<at::Tensor> *router_logits, const at::Tensor &replay = at::Tensor(),
                   std::vector<at::Tensor> *chosen_out = nullptr);

// router_aux_loss is transformers' load-balancing loss over the router
// logits of every sparse layer (each [N,E]) for the tokens where mask [N]
// is 1: experts * sum_e f_e P_e, where f_e is the count of top-k choices
// of expert e and P_e the sum of its softmax probabilities, each over
// every layer's masked tokens and divided by their number (layers x
// tokens). A scalar in acc_type, with a graph to the logits.
at::Tensor router_aux_loss(const std::vector<at::Tensor> &logits, const at::Tensor &mask, int64_t experts,
                           int64_t top_k);

}  // namespace ar
