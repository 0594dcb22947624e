// deltanet.cpp: the Gated DeltaNet layer (deltanet.h).
#include "deltanet.h"

#include <cmath>
#include <limits>

namespace ar {

namespace {

// kChunk is the chunked form's chunk length, transformers' chunk_size.
constexpr int64_t kChunk = 64;

// l2norm is x over its last dimension times rsqrt(sum x^2 + 1e-6), as
// transformers' (and the FLA library's) l2norm.
at::Tensor l2norm(const at::Tensor &x) { return x * at::rsqrt((x * x).sum(-1, true) + 1e-6); }

// gated_norm is Qwen3_5RMSNormGated: RMSNorm of o [..,v_dim] by w, then
// times silu(z) in acc_type, cast back to o's dtype.
at::Tensor gated_norm(const at::Tensor &o, const at::Tensor &z, const at::Tensor &w, double eps) {
  const at::ScalarType ct = acc_type(o.scalar_type());
  return (rms_norm(o, w, eps).to(ct) * at::silu(z.to(ct))).to(o.scalar_type());
}

// chunked is the chunked form over q, k [B,H,T,dk], v [B,H,T,dv], g,
// beta [B,H,T] (acc_type, q scaled) from S [B,H,dk,dv]: the output
// [B,H,T,dv] and the last state. Each chunk of 64 tokens solves its
// within-chunk updates as a unit-lower-triangular system (the UT
// transform), then reads and advances the state once.
std::pair<at::Tensor, at::Tensor> chunked(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor g, at::Tensor beta,
                                          at::Tensor S) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), dk = q.size(3), dv = v.size(3);
  const int64_t pad = (kChunk - T % kChunk) % kChunk, N = (T + pad) / kChunk;
  if (pad > 0) {
    // Padding with zero keys, values, rates and log decays leaves the
    // state as the last real token left it.
    q = at::constant_pad_nd(q, {0, 0, 0, pad});
    k = at::constant_pad_nd(k, {0, 0, 0, pad});
    v = at::constant_pad_nd(v, {0, 0, 0, pad});
    g = at::constant_pad_nd(g, {0, pad});
    beta = at::constant_pad_nd(beta, {0, pad});
  }
  at::Tensor vb = (v * beta.unsqueeze(-1)).view({B, H, N, kChunk, dv});
  at::Tensor kb = (k * beta.unsqueeze(-1)).view({B, H, N, kChunk, dk});
  q = q.reshape({B, H, N, kChunk, dk});
  k = k.reshape({B, H, N, kChunk, dk});
  at::Tensor cum = g.reshape({B, H, N, kChunk}).cumsum(-1);
  at::Tensor upper = at::ones({kChunk, kChunk}, q.options().dtype(at::kBool)).triu(1);
  // pair[i, j] = exp(cum_i - cum_j) for j <= i: the decay from j to i.
  at::Tensor pair = (cum.unsqueeze(-1) - cum.unsqueeze(-2)).masked_fill(upper, -std::numeric_limits<double>::infinity()).exp();
  at::Tensor ut = at::matmul(kb, k.transpose(-1, -2)) * pair;
  at::Tensor intra = at::matmul(q, k.transpose(-1, -2)) * pair;
  at::Tensor dkb = kb * cum.exp().unsqueeze(-1);
  at::Tensor u = at::linalg_solve_triangular(ut, vb, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
  at::Tensor w = at::linalg_solve_triangular(ut, dkb, false, true, true);
  q = q * cum.exp().unsqueeze(-1);
  k = k * (cum.narrow(-1, kChunk - 1, 1) - cum).exp().unsqueeze(-1);
  at::Tensor decay = cum.select(-1, kChunk - 1).exp().unsqueeze(-1).unsqueeze(-1);  // [B,H,N,1,1]
  std::vector<at::Tensor> outs;
  outs.reserve(N);
  for (int64_t i = 0; i < N; i++) {
    at::Tensor vn = u.select(2, i) - at::matmul(w.select(2, i), S);
    outs.push_back(at::matmul(q.select(2, i), S) + at::matmul(intra.select(2, i), vn));
    S = S * decay.select(2, i) + at::matmul(k.select(2, i).transpose(-1, -2), vn);
  }
  return {at::cat(outs, 2).narrow(2, 0, T), S};
}

// recurrent is the rule token by token, as chunked's arguments.
std::pair<at::Tensor, at::Tensor> recurrent(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                                            const at::Tensor &g, const at::Tensor &beta, at::Tensor S) {
  std::vector<at::Tensor> outs;
  for (int64_t t = 0; t < q.size(2); t++) {
    at::Tensor qt = q.select(2, t), kt = k.select(2, t), vt = v.select(2, t);
    S = S * g.select(2, t).exp().unsqueeze(-1).unsqueeze(-1);
    at::Tensor mem = (S * kt.unsqueeze(-1)).sum(-2);
    at::Tensor delta = (vt - mem) * beta.select(2, t).unsqueeze(-1);
    S = S + kt.unsqueeze(-1) * delta.unsqueeze(-2);
    outs.push_back((S * qt.unsqueeze(-1)).sum(-2));
  }
  return {at::stack(outs, 2), S};
}

}  // namespace

