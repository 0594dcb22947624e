// logprobs.cpp: the log-probabilities of the taken tokens and the entropy
// of each position's distribution, from the last hidden states and the LM
// head, a chunk of tokens at a time, as fused linear cross-entropy kernels
// do: the [tokens, vocabulary] logits are never held whole, in the forward
// or in the backward pass.
//
// For a row h (one token) and the LM head W [V,H]:
//   z = W h / T                 (T the temperature; z in float32, float64 for float64 h)
//   lse = log sum_j exp(z_j)
//   log p_j = z_j - lse,  p_j = exp(log p_j)
//   lp = log p_y                (y the taken token)
//   H = -sum_j p_j log p_j
// The forward keeps h, W, the targets and lse (one float per token).
//
// Backward. From d lse / d z_k = p_k:
//   d log p_j / d z_k = [j=k] - p_k,   d p_j / d z_k = p_j ([j=k] - p_k).
// So d lp / d z_k = [k=y] - p_k (onehot - p), and
//   d H / d z_k = -sum_j (d p_j/d z_k) log p_j - sum_j d p_j/d z_k
//               = -(p_k log p_k - p_k sum_j p_j log p_j) - (p_k - p_k sum_j p_j)
//               = -p_k log p_k - p_k H = -p_k (log p_k + H)
// (the second sum vanishes because sum_j p_j = 1). With upstream gradients
// g (of lp) and e (of H), per row:
//   dz = g (onehot_y - p) - e p (log p + H) = -p (g + e (log p + H)) + g onehot_y
//   d/d(W h) = dz / T,   grad_h = (dz / T) W,   grad_W += (dz / T)^T h.
// The backward recomputes each chunk's z from h and W, p from z and the
// saved lse, and H from p, then forms dz and the two products; a tied LM
// head (the embedding) receives grad_W through the autograd graph like any
// other use of it.
//
// A frozen head (a LoRA model's) with no entropy term in the loss needs only
// grad_h = g (onehot_y - p) W / T, whose every factor but g the forward has
// at hand. So the forward keeps d lp / d h = (onehot_y - p) W / T per row
// ([N,H], like h), and the backward scales it by g: one product of a chunk
// with W instead of the recomputation's two.
//
// Only the tokens are chunked: a chunk of c tokens holds c x V floats (two
// such buffers at a time), which the chunk size alone bounds; splitting the
// vocabulary too (an online log-sum-exp) would only matter where one row of
// V floats per token is too much.
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "model.h"

