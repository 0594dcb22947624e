// mamba2.h: Nemotron-H (transformers' nemotron_h: Nemotron 3 Nano and its
// kin), a stack of single blocks, x + mixer(norm(x)), whose mixer is a
// Mamba-2 layer, attention without RoPE, a relu² MLP or a mixture of
// relu² experts (moe.h's moe_mlp, NemotronHMoE), as transformers
// 5's NemotronHForCausalLM computes them. Its Mamba-2 mixer (Dao and Gu
// 2024, arXiv:2405.21060), NemotronHMamba2Mixer:
//   z|xBC|dt = in_proj(h)          (z: heads*head_dim, xBC: the conv's
//                                   channels, dt: one per head)
//   x|B|C    = silu(conv1d(xBC))   (depthwise, causal, kernel K, a bias)
//   per head a head_dim x ssm_state state S; B, C of the head's group;
//   per token t, with dt_t = clamp(softplus(dt_t + dt_bias)) and
//   A = -exp(A_log):
//           S = exp(dt_t A) S + dt_t x_t B_t^T;   y_t = S C_t + D x_t
//   out      = out_proj(GroupRMSNorm(y * silu(z)) * norm.weight)
// (the norm over each of n_groups groups of heads*head_dim/n_groups).
// The state runs over a sequence in transformers' chunked form (training,
// prefill: chunks of chunk_size tokens as matrix products), or token by
// token; both start from a given state and return the last one.
#pragma once

#include "deltanet.h"
#include "layer.h"