at::Tensor causal_conv(const at::Tensor &x, const at::Tensor &w, const at::Tensor &prev) {
  const int64_t C = x.size(2), K = w.size(2), T = x.size(1);
  at::Tensor xt = x.transpose(1, 2).to(w.scalar_type());  // [B,C,T]
  const std::vector<int64_t> one{1}, none{0}, left{K - 1};
  at::Tensor y;
  if (prev.defined()) {
    y = at::conv1d(at::cat({prev.to(w.scalar_type()), xt}, -1), w, at::Tensor(), one, none, one, C);
  } else {
    y = at::conv1d(xt, w, at::Tensor(), one, left, one, C).narrow(-1, 0, T);
  }
  return at::silu(y).to(x.scalar_type()).transpose(1, 2);
}

DeltaOut delta_rule(const ar_model_s &m, const at::Tensor &qkv, const at::Tensor &g, const at::Tensor &beta,
                    const at::Tensor &state, bool chunked_form) {
  const auto &c = m.cfg;
  const int64_t B = qkv.size(0), T = qkv.size(1), nk = c.linear_k_heads, nv = c.linear_v_heads;
  const int64_t dk = c.linear_k_dim, dv = c.linear_v_dim;
  const at::ScalarType ct = acc_type(m.dtype);
  at::Tensor q = qkv.narrow(-1, 0, nk * dk).reshape({B, T, nk, dk});
  at::Tensor k = qkv.narrow(-1, nk * dk, nk * dk).reshape({B, T, nk, dk});
  at::Tensor v = qkv.narrow(-1, 2 * nk * dk, nv * dv).reshape({B, T, nv, dv});
  if (nv != nk) {
    q = q.repeat_interleave(nv / nk, 2);
    k = k.repeat_interleave(nv / nk, 2);
  }
  auto heads_first = [&](const at::Tensor &x) { return x.transpose(1, 2).to(ct).contiguous(); };
  q = l2norm(heads_first(q)) * (1.0 / std::sqrt(static_cast<double>(dk)));
  k = l2norm(heads_first(k));
  v = heads_first(v);
  at::Tensor gh = heads_first(g), bh = heads_first(beta);
  at::Tensor S = state.defined() ? state.to(ct) : at::zeros({B, nv, dk, dv}, q.options());
  auto [o, last] = chunked_form ? chunked(q, k, v, gh, bh, S) : recurrent(q, k, v, gh, bh, S);
  return {o.transpose(1, 2).to(qkv.scalar_type()), last};
}

at::Tensor deltanet_block(const ar_model_s &m, const Layer &l, const at::Tensor &h, const Scan &scan) {
  const auto &c = m.cfg;
  const int64_t B = h.size(0), T = h.size(1), nv = c.linear_v_heads, dv = c.linear_v_dim;
  const at::ScalarType ct = acc_type(m.dtype);
  const at::Tensor x = scan.keep.defined() ? h * scan.keep.unsqueeze(-1).to(h.scalar_type()) : h;
  // The projections, each with its LoRA adapter on a LoRA model
  // (ar_model_s::project), in the order transformers computes them.
  const at::Tensor none;
  at::Tensor mixed = m.project(l, kLoraInQKV, x, none);
  at::Tensor z = m.project(l, kLoraInZ, x, none).reshape({B, T, nv, dv});
  at::Tensor beta = at::sigmoid(m.project(l, kLoraInB, x, none)).to(ct);
  at::Tensor g = -l.A_log.to(ct).exp() * at::softplus(m.project(l, kLoraInA, x, none).to(ct) + l.dt_bias.to(ct));
  at::Tensor o = scan.run(mixed, g, beta);  // [B,T,nv,dv]
  o = gated_norm(o, z, l.linear_norm, c.rms_eps);
  return m.project(l, kLoraOut, o.reshape({B, T, nv * dv}), none);
}

