// engine.cpp: the KV-cache decode engine. A fixed number of slots, each with
// its own length; keys are cached after RoPE. Prefill appends tokens to one
// slot; a step samples one token for every given slot from its pending
// logits and runs the model on those tokens, all in one call.
#include <ATen/core/Generator.h>

#include <random>

#include "model.h"

using namespace ar;

struct ar_engine_s {
  ar_model m;
  int slots;
  int64_t max_len;
  std::vector<at::Tensor> K, V;     // per layer [slots, kv, max_len, hd]
  std::vector<int64_t> len;         // tokens cached per slot
  at::Tensor pending;               // [slots, vocab] float32 logits of the last token, on the model's device
  std::vector<bool> has_pending;
  std::vector<std::mt19937_64> rng; // one stream per slot: sampling does not depend on batch makeup
};

namespace {

// upload copies a host tensor to dev. On CUDA it goes through a pinned
// (page-locked) buffer, so the copy is one asynchronous DMA (the caching
// host allocator keeps the buffer until the copy is done); on the CPU the
// tensor is used as it is.
at::Tensor upload(const at::Tensor &host, const at::Device &dev) {
  if (!dev.is_cuda()) return host;
  return host.pin_memory().to(dev, /*non_blocking=*/true);
}

at::Tensor upload(const int64_t *ids, at::IntArrayRef shape, const at::Device &dev) {
  return upload(at::from_blob(const_cast<int64_t *>(ids), shape, at::kLong), dev);
}

// download brings a device tensor to the host, through pinned memory on
// CUDA (a direct DMA; the copy returns when the data has arrived).
at::Tensor download(const at::Tensor &t) {
  if (!t.is_cuda()) return t.contiguous();
  at::Tensor host = at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true));
  host.copy_(t);
  return host;
}