namespace ar {
namespace {

// compute_dtype is the dtype the logits' products run in: autocast's when
// it is on, else the LM head's.
at::ScalarType compute_dtype(const at::Tensor &w, at::ScalarType autocast) {
  return autocast != at::ScalarType::Undefined ? autocast : w.scalar_type();
}

// scaled is x / temperature in place (x a fresh tensor); at temperature 1,
// where the division changes no value, x untouched.
at::Tensor scaled(at::Tensor x, double temperature) { return temperature == 1 ? x : x.div_(temperature); }

// chunk_logits is z = hc wc^T / temperature [c,V] in float32 (float64 for
// float64 inputs), for hc and wc in the compute dtype.
at::Tensor chunk_logits(const at::Tensor &hc, const at::Tensor &wc, double temperature) {
  return scaled(at::linear(hc, wc).to(acc_type(hc.scalar_type())), temperature);  // a fresh tensor
}

// log_sum_exp is each row's log sum_j exp(z_j) for z [c,V], shifted by the
// row's maximum. (at::logsumexp has no kernel on the meta device in
// libtorch 1.13, which tests use as a second device.)
at::Tensor log_sum_exp(const at::Tensor &z) {
  at::Tensor m = z.amax(1, true);
  return (z - m).exp_().sum(1).log_().add_(m.squeeze(1));
}

// forward_chunks fills lp [N], ent [N] (when defined), lse [N] and dlp_dh
// [N,H] (when defined: d lp / d h, see the header) for rows h [N,H] in the
// compute dtype.
void forward_chunks(const at::Tensor &h, const at::Tensor &wc, const at::Tensor &targets, double temperature,
                    int64_t chunk, at::Tensor &lp, at::Tensor &ent, at::Tensor &lse, at::Tensor &dlp_dh) {
  const int64_t N = h.size(0);
  for (int64_t s = 0; s < N; s += chunk) {
    const int64_t c = std::min(chunk, N - s);
    at::Tensor z = chunk_logits(h.narrow(0, s, c), wc, temperature);
    at::Tensor l = log_sum_exp(z);
    at::Tensor y = targets.narrow(0, s, c).unsqueeze(1);
    lse.narrow(0, s, c).copy_(l);
    lp.narrow(0, s, c).copy_(z.gather(1, y).squeeze(1) - l);
    if (!ent.defined() && !dlp_dh.defined()) continue;
    at::Tensor logp = z.sub_(l.unsqueeze(1));
    at::Tensor p = logp.exp();
    if (!dlp_dh.defined()) {
      ent.narrow(0, s, c).copy_(p.mul_(logp).sum(1).neg_());
      continue;
    }
    at::Tensor dz = p.neg_().scatter_add_(1, y, at::ones({c, 1}, p.options()));  // onehot_y - p
    // With p's buffer taken: sum_j dz_j log p_j = log p_y + H.
    if (ent.defined()) ent.narrow(0, s, c).copy_(logp.mul_(dz).sum(1).sub_(lp.narrow(0, s, c)));
    dlp_dh.narrow(0, s, c).copy_(at::mm(scaled(dz, temperature).to(wc.scalar_type()), wc));
  }
}

// ChunkedLogprobs is token_logprobs with a graph: the output is [K,N], row 0
// the log-probabilities and (K = 2) row 1 the entropies.
struct ChunkedLogprobs : public torch::autograd::Function<ChunkedLogprobs> {
  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &h, const at::Tensor &w,
                            const at::Tensor &targets, double temperature, int64_t chunk, bool entropy,
                            bool entropy_grad, int64_t autocast) {
    const auto ac = static_cast<at::ScalarType>(autocast);
    const int64_t N = h.size(0);
    const auto acc = h.options().dtype(acc_type(h.scalar_type()));
    at::Tensor out = at::empty({entropy ? 2 : 1, N}, acc);
    at::Tensor lp = out.select(0, 0), ent = entropy ? out.select(0, 1) : at::Tensor();
    at::Tensor lse = at::empty({N}, acc);
    const bool precompute = !w.requires_grad() && !(entropy && entropy_grad);
    at::Tensor dlp_dh = precompute ? at::empty_like(h) : at::Tensor();
    const at::ScalarType cd = compute_dtype(w, ac);
    forward_chunks(h.to(cd), w.to(cd), targets, temperature, chunk, lp, ent, lse, dlp_dh);
    if (precompute)
      ctx->save_for_backward({dlp_dh});
    else
      ctx->save_for_backward({h, w, targets, lse});
    ctx->saved_data["precomputed"] = precompute;
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["chunk"] = chunk;
    ctx->saved_data["entropy_grad"] = entropy && entropy_grad;
    ctx->saved_data["autocast"] = autocast;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    // One gradient per forward input: h and w, none for targets,
    // temperature, chunk, entropy, entropy_grad and autocast.
    torch::autograd::variable_list out(8);
    if (ctx->saved_data["precomputed"].toBool()) {
      at::NoGradGuard no_grad;
      out[0] = saved[0].mul(grad_out[0].select(0, 0).unsqueeze(1)).to(saved[0].scalar_type());
      return out;
    }
    const at::Tensor &h = saved[0], &w = saved[1], &targets = saved[2], &lse = saved[3];
    const double temperature = ctx->saved_data["temperature"].toDouble();
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const auto ac = static_cast<at::ScalarType>(ctx->saved_data["autocast"].toInt());
    at::NoGradGuard no_grad;
    const at::Tensor &g = grad_out[0];
    at::Tensor g_lp = g.select(0, 0);
    at::Tensor g_ent = ctx->saved_data["entropy_grad"].toBool() ? g.select(0, 1) : at::Tensor();
    const at::ScalarType cd = compute_dtype(w, ac);
    at::Tensor hc = h.to(cd), wc = w.to(cd);
    at::Tensor gh = at::empty_like(h);
    // A frozen LM head (a LoRA model's) takes no gradient: its [V,H]
    // product is skipped.
    const bool want_gw = ctx->needs_input_grad(1);
    at::Tensor gw = want_gw ? at::zeros_like(w) : at::Tensor();
    const int64_t N = h.size(0);
    for (int64_t s = 0; s < N; s += chunk) {
      const int64_t c = std::min(chunk, N - s);
      at::Tensor hs = hc.narrow(0, s, c);
      at::Tensor logp = chunk_logits(hs, wc, temperature).sub_(lse.narrow(0, s, c).unsqueeze(1));
      at::Tensor p = logp.exp();
      at::Tensor gl = g_lp.narrow(0, s, c).unsqueeze(1);
      at::Tensor dz;
      if (g_ent.defined()) {
        // -p (g + e (log p + H)), built in logp's buffer.
        at::Tensor H = (p * logp).sum(1).neg_().unsqueeze(1);
        dz = logp.add_(H).mul_(g_ent.narrow(0, s, c).unsqueeze(1)).add_(gl).mul_(p).neg_();
      } else {
        dz = p.mul_(-gl);  // -p g
      }
      dz.scatter_add_(1, targets.narrow(0, s, c).unsqueeze(1), gl);  // + g onehot_y
      dz = scaled(dz, temperature).to(cd);
      gh.narrow(0, s, c).copy_(at::mm(dz, wc));
      if (!want_gw) continue;
      if (cd == gw.scalar_type())
        gw.addmm_(dz.t(), hs);
      else
        gw.add_(at::mm(dz.t(), hs));
    }
    out[0] = gh;
    out[1] = gw;
    return out;
  }
};

}  // namespace

