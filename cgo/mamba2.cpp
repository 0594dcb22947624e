// mamba2.cpp: the Mamba-2 mixer of Nemotron-H (mamba2.h).
#include "mamba2.h"

#include <cmath>
#include <limits>

namespace ar {

namespace {

// Sizes is a Mamba-2 layer's geometry, from the config.
struct Sizes {
  int64_t heads, hd, groups, state, inner, conv;
  explicit Sizes(const ar_model_config &c)
      : heads(c.mamba_heads), hd(c.mamba_head_dim), groups(c.mamba_groups), state(c.ssm_state),
        inner(c.mamba_heads * c.mamba_head_dim), conv(c.mamba_heads * c.mamba_head_dim + 2 * c.mamba_groups * c.ssm_state) {}
};

// group_norm is NemotronHRMSNormGated: y times silu(z) in acc_type, RMS
// normalised over each group of y's last dimension, times w, then cast to
// dtype (transformers' scan output is float32 or wider, so the weight
// multiplies there).
at::Tensor group_norm(const at::Tensor &y, const at::Tensor &z, const at::Tensor &w, int64_t groups, double eps,
                      at::ScalarType dtype) {
  const at::ScalarType ct = acc_type(dtype);
  at::Tensor g = y.to(ct) * at::silu(z.to(ct));
  auto sizes = g.sizes().vec();
  std::vector<int64_t> grouped(sizes.begin(), sizes.end() - 1);
  grouped.push_back(groups);
  grouped.push_back(sizes.back() / groups);
  at::Tensor gg = g.view(grouped);
  gg = gg * at::rsqrt(gg.pow(2).mean(-1, true) + eps);
  return (gg.view(sizes) * w.to(ct)).to(dtype);
}

// chunked is the chunked form over x [B,H,T,P] (times dt), the log decays
// a [B,H,T] (dt A), b, c [B,H,T,N] from S [B,H,P,N]: the output [B,H,T,P]
// (without D's skip) and the last state. Within a chunk, output l reads
// token s <= l through exp(sum of a over s+1..l) (C_l . B_s); the state
// enters each chunk once and is advanced once per chunk.
std::pair<at::Tensor, at::Tensor> chunked(at::Tensor x, at::Tensor a, at::Tensor b, at::Tensor c, at::Tensor S,
                                          int64_t chunk) {
  const int64_t B = x.size(0), H = x.size(1), T = x.size(2), P = x.size(3), N = b.size(3);
  const int64_t L = std::min(chunk, T), pad = (L - T % L) % L, n = (T + pad) / L;
  if (pad > 0) {
    // Zero inputs and log decays leave the state as the last real token left it.
    x = at::constant_pad_nd(x, {0, 0, 0, pad});
    b = at::constant_pad_nd(b, {0, 0, 0, pad});
    c = at::constant_pad_nd(c, {0, 0, 0, pad});
    a = at::constant_pad_nd(a, {0, pad});
  }
  x = x.reshape({B, H, n, L, P});
  b = b.reshape({B, H, n, L, N});
  c = c.reshape({B, H, n, L, N});
  at::Tensor cum = a.reshape({B, H, n, L}).cumsum(-1);
  at::Tensor upper = at::ones({L, L}, x.options().dtype(at::kBool)).triu(1);
  // decay[l, s] = exp(cum_l - cum_s) for s <= l, else 0.
  at::Tensor decay = (cum.unsqueeze(-1) - cum.unsqueeze(-2)).masked_fill(upper, -std::numeric_limits<double>::infinity()).exp();
  at::Tensor intra = at::matmul(at::matmul(c, b.transpose(-1, -2)) * decay, x);  // [B,H,n,L,P]
  at::Tensor last = cum.narrow(-1, L - 1, 1);
  at::Tensor xin = x * (last - cum).exp().unsqueeze(-1);                       // what each token leaves at the chunk's end
  at::Tensor cout = c * cum.exp().unsqueeze(-1);                               // what the chunk's start state gives each token
  at::Tensor whole = last.squeeze(-1).exp().unsqueeze(-1).unsqueeze(-1);       // [B,H,n,1,1]
  std::vector<at::Tensor> outs;
  outs.reserve(n);
  for (int64_t i = 0; i < n; i++) {
    outs.push_back(intra.select(2, i) + at::matmul(cout.select(2, i), S.transpose(-1, -2)));
    S = S * whole.select(2, i) + at::matmul(xin.select(2, i).transpose(-1, -2), b.select(2, i));
  }
  return {at::cat(outs, 2).narrow(2, 0, T), S};
}

// recurrent is the recurrence token by token, as chunked's arguments.
std::pair<at::Tensor, at::Tensor> recurrent(const at::Tensor &x, const at::Tensor &a, const at::Tensor &b,
                                            const at::Tensor &c, at::Tensor S) {
  std::vector<at::Tensor> outs;
  for (int64_t t = 0; t < x.size(2); t++) {
    S = S * a.select(2, t).exp().unsqueeze(-1).unsqueeze(-1) + x.select(2, t).unsqueeze(-1) * b.select(2, t).unsqueeze(-2);
    outs.push_back(at::matmul(S, c.select(2, t).unsqueeze(-1)).squeeze(-1));
  }
  return {at::stack(outs, 2), S};
}

}  // namespace

void check_nemotron_config(const ar_model_config &c) {
  TORCH_CHECK(c.layers <= AR_MAX_MOE_LAYERS, "model config: a Nemotron-H model has at most ", AR_MAX_MOE_LAYERS, " layers");
  bool any_mamba = false, any_moe = false;
  for (int64_t i = 0; i < c.layers; i++) {
    TORCH_CHECK(c.block[i] == AR_BLOCK_MAMBA || c.block[i] == AR_BLOCK_ATTENTION || c.block[i] == AR_BLOCK_MLP ||
                    c.block[i] == AR_BLOCK_MOE,
                "model config: layer ", i, " has the unknown Nemotron-H block kind ", static_cast<int>(c.block[i]));
    TORCH_CHECK((c.block[i] == AR_BLOCK_MOE) == sparse(c, i), "model config: layer ", i,
                " is a moe block exactly when it is a mixture-of-experts layer (experts > 0, moe_layer set)");
    any_mamba = any_mamba || c.block[i] == AR_BLOCK_MAMBA;
    any_moe = any_moe || c.block[i] == AR_BLOCK_MOE;
  }
  if (any_moe) {
    TORCH_CHECK(c.shared_expert_intermediate > 0, "model config: moe_shared_expert_intermediate_size must be positive");
    TORCH_CHECK(c.moe_latent >= 0, "model config: moe_latent_size must not be negative");
    TORCH_CHECK(c.n_group > 0 && c.experts % c.n_group == 0 && c.experts / c.n_group >= 2,
                "model config: n_group (", c.n_group, ") must divide n_routed_experts (", c.experts,
                ") into groups of at least 2 (the router sums each group's best two)");
    TORCH_CHECK(c.topk_group > 0 && c.topk_group <= c.n_group, "model config: topk_group (", c.topk_group,
                ") must be in 1..n_group (", c.n_group, ")");
    TORCH_CHECK(c.experts_per_token <= c.topk_group * (c.experts / c.n_group), "model config: num_experts_per_tok (",
                c.experts_per_token, ") exceeds the experts of topk_group groups");
    TORCH_CHECK(std::isfinite(c.routed_scaling_factor), "model config: routed_scaling_factor must be finite");
  }
  if (!any_mamba) return;
  TORCH_CHECK(c.mamba_heads > 0 && c.mamba_head_dim > 0 && c.mamba_groups > 0 && c.ssm_state > 0 &&
                  c.mamba_conv_kernel > 0 && c.mamba_chunk > 0,
              "model config: the Mamba-2 sizes must be positive");
  TORCH_CHECK(c.mamba_heads % c.mamba_groups == 0, "model config: mamba_num_heads (", c.mamba_heads,
              ") must be a multiple of n_groups (", c.mamba_groups, ")");
  TORCH_CHECK(c.mamba_dt_min >= 0 && c.mamba_dt_min <= c.mamba_dt_max, "model config: time_step_limit [", c.mamba_dt_min,
              ", ", c.mamba_dt_max, "] must be an interval of non-negative time steps");
}

at::Tensor mamba_conv(const Layer &l, const at::Tensor &x, const at::Tensor &prev) {
  const int64_t C = x.size(2), K = l.conv1d.size(2), T = x.size(1);
  at::Tensor xt = x.transpose(1, 2).to(l.conv1d.scalar_type());  // [B,C,T]
  const std::vector<int64_t> one{1}, none{0}, left{K - 1};
  at::Tensor y;
  if (prev.defined()) {
    y = at::conv1d(at::cat({prev.to(l.conv1d.scalar_type()), xt}, -1), l.conv1d, l.conv1d_bias, one, none, one, C);
  } else {
    y = at::conv1d(xt, l.conv1d, l.conv1d_bias, one, left, one, C).narrow(-1, 0, T);
  }
  return at::silu(y).to(x.scalar_type()).transpose(1, 2);
}

SSDOut ssd(const ar_model_s &m, const Layer &l, const at::Tensor &xbc, const at::Tensor &dt, const at::Tensor &state,
           bool chunked_form, const at::Tensor &real) {
  const Sizes z(m.cfg);
  const int64_t B = xbc.size(0), T = xbc.size(1), rep = z.heads / z.groups;
  const at::ScalarType ct = acc_type(m.dtype);
  at::Tensor d = at::softplus(dt.to(ct) + l.dt_bias.to(ct));
  if (m.cfg.mamba_dt_min > 0 || m.cfg.mamba_dt_max < std::numeric_limits<double>::infinity())
    d = d.clamp(m.cfg.mamba_dt_min, m.cfg.mamba_dt_max);
  if (real.defined()) d = d * real.unsqueeze(-1).to(ct);
  at::Tensor x = xbc.narrow(-1, 0, z.inner).to(ct).reshape({B, T, z.heads, z.hd});
  // B and C per group, each group serving heads/groups consecutive heads.
  auto per_head = [&](int64_t at_col) {
    at::Tensor g = xbc.narrow(-1, at_col, z.groups * z.state).to(ct).reshape({B, T, z.groups, z.state});
    return (rep == 1 ? g : g.repeat_interleave(rep, 2)).transpose(1, 2);  // [B,H,T,N]
  };
  at::Tensor bh = per_head(z.inner), ch = per_head(z.inner + z.groups * z.state);
  at::Tensor A = -l.A_log.to(ct).exp();                          // [H]
  at::Tensor a = (d * A).transpose(1, 2);                        // [B,H,T]
  at::Tensor xh = (x * d.unsqueeze(-1)).transpose(1, 2);         // [B,H,T,P]
  at::Tensor S = state.defined() ? state.to(ct) : at::zeros({B, z.heads, z.hd, z.state}, x.options());
  auto [y, last] = chunked_form ? chunked(xh, a, bh, ch, S, m.cfg.mamba_chunk) : recurrent(xh, a, bh, ch, S);
  y = y.transpose(1, 2) + x * l.D.to(ct).view({z.heads, 1});    // [B,T,H,P]
  return {y.reshape({B, T, z.inner}), last};
}

at::Tensor mamba2_block(const ar_model_s &m, const Layer &l, const at::Tensor &h, const Scan &scan) {
  const Sizes z(m.cfg);
  const at::Tensor x = scan.keep.defined() ? h * scan.keep.unsqueeze(-1).to(h.scalar_type()) : h;
  const at::Tensor none;
  at::Tensor proj = m.project(l, kLoraInProj, x, none);  // (with its LoRA adapter, where it has one)
  at::Tensor gate = proj.narrow(-1, 0, z.inner);
  at::Tensor y = scan.ssd(proj.narrow(-1, z.inner, z.conv), proj.narrow(-1, z.inner + z.conv, z.heads));
  y = group_norm(y, gate, l.linear_norm, z.groups, m.cfg.rms_eps, h.scalar_type());
  return m.project(l, kLoraOut, y, none);
}

Scan mamba_whole_scan(const ar_model_s &m, const Layer &l, const at::Tensor &keep) {
  auto ssd_run = [&m, &l, keep](const at::Tensor &xbc, const at::Tensor &dt) {
    at::Tensor c = mamba_conv(l, xbc, at::Tensor());
    if (keep.defined()) c = c * keep.unsqueeze(-1).to(c.scalar_type());
    return ssd(m, l, c, dt, at::Tensor(), true).y;
  };
  Scan s;
  s.keep = keep;
  s.ssd = ssd_run;
  return s;
}

Scan mamba_tree_scan(const ar_model_s &m, const Layer &l, const at::Tensor &parents) {
  auto ssd_run = [&m, &l, parents](const at::Tensor &xbc, const at::Tensor &dt) {
    const int64_t B = xbc.size(0), T = xbc.size(1);
    at::Tensor conv = tree_conv(xbc, l.conv1d, l.conv1d_bias, parents);
    at::Tensor par = parents.to(at::kCPU, at::kLong).contiguous();
    std::vector<at::Tensor> rows;
    for (int64_t b = 0; b < B; b++) {
      std::vector<at::Tensor> ends(T), outs;  // ends[t]: the state after token t, where a piece ends there
      for (const Piece &pc : tree_pieces(par.data_ptr<int64_t>() + b * T, T, b)) {
        const int64_t n = pc.e - pc.s;
        SSDOut o = ssd(m, l, conv.narrow(0, b, 1).narrow(1, pc.s, n), dt.narrow(0, b, 1).narrow(1, pc.s, n),
                       pc.from >= 0 ? ends[pc.from] : at::Tensor(), true);
        ends[pc.e - 1] = o.state;
        outs.push_back(o.y);
      }
      rows.push_back(outs.size() == 1 ? outs[0] : at::cat(outs, 1));
    }
    return B == 1 ? rows[0] : at::cat(rows, 0);
  };
  Scan s;
  s.ssd = ssd_run;
  return s;
}

}  // namespace ar