// run appends the tokens ids [S,n] to the given slots (all at their own
// lengths) and returns the logits of each slot's last new token [S,V].
at::Tensor run(ar_engine_s &e, const std::vector<int64_t> &slots, const at::Tensor &ids) {
  AutocastScope ac(e.m->dev, e.m->autocast);
  const ar_model_s &m = *e.m;
  int64_t S = ids.size(0), n = ids.size(1);
  auto lopts = at::TensorOptions().dtype(at::kLong).device(m.dev);
  std::vector<int64_t> start(S);
  int64_t L = 0;
  for (int64_t i = 0; i < S; i++) {
    start[i] = e.len[slots[i]];
    TORCH_CHECK(start[i] + n <= e.max_len, "slot ", slots[i], " would exceed the cache length ", e.max_len,
                " (has ", start[i], ", adding ", n, ")");
    L = std::max(L, start[i] + n);
  }
  // Runs of consecutive slot numbers read the cache in place (narrow views,
  // no copy): rows [i0, i1) of the batch are slots s0.. of the cache, with
  // keys up to the run's longest length.
  struct Run {
    int64_t i0, i1, s0, len;
  };
  std::vector<Run> runs;
  for (int64_t i = 0; i < S; i++) {
    if (runs.empty() || slots[i] != slots[i - 1] + 1) runs.push_back({i, i, slots[i], 0});
    runs.back().i1 = i + 1;
    runs.back().len = std::max(runs.back().len, start[i] + n);
  }
  at::Tensor startt = at::tensor(start, at::kLong).to(m.dev);
  at::Tensor pos = startt.unsqueeze(1) + at::arange(n, lopts).unsqueeze(0);  // [S,n]
  at::Tensor slott = at::tensor(slots, at::kLong).to(m.dev);
  // Query j of slot i may read key p when p <= start_i + j.
  at::Tensor keys = at::arange(L, lopts).view({1, 1, L});
  at::Tensor allowed = keys <= pos.unsqueeze(-1);  // [S,n,L]
  at::Tensor mask = at::zeros({S, n, L}, at::TensorOptions().dtype(at::kFloat).device(m.dev));
  mask.masked_fill_(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  mask = mask.view({S, 1, 1, n, L});

  auto [cos, sin] = m.rope(pos);
  at::Tensor x = at::embedding(m.embed, ids);
  for (size_t li = 0; li < m.layers.size(); li++) {
    const auto &l = m.layers[li];
    at::Tensor q, k, v;
    qkv(m, l, rms_norm(x, l.input_layernorm, m.cfg.rms_eps), cos, sin, q, k, v);
    // write k, v [S,kv,n,hd] at positions pos into the cache
    at::Tensor kc = e.K[li], vc = e.V[li];
    if (S == 1) {
      kc[slots[0]].narrow(1, start[0], n).copy_(k[0]);
      vc[slots[0]].narrow(1, start[0], n).copy_(v[0]);
    } else {
      using at::indexing::Slice;
      for (int64_t j = 0; j < n; j++) {
        at::Tensor pj = pos.select(1, j);
        // (under autocast k and v come in the autocast dtype)
        kc.index_put_({slott, Slice(), pj}, k.select(2, j).to(kc.scalar_type()));
        vc.index_put_({slott, Slice(), pj}, v.select(2, j).to(vc.scalar_type()));
      }
    }
    std::vector<at::Tensor> outs;
    for (const auto &r : runs) {
      int64_t rn = r.i1 - r.i0;
      outs.push_back(m.attend(q.narrow(0, r.i0, rn), kc.narrow(0, r.s0, rn).narrow(2, 0, r.len),
                              vc.narrow(0, r.s0, rn).narrow(2, 0, r.len),
                              mask.narrow(0, r.i0, rn).narrow(-1, 0, r.len)));
    }
    at::Tensor att = outs.size() == 1 ? outs[0] : at::cat(outs, 0);
    x = x + linear(att, l.o_w, at::Tensor());
    x = x + m.mlp(l, rms_norm(x, l.post_attention_layernorm, m.cfg.rms_eps));
  }
  for (int64_t i = 0; i < S; i++) e.len[slots[i]] = start[i] + n;
  at::Tensor last = x.narrow(1, n - 1, 1).squeeze(1);  // [S,H]
  return m.logits(rms_norm(last, m.norm, m.cfg.rms_eps)).to(at::kFloat);
}

void check_slot(const ar_engine_s &e, int slot) {
  TORCH_CHECK(slot >= 0 && slot < e.slots, "slot ", slot, " out of range [0,", e.slots, ")");
}

// sample draws one token per row of logits [S,V] (float32, on the model's
// device) with the rows' own random streams; only the S uniforms go to the
// device and the S tokens and logprobs come back.
void sample(ar_engine_s &e, const std::vector<int64_t> &slots, const at::Tensor &logits,
            const ar_sampling &s, int64_t *tokens, float *logprobs) {
  int64_t S = logits.size(0);
  bool greedy = s.temperature <= 0;
  at::Tensor scaled = greedy ? logits : logits / s.temperature;
  at::Tensor logp = at::log_softmax(scaled, -1);
  at::Tensor chosen;
  if (greedy) {
    chosen = logits.argmax(-1);
  } else {
    at::Tensor filtered = scaled.clone();
    int64_t V = filtered.size(1);
    const float ninf = -std::numeric_limits<float>::infinity();
    if (s.top_k > 0 && s.top_k < V) {
      at::Tensor kth = std::get<0>(filtered.topk(s.top_k, -1)).narrow(1, s.top_k - 1, 1);
      filtered.masked_fill_(filtered < kth, ninf);
    }
    if (s.top_p > 0 && s.top_p < 1) {
      // Keep the smallest prefix of tokens (by probability) whose mass reaches
      // top_p; the most likely token is always kept.
      auto sorted = filtered.sort(-1, true);
      at::Tensor sp = at::softmax(std::get<0>(sorted), -1);
      at::Tensor before = sp.cumsum(-1) - sp;  // mass of strictly more likely tokens
      at::Tensor drop_sorted = before >= s.top_p;
      at::Tensor drop = at::zeros_like(drop_sorted).scatter(1, std::get<1>(sorted), drop_sorted);
      filtered.masked_fill_(drop, ninf);
    }
    // Inverse-CDF sampling with one uniform draw per slot from its own stream.
    at::Tensor probs = at::softmax(filtered, -1);
    at::Tensor cdf = probs.cumsum(-1);
    std::vector<float> u(S);
    std::uniform_real_distribution<double> unif(0.0, 1.0);
    for (int64_t i = 0; i < S; i++) u[i] = static_cast<float>(unif(e.rng[slots[i]]));
    at::Tensor ut = upload(at::tensor(u, at::kFloat), cdf.device()).unsqueeze(1) * cdf.narrow(1, V - 1, 1);
    chosen = at::searchsorted(cdf, ut).squeeze(1).clamp_max(V - 1);
    // Never pick a token whose probability is zero (the CDF is flat there).
    at::Tensor pz = probs.gather(1, chosen.unsqueeze(1)).squeeze(1) <= 0;
    chosen = at::where(pz, probs.argmax(-1), chosen);
  }
  // One transfer for both: token ids (exact in float64) and logprobs.
  at::Tensor lp = logp.gather(1, chosen.unsqueeze(1)).squeeze(1);
  at::Tensor both = download(at::stack({chosen.to(at::kDouble), lp.to(at::kDouble)}));
  auto a = both.accessor<double, 2>();
  for (int64_t i = 0; i < S; i++) {
    tokens[i] = static_cast<int64_t>(a[0][i]);
    logprobs[i] = static_cast<float>(a[1][i]);
  }
}

}  // namespace