Scan whole_scan(const ar_model_s &m, const Layer &l, const at::Tensor &keep) {
  auto run = [&m, &l](const at::Tensor &mixed, const at::Tensor &g, const at::Tensor &beta) {
    return delta_rule(m, causal_conv(mixed, l.conv1d, at::Tensor()), g, beta, at::Tensor(), true).out;
  };
  return {run, keep};
}

at::Tensor tree_conv(const at::Tensor &mixed, const at::Tensor &w3, const at::Tensor &bias, const at::Tensor &parents) {
  const int64_t B = mixed.size(0), T = mixed.size(1), C = mixed.size(2), K = w3.size(2);
  at::Tensor par = parents.to(at::kCPU, at::kLong).contiguous();
  const int64_t *p = par.data_ptr<int64_t>();
  // Output t sums tap K-1-j times its j-th ancestor (t itself for j = 0),
  // a zero row where the ancestors run out.
  std::vector<int64_t> anc(K * B * T);
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++) {
      int64_t a = t;
      for (int64_t j = 0; j < K; j++) {
        anc[j * B * T + b * T + t] = a >= 0 ? b * T + a : B * T;
        if (a >= 0) a = p[b * T + a];
      }
    }
  at::Tensor idx = at::tensor(anc, at::kLong).to(mixed.device()).view({K, B * T});
  at::Tensor w = w3.squeeze(1);  // [C,K]
  at::Tensor flat = at::cat({mixed.reshape({B * T, C}).to(w.scalar_type()), at::zeros({1, C}, mixed.options().dtype(w.scalar_type()))});
  at::Tensor acc;
  for (int64_t j = 0; j < K; j++) {
    at::Tensor term = flat.index_select(0, idx[j]) * w.select(1, K - 1 - j);
    acc = acc.defined() ? acc + term : term;
  }
  if (bias.defined()) acc = acc + bias;
  return at::silu(acc).to(mixed.scalar_type()).view({B, T, C});
}

std::vector<Piece> tree_pieces(const int64_t *pb, int64_t T, int64_t row) {
  std::vector<bool> branch(T, false);
  for (int64_t t = 0; t < T; t++) {
    TORCH_CHECK(pb[t] < t, "packed forward: token ", t, " of row ", row, " has parent ", pb[t], ", not an earlier token");
    if (pb[t] >= 0 && pb[t] != t - 1) branch[pb[t]] = true;
  }
  std::vector<Piece> out;
  std::vector<bool> ends(T, false);
  for (int64_t s = 0; s < T;) {
    int64_t e = s + 1;
    while (e < T && pb[e] == e - 1 && !branch[e - 1]) e++;
    TORCH_CHECK(pb[s] < 0 || ends[pb[s]], "packed forward: the state before token ", s, " of row ", row, " is missing");
    out.push_back({s, e, pb[s]});
    ends[e - 1] = true;
    s = e;
  }
  return out;
}

Scan tree_scan(const ar_model_s &m, const Layer &l, const at::Tensor &parents) {
  auto run = [&m, &l, parents](const at::Tensor &mixed, const at::Tensor &g, const at::Tensor &beta) {
    const int64_t B = mixed.size(0), T = mixed.size(1);
    at::Tensor conv = tree_conv(mixed, l.conv1d, at::Tensor(), parents);
    at::Tensor par = parents.to(at::kCPU, at::kLong).contiguous();
    std::vector<at::Tensor> rows;
    for (int64_t b = 0; b < B; b++) {
      std::vector<at::Tensor> ends(T), outs;  // ends[t]: the state after token t, where a piece ends there
      for (const Piece &pc : tree_pieces(par.data_ptr<int64_t>() + b * T, T, b)) {
        const int64_t n = pc.e - pc.s;
        DeltaOut d = delta_rule(m, conv.narrow(0, b, 1).narrow(1, pc.s, n), g.narrow(0, b, 1).narrow(1, pc.s, n),
                                beta.narrow(0, b, 1).narrow(1, pc.s, n), pc.from >= 0 ? ends[pc.from] : at::Tensor(), true);
        ends[pc.e - 1] = d.state;
        outs.push_back(d.out);
      }
      rows.push_back(outs.size() == 1 ? outs[0] : at::cat(outs, 1));
    }
    return B == 1 ? rows[0] : at::cat(rows, 0);
  };
  return {run, at::Tensor()};
}

}  // namespace ar