std::pair<at::Tensor, at::Tensor> token_logprobs(const at::Tensor &h, const at::Tensor &w, const at::Tensor &targets,
                                                 double temperature, int64_t chunk, bool entropy, bool entropy_grad,
                                                 at::ScalarType autocast) {
  TORCH_CHECK(chunk > 0, "logits chunk must be positive, got ", chunk);
  TORCH_CHECK(h.dim() == 2 && w.dim() == 2 && h.size(1) == w.size(1), "token_logprobs: hidden states ", h.sizes(),
              " do not match the LM head ", w.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == h.size(0), "token_logprobs: targets ", targets.sizes(),
              " for ", h.size(0), " hidden states");
  TORCH_CHECK(temperature > 0, "temperature must be positive, got ", temperature);
  if (!at::GradMode::is_enabled()) {
    const int64_t N = h.size(0);
    const auto acc = h.options().dtype(acc_type(h.scalar_type()));
    at::Tensor lp = at::empty({N}, acc);
    at::Tensor ent = entropy ? at::empty({N}, acc) : at::Tensor();
    at::Tensor lse = at::empty({N}, acc), none;
    const at::ScalarType cd = compute_dtype(w, autocast);
    forward_chunks(h.to(cd), w.to(cd), targets, temperature, chunk, lp, ent, lse, none);
    return {lp, ent};
  }
  at::Tensor out = ChunkedLogprobs::apply(h, w, targets, temperature, chunk, entropy, entropy_grad,
                                          static_cast<int64_t>(autocast));
  at::Tensor ent;
  if (entropy) ent = entropy_grad ? out.select(0, 1) : out.select(0, 1).detach();
  return {out.select(0, 0), ent};
}

}  // namespace ar

extern "C" {

int ar_token_logprobs(ar_tensor h, ar_tensor w, ar_tensor targets, double temperature, int64_t chunk, int flags,
                      ar_tensor *logprobs, ar_tensor *entropy, char **err) {
  return ar::guard(err, [&] {
    const bool grad = (flags & AR_FORWARD_GRAD) != 0;
    c10::AutoGradMode grad_mode(grad);
    auto [lp, ent] = ar::token_logprobs(ar::T(h), ar::T(w), ar::T(targets), temperature, chunk, entropy != nullptr,
                                        grad && (flags & AR_FORWARD_ENTROPY_GRAD) != 0, at::ScalarType::Undefined);
    *logprobs = ar::wrap(lp);
    if (entropy != nullptr) *entropy = ar::wrap(ent);
  });
}

}  // extern "C"