extern "C" {

int ar_engine_new(ar_model m, int slots, int64_t max_len, ar_engine *out, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(slots > 0, "engine needs at least one slot");
    TORCH_CHECK(max_len > 0, "engine max_len must be positive");
    auto e = std::make_unique<ar_engine_s>();
    e->m = m;
    e->slots = slots;
    e->max_len = max_len;
    const auto &c = m->cfg;
    auto opts = at::TensorOptions().dtype(m->dtype).device(m->dev);
    for (int64_t i = 0; i < c.layers; i++) {
      e->K.push_back(at::zeros({slots, c.kv_heads, max_len, c.head_dim}, opts));
      e->V.push_back(at::zeros({slots, c.kv_heads, max_len, c.head_dim}, opts));
    }
    e->len.assign(slots, 0);
    e->pending = at::zeros({slots, c.vocab}, at::TensorOptions().dtype(at::kFloat).device(m->dev));
    e->has_pending.assign(slots, false);
    for (int i = 0; i < slots; i++) e->rng.emplace_back(static_cast<uint64_t>(i) + 1);
    *out = e.release();
  });
}

int ar_engine_free(ar_engine e) {
  delete e;
  return AR_OK;
}

int ar_engine_prefill(ar_engine e, int slot, const int64_t *ids, int64_t n, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    TORCH_CHECK(n > 0, "prefill of slot ", slot, " needs at least one token");
    c10::InferenceMode inference;
    apply_threads();
    for (int64_t i = 0; i < n; i++)
      TORCH_CHECK(ids[i] >= 0 && ids[i] < e->m->cfg.vocab, "token id ", ids[i], " outside the vocabulary");
    at::Tensor l = run(*e, {slot}, upload(ids, {1, n}, e->m->dev));
    e->pending[slot].copy_(l[0]);
    e->has_pending[slot] = true;
  });
}

int ar_engine_copy_slot(ar_engine e, int src, int dst, char **err) {
  return guard(err, [&] {
    check_slot(*e, src);
    check_slot(*e, dst);
    c10::InferenceMode inference;
    int64_t n = e->len[src];
    for (size_t li = 0; li < e->K.size(); li++) {
      if (n > 0) {
        e->K[li][dst].narrow(1, 0, n).copy_(e->K[li][src].narrow(1, 0, n));
        e->V[li][dst].narrow(1, 0, n).copy_(e->V[li][src].narrow(1, 0, n));
      }
    }
    e->len[dst] = n;
    e->pending[dst].copy_(e->pending[src]);
    e->has_pending[dst] = e->has_pending[src];
  });
}

int ar_engine_release(ar_engine e, int slot, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    e->len[slot] = 0;
    e->has_pending[slot] = false;
  });
}

int ar_engine_slot_len(ar_engine e, int slot, int64_t *len, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    *len = e->len[slot];
  });
}

int ar_engine_step(ar_engine e, const int *slots, int n, const ar_sampling *s, int64_t *tokens,
                   float *logprobs, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(n > 0, "step needs at least one slot");
    c10::InferenceMode inference;
    apply_threads();
    std::vector<int64_t> sl(slots, slots + n);
    std::vector<int64_t> seen(e->slots, 0);
    for (int64_t x : sl) {
      check_slot(*e, static_cast<int>(x));
      TORCH_CHECK(!seen[x]++, "slot ", x, " given twice in one step");
      TORCH_CHECK(e->has_pending[x], "slot ", x, " has nothing to continue from (prefill it first)");
    }
    at::Tensor idx = upload(sl.data(), {n}, e->m->dev);
    sample(*e, sl, e->pending.index_select(0, idx), *s, tokens, logprobs);
    at::Tensor l = run(*e, sl, upload(tokens, {n, 1}, e->m->dev));
    e->pending.index_copy_(0, idx, l);
  });
}

int ar_engine_logits(ar_engine e, int slot, float *dst, int64_t vocab, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    TORCH_CHECK(vocab == e->m->cfg.vocab, "buffer holds ", vocab, " logits, vocab is ", e->m->cfg.vocab);
    at::Tensor row = e->pending[slot].to(at::kCPU).contiguous();
    std::memcpy(dst, row.data_ptr<float>(), sizeof(float) * vocab);
  });
}

int ar_engine_seed(ar_engine e, int slot, uint64_t seed, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    e->rng[slot].seed(seed);
  });
}

}  // extern "C"