namespace ar {

// The parameter tables of a Nemotron-H model (model.h's Param), in place
// of kEmbedParams, kLayerParams and kHeadParams, in transformers' order.
// The names are transformers' (model.*); the checkpoint holds them under
// backbone.*, as the published ones do (the Go side maps the prefix).
inline const Param<ar_model_s> kNemotronEmbedParams[] = {
    {"model.embeddings.weight", &ar_model_s::embed, {kVocab, kHidden}, kAlways},
};
inline const Param<Layer> kNemotronLayerParams[] = {
    // key                    slot                  shape                      when
    {"norm.weight",           &Layer::input_layernorm, {kHidden},              kAlways},
    {"mixer.dt_bias",         &Layer::dt_bias,      {kMambaHeads},             kMambaBlock},
    {"mixer.A_log",           &Layer::A_log,        {kMambaHeads},             kMambaBlock},
    {"mixer.D",               &Layer::D,            {kMambaHeads},             kMambaBlock},
    {"mixer.conv1d.weight",   &Layer::conv1d,       {kMambaConv, kMambaTaps},  kMambaBlock},
    {"mixer.conv1d.bias",     &Layer::conv1d_bias,  {kMambaConv},              kMambaConvBias},
    {"mixer.in_proj.weight",  &Layer::in_proj,      {kMambaProj, kHidden},     kMambaBlock},
    {"mixer.norm.weight",     &Layer::linear_norm,  {kMambaInner},             kMambaBlock},
    {"mixer.out_proj.weight", &Layer::out_proj,     {kHidden, kMambaInner},    kMambaBlock},
    {"mixer.q_proj.weight",   &Layer::q_proj,       {kQ, kHidden},             kAttnBlock},
    {"mixer.k_proj.weight",   &Layer::k_proj,       {kKV, kHidden},            kAttnBlock},
    {"mixer.v_proj.weight",   &Layer::v_proj,       {kKV, kHidden},            kAttnBlock},
    {"mixer.o_proj.weight",   &Layer::o_proj,       {kHidden, kQ},             kAttnBlock},
    {"mixer.up_proj.weight",  &Layer::up_proj,      {kInter, kHidden},         kMLPBlock},
    {"mixer.down_proj.weight", &Layer::down_proj,   {kHidden, kInter},         kMLPBlock},
    {"mixer.gate.weight",     &Layer::router,       {kExperts, kHidden},       kMoEBlock},
    {"mixer.gate.e_score_correction_bias", &Layer::e_score_bias, {kExperts},   kMoEBlock},
    {"mixer.shared_experts.up_proj.weight",   &Layer::shared_up_proj,   {kSharedInter, kHidden}, kMoEBlock},
    {"mixer.shared_experts.down_proj.weight", &Layer::shared_down_proj, {kHidden, kSharedInter}, kMoEBlock},
    {"mixer.fc1_latent_proj.weight", &Layer::fc1_latent, {kMoeLatent, kHidden}, kMoELatent},
    {"mixer.fc2_latent_proj.weight", &Layer::fc2_latent, {kHidden, kMoeLatent}, kMoELatent},
};
// A moe block's experts: relu² MLPs on the latent (or the hidden state),
// under model.layers.{i}.mixer.experts.{e}. as save_pretrained writes
// them (transformers stacks them into mixer.experts.up_proj and down_proj
// as it loads).
inline const Param<Layer::Expert> kNemotronExpertParams[] = {
    {"up_proj.weight",   &Layer::Expert::up_proj,   {kMoeInter, kMoeIn}, kAlways},
    {"down_proj.weight", &Layer::Expert::down_proj, {kMoeIn, kMoeInter}, kAlways},
};
// nemotron_expert_prefix is the key prefix of expert e of layer i.
inline std::string nemotron_expert_prefix(size_t i, size_t e) {
  return "model.layers." + std::to_string(i) + ".mixer.experts." + std::to_string(e) + ".";
}
inline const Param<ar_model_s> kNemotronHeadParams[] = {
    {"model.norm_f.weight",                 &ar_model_s::norm,     {kHidden},         kAlways},
    {"lm_head.weight",                      &ar_model_s::lm_head,  {kVocab, kHidden}, kUntied},
    {AR_VALUE_HEAD_PREFIX "summary.weight", &ar_model_s::v_head_w, {kOne, kHidden},   kValueHead},
    {AR_VALUE_HEAD_PREFIX "summary.bias",   &ar_model_s::v_head_b, {kOne},            kValueHead},
};

// check_nemotron_config refuses a Nemotron-H config whose blocks, Mamba-2
// sizes or routing groups do not fit.
void check_nemotron_config(const ar_model_config &c);

// mamba2_block is the Mamba-2 mixer of layer l over its normed input h
// [B,T,H], without the residual; scan.ssd runs the sequence part (the
// conv and the state space scan) with the caller's state.
at::Tensor mamba2_block(const ar_model_s &m, const Layer &l, const at::Tensor &h, const Scan &scan);

// SSDOut is the scan's output y [B,T,heads*head_dim] (D's skip included,
// in acc_type) and its last state [B,heads,head_dim,ssm_state] (acc_type).
struct SSDOut {
  at::Tensor y, state;
};

// ssd runs the state space recurrence of layer l over the conv's output
// xbc [B,T,conv channels] and the raw time steps dt [B,T,heads] (before
// dt_bias and softplus), from state (zeros where undefined): in the
// chunked form, or token by token. real [B,T] (bool), where defined,
// marks the tokens that advance the state: the others (a ragged batch's
// padding) get a zero time step, which leaves it as it is.
SSDOut ssd(const ar_model_s &m, const Layer &l, const at::Tensor &xbc, const at::Tensor &dt, const at::Tensor &state,
           bool chunked, const at::Tensor &real = at::Tensor());

// mamba_conv is layer l's depthwise causal conv of x [B,T,C] with its
// bias and SiLU, in x's dtype: output t reads inputs t-K+1..t, those
// before the first from prev [B,C,K-1] (zeros where prev is undefined).
at::Tensor mamba_conv(const Layer &l, const at::Tensor &x, const at::Tensor &prev);

// mamba_whole_scan is the scan of Mamba-2 layer l over whole sequences
// from the zero state (keep [B,T], where defined, marks the real tokens
// of right-padded rows: the mixer's input and the conv's output are
// zeroed at the others, as transformers' apply_mask_to_padding_states).
Scan mamba_whole_scan(const ar_model_s &m, const Layer &l, const at::Tensor &keep);

// mamba_tree_scan is the scan of Mamba-2 layer l over packed rows whose
// tokens form prefix trees (parents as deltanet.h's tree_scan): a token's
// conv reads its ancestors and its state continues its parent's.
Scan mamba_tree_scan(const ar_model_s &m, const Layer &l, const at::Tensor &parents);

}  // namespace ar
