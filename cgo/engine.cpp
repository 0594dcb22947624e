// engine.cpp: the KV-cache decode engine. A fixed number of slots, each with
// its own length; keys are cached after RoPE. Prefill appends tokens to one
// slot; a step samples one token for every given slot from its pending
// logits and runs the model on those tokens, all in one call.
//
// A decode step runs one of three implementations (ar_engine_set_decode):
//   kernels  the hand-written CPU step of decode.cpp, reading the policy's
//            own weight tensors (the default wherever it is supported);
//   fused    libtorch ops with q/k/v and gate/up each concatenated into one
//            weight, so each is one product (the default elsewhere: CUDA,
//            autocast, CPUs without AVX-512). The copies are rebuilt, in
//            place, whenever a source weight's version counter moved (an
//            optimizer step, set_param, copy_weights, a broadcast), so the
//            engine always decodes with the policy's current weights. On
//            CUDA, the step of each slot count is captured once as a CUDA
//            graph and replayed (AGENTRL_CUDA builds).
//   unfused  libtorch ops on the HF tensors, as the training forward does:
//            the reference the other two are tested against.
// Prefill always runs libtorch ops (fused on the fused path). The libtorch
// steps, eager (run) and captured (graph_forward), and prefill run each
// layer as decoder_layer (layer.h), the training forward's layer, with the
// fused copies or the HF tensors as its weights and attention over the
// cache. A full layer's cache keeps every position; a sliding-window
// layer's (Gemma 4's sliding layers, Qwen2/Qwen3's) is a ring of
// C = min(sliding_window, max_len) entries, position p at entry p mod C:
// attention is a sum over keys, whatever their order, and a query at p
// reads exactly positions p-C+1..p, so a decode step writes its key, then
// attends over the ring. A prefill of n > 1 tokens attends over [the ring
// as it was, the n new keys], masked by each entry's position, and writes
// only each row's last C new keys. A Gemma 4 kv-shared layer has no cache
// of its own and reads the one of the layer it shares (in a prefill, that
// layer's ring as it was before this forward, and the new keys).
#include <ATen/core/Generator.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <random>

#include "common.h"

#ifdef AGENTRL_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDAStream.h>
#if AR_TORCH_AT_LEAST(2, 8)
#include <ATen/core/CachingHostAllocator.h>
#endif
#include <tuple>
#endif

#include "decode.h"
#include "deltanet.h"
#include "gemma4.h"
#include "internal.h"
#include "layer.h"
#include "mamba2.h"
#include "model.h"

using namespace ar;

// kPrefillTokens bounds the padded tokens (slots x longest new length) of
// one forward of a batched prefill; kPrefillScores bounds its attention
// scores (slots x heads x longest x keys): 1 GiB in float32.
constexpr int64_t kPrefillTokens = 16384, kPrefillScores = int64_t(1) << 28;

struct ar_engine_s {
  ar_model m;
  int slots;
  int64_t max_len;
  // Per attention layer [slots, kv, positions, hd], the layer's own kv
  // heads and head size (undefined for the others; a kv-shared layer's is
  // the tensor of the layer it shares, cache_of its index). positions is
  // max_len for a full layer, ring for a sliding one (on CUDA one more:
  // graph_forward's scratch entry).
  std::vector<at::Tensor> K, V;
  std::vector<size_t> cache_of;
  int64_t ring = 0;  // a sliding layer's ring length C, min(sliding_window, max_len) (0: no layer slides)
  // Per Gated DeltaNet or Mamba-2 layer (undefined for the others), each
  // slot's state: the conv's last K-1 inputs [slots, C, K-1] (model dtype)
  // and the recurrent state (acc_type): [slots, v_heads, k_dim, v_dim], a
  // Mamba-2 layer's [slots, heads, head_dim, ssm_state]. A Nemotron-H MLP
  // layer has neither.
  std::vector<at::Tensor> conv_state, rec_state;
  std::vector<int64_t> len;         // tokens cached per slot
  at::Tensor pending;               // [slots, vocab] float32 logits of the last token, on the model's device
  std::vector<bool> has_pending;
  std::vector<std::mt19937_64> rng; // one stream per slot: sampling does not depend on batch makeup
  // Routing record (ar_engine_set_record_routing): per slot, the experts
  // each cached token took at each sparse layer, [len, sparse layers, k]
  // int16, while record_routing is on.
  bool record_routing = false;
  std::vector<std::vector<int16_t>> routing;
  int64_t prefill_tokens = kPrefillTokens;  // bound of one batched prefill forward (slots x longest)

  int mode = AR_DECODE_AUTO;          // as set by ar_engine_set_decode
  std::unique_ptr<FastDecoder> fast;  // the hand-written step, when supported
  std::string no_fast;                // why it is not, otherwise
  StepProfile prof;                   // decode steps' time by phase

  // Fused weights of the fused path, built on first use: per layer q|k|v
  // rows [(heads + 2 kv) * hd, H] (and biases) and gate|up rows [2 I, H].
  std::vector<Fused> fused;
  int64_t fused_version = -1;  // sum of the sources' version counters when copied

  // What the engine did since it was made (ar_engine_counters): the fused
  // weights rewritten from the model's (refresh_fused), CUDA graph
  // captures tried, decode steps replayed from a graph, and decode steps
  // run otherwise (libtorch ops or the hand-written kernels).
  int64_t refreshes = 0, captures = 0, replays = 0, eager_steps = 0;

#ifdef AGENTRL_CUDA
  // One captured decode step per row count R (cache rows 0..R-1), replayed
  // from static inputs (positions, token ids) to a static output (logits).
  struct Graph {
    at::cuda::CUDAGraph graph;
    at::Tensor rows, pos, ids, logits;
  };
  std::map<int64_t, std::unique_ptr<Graph>> graphs;
  // The memory pool of this engine's graphs, its own (made on the first
  // capture): replays of one engine never overlap, those of two may.
  decltype(at::cuda::graph_pool_handle()) pool{0, 0};
  // What the graphs were captured under (graph_key): a change drops them.
  std::tuple<int, int, bool, bool, bool, bool> key{};
  // Graphs whose capture failed, never replayed: kept for the engine's
  // life, because the allocators' routing filters of a capture point at
  // its graph. After a failure decode steps run eagerly; graphs_off says
  // why ("" while graphs are in use).
  std::vector<std::unique_ptr<Graph>> failed;
  std::string graphs_off;
#endif
};

void ar::check_graph_replay(const at::Tensor &eager, const at::Tensor &replayed, int64_t slots) {
  at::Tensor e = eager.to(at::kCPU, at::kFloat), r = replayed.to(at::kCPU, at::kFloat);
  TORCH_CHECK(e.sizes() == r.sizes(), "the CUDA graph captured for ", slots, " slots returns logits of shape ",
              r.sizes(), ", the eager step ", e.sizes());
  bool unwritten = (at::isnan(r) & ~at::isnan(e)).any().item<bool>();
  TORCH_CHECK(!unwritten, "the CUDA graph captured for ", slots,
              " slots recorded nothing: its replay left the output unwritten (captured on the wrong device or "
              "stream); decoding with it would return stale logits");
  TORCH_CHECK(at::allclose(r, e, 1e-2, 1e-2, /*equal_nan=*/true), "the CUDA graph captured for ", slots,
              " slots computes other logits than the eager step (largest difference ",
              (r - e).abs().nan_to_num(0).max().item<double>(), ")");
}

namespace {

enum Path { kKernels = AR_DECODE_KERNELS, kFused = AR_DECODE_FUSED, kUnfused = AR_DECODE_UNFUSED };

// path is the implementation decode steps (and prefill) use now. Autocast
// turned on after the engine was made sends it to the fused path too (the
// kernels do not emulate it).
Path path(const ar_engine_s &e) {
  if (e.mode == AR_DECODE_UNFUSED) return kUnfused;
  if (e.mode == AR_DECODE_FUSED || e.fast == nullptr || e.m->autocast != at::ScalarType::Undefined) return kFused;
  return kKernels;
}

// weights_version sums the version counters of the weights and biases the
// fused copies are made of (kGroups): every in-place write (optimizer
// step, copy_, set_param) moves it.
int64_t weights_version(const ar_model_s &m) {
  int64_t v = 0;
  for (const auto &l : m.layers)
    for (const Group *g : kGroups)
      for (int i = 0; i < g->n; i++) {
        const Group::Part &p = g->parts[i];
        for (const at::Tensor *t : {&p.weight(l), p.bias(l)})
          if (t != nullptr && t->defined() && !t->is_inference()) v += static_cast<int64_t>(t->_version());
      }
  return v;
}

// copy_rows makes dst the tensors parts concatenated by rows: allocated
// when fresh, otherwise written in place (a captured CUDA graph keeps
// reading the same address).
void copy_rows(at::Tensor &dst, const std::vector<at::Tensor> &parts, bool fresh) {
  if (fresh) {
    auto shape = parts[0].sizes().vec();
    for (size_t j = 1; j < parts.size(); j++) shape[0] += parts[j].size(0);
    dst = at::empty(shape, parts[0].options());
  }
  int64_t row = 0;
  for (const auto &p : parts) {
    dst.narrow(0, row, p.size(0)).copy_(p);
    row += p.size(0);
  }
}

// refresh_fused makes the fused weights equal the model's: each Group's
// weights (and biases, where the layer has them) concatenated by rows,
// allocated on first use, then copied in place whenever a source changed.
void refresh_fused(ar_engine_s &e) {
  const ar_model_s &m = *e.m;
  int64_t v = weights_version(m);
  if (!e.fused.empty() && v == e.fused_version) return;
  e.refreshes++;
  const bool fresh = e.fused.empty();
  if (fresh) e.fused.resize(m.layers.size());
  for (size_t i = 0; i < m.layers.size(); i++) {
    const Layer &l = m.layers[i];
    for (const Group *g : kGroups) {
      if (!g->parts[0].weight(l).defined()) continue;  // gate|up of a sparse layer, which has experts instead
      std::vector<at::Tensor> weights, biases;
      for (int j = 0; j < g->n; j++) {
        const Group::Part &p = g->parts[j];
        if (!p.weight(l).defined()) continue;  // a Gemma 4 layer's k_proj, v_proj it lacks
        weights.push_back(p.weight(l));
        if (p.bias(l) != nullptr && p.bias(l)->defined()) biases.push_back(*p.bias(l));
      }
      copy_rows(e.fused[i].*g->w, weights, fresh);
      if (!biases.empty()) copy_rows(e.fused[i].*g->b, biases, fresh);
    }
  }
  e.fused_version = v;
}

using Clock = std::chrono::steady_clock;
double since(Clock::time_point &t) {
  auto n = Clock::now();
  double d = std::chrono::duration<double>(n - t).count();
  t = n;
  return d;
}

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

// LayerInputs are what a decode forward's layers take besides the cache:
// the embedded tokens x [S,n,H] (Gemma 4: scaled, with each layer's
// per-layer input per_layer [S,n,layers,P]), the rotary tables of the
// positions (cos, sin; empty for Nemotron-H) and a Gemma 4 full layer's
// own (gcos, gsin; the others' elsewhere).
struct LayerInputs {
  at::Tensor x, per_layer, cos, sin, gcos, gsin;
};

LayerInputs layer_inputs(const ar_model_s &m, const at::Tensor &ids, const at::Tensor &pos) {
  LayerInputs in;
  in.x = at::embedding(m.embed, ids);
  if (m.cfg.gemma != 0) {
    GemmaInputs g = gemma_inputs(m, ids, in.x);
    in.x = g.x;
    in.per_layer = g.per_layer;
  }
  in.cos = at::empty({0}, in.x.options());
  in.sin = in.cos;
  if (m.cfg.nemotron == 0) std::tie(in.cos, in.sin) = m.rope(pos);
  in.gcos = in.cos;
  in.gsin = in.sin;
  if (m.global_inv_freq.defined()) std::tie(in.gcos, in.gsin) = m.rope(pos, m.global_inv_freq);
  return in;
}

// layer_weights is layer li's LayerWeights in a decode forward: the fused
// copies or the HF tensors, Gemma 4's shared keys and values and its
// per-layer input.
LayerWeights layer_weights(const ar_model_s &m, size_t li, const Fused *fused, const LayerInputs &in, KVShare *share,
                           std::vector<at::Tensor> *took = nullptr) {
  const at::Tensor per = in.per_layer.defined() ? in.per_layer.select(2, static_cast<int64_t>(li)) : at::Tensor();
  return {m, m.layers[li], fused, nullptr, at::Tensor(), took, share, per};
}

// rope_of is the rotary tables layer l turns its heads by.
std::pair<const at::Tensor &, const at::Tensor &> rope_of(const ar_model_s &m, const Layer &l, const LayerInputs &in) {
  if (l.sliding || m.cfg.gemma == 0) return {in.cos, in.sin};
  return {in.gcos, in.gsin};
}

// additive_mask is the additive mask [S,1,1,n,L] (as attend takes it) of
// allowed [S,n,L].
at::Tensor additive_mask(const ar_model_s &m, const at::Tensor &allowed) {
  at::Tensor mask = at::zeros(allowed.sizes(), allowed.options().dtype(at::kFloat));
  mask.masked_fill_(allowed.logical_not(), -std::numeric_limits<float>::infinity());
  return m.attention_mask(mask.view({allowed.size(0), 1, 1, allowed.size(1), allowed.size(2)}));
}

// causal_mask is the additive mask of a full layer in a decode forward
// whose queries at positions pos [S,n] may read cached keys 0..L-1 up to
// their own.
at::Tensor causal_mask(const ar_model_s &m, const at::Tensor &pos, int64_t L) {
  at::Tensor keys = at::arange(L, pos.options()).view({1, 1, L});
  return additive_mask(m, keys <= pos.unsqueeze(-1));
}

// ring_step_mask is a sliding layer's additive mask [S,1,1,1,E] over E
// ring entries in a decode step of one token at positions pos [S] (its
// key written): entry r holds a key of the window where r < min(C, pos+1).
at::Tensor ring_step_mask(const ar_model_s &m, const at::Tensor &pos, int64_t C, int64_t E) {
  at::Tensor entries = at::arange(E, pos.options()).view({1, 1, E});
  return additive_mask(m, entries < (pos + 1).clamp_max(C).view({pos.size(0), 1, 1}));
}

// ring_entry is the position whose key entry r of a ring of C holds in a
// slot of len cached tokens, or -1 where none does (a ring not yet full:
// r >= len).
int64_t ring_entry(int64_t len, int64_t r, int64_t C) {
  if (len == 0) return -1;
  const int64_t p = len - 1 - ((len - 1 - r) % C + C) % C;
  return p >= 0 ? p : -1;
}

// final_norm is the final norm of the last hidden states x [S,H] (Gemma
// 4's its own), and head_logits the logits [S,V] (float32) of the normed
// h: the head (by decode_product on the fused path) and any soft cap.
at::Tensor final_norm(const ar_model_s &m, const at::Tensor &x) {
  return m.cfg.gemma != 0 ? gemma_norm(x, m.norm, m.cfg.rms_eps) : norm(m, x, m.norm);
}

at::Tensor head_logits(const ar_model_s &m, const at::Tensor &h, bool fused) {
  if (!fused) return m.logits(h).to(at::kFloat);
  return softcap(decode_product(h, m.lm_head, at::Tensor()), m.cfg.final_softcap).to(at::kFloat);
}

// run appends the tokens ids [S,n] to the given slots (all at their own
// lengths) and returns the logits of each slot's last new token [S,V],
// with libtorch ops on the fused weights (fused) or the HF tensors. With
// lens (ragged, one per row, each in 1..n) row i appends only its first
// lens[i] tokens: the rest of the row is padding, whose queries sit at the
// row's last real position (so they read only real keys and their output
// is dropped), whose keys and values are never written to the cache, and
// which no real query reads (query j reads keys up to start_i + j). Empty
// lens is n for every row. With a profile, the time of the weight products
// and of attention is added to it (the rest to other).
at::Tensor run(ar_engine_s &e, const std::vector<int64_t> &slots, const at::Tensor &ids, bool fused,
               StepProfile *prof = nullptr, const std::vector<int64_t> &lens = {}) {
  AutocastScope ac(e.m->dev, e.m->autocast);
  if (fused) refresh_fused(e);
  Lap lap{prof};
  const ar_model_s &m = *e.m;
  int64_t S = ids.size(0), n = ids.size(1);
  auto lopts = at::TensorOptions().dtype(at::kLong).device(m.dev);
  std::vector<int64_t> start(S), count(S, n);  // count: new tokens per row
  bool ragged = false;
  if (!lens.empty()) {
    TORCH_CHECK(static_cast<int64_t>(lens.size()) == S, "run: ", lens.size(), " lengths for ", S, " rows");
    count = lens;
    for (int64_t i = 0; i < S; i++) {
      TORCH_CHECK(count[i] >= 1 && count[i] <= n, "run: row ", i, " has length ", count[i], " outside 1..", n);
      ragged = ragged || count[i] != n;
    }
  }
  int64_t L = 0;
  for (int64_t i = 0; i < S; i++) {
    start[i] = e.len[slots[i]];
    TORCH_CHECK(start[i] + count[i] <= e.max_len, "slot ", slots[i], " would exceed the cache length ", e.max_len,
                " (has ", start[i], ", adding ", count[i], ")");
    L = std::max(L, start[i] + count[i]);
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
    runs.back().len = std::max(runs.back().len, start[i] + count[i]);
  }
  at::Tensor pos;  // [S,n]
  if (ragged) {
    std::vector<int64_t> p(S * n);
    for (int64_t i = 0; i < S; i++)
      for (int64_t j = 0; j < n; j++) p[i * n + j] = start[i] + std::min(j, count[i] - 1);
    pos = at::tensor(p, at::kLong).view({S, n}).to(m.dev);
  } else {
    at::Tensor startt = at::tensor(start, at::kLong).to(m.dev);
    pos = startt.unsqueeze(1) + at::arange(n, lopts).unsqueeze(0);
  }
  // Where the new keys and values of several slots go: cache row wslot[r],
  // position wpos[r] takes row wrow[r] of the layer's [S*n,kv,hd] keys
  // (row i*n+j is token j of slot i), the real tokens only (all rows of a
  // batch that is not ragged: wrow is then undefined).
  at::Tensor wslot, wpos, wrow;
  if (S > 1 && !ragged) {
    wslot = at::tensor(slots, at::kLong).to(m.dev).unsqueeze(1).expand({S, n}).reshape({S * n});
    wpos = pos.reshape({S * n});
  } else if (S > 1) {
    std::vector<int64_t> ws, wp, wr;
    for (int64_t i = 0; i < S; i++)
      for (int64_t j = 0; j < count[i]; j++) {
        ws.push_back(slots[i]);
        wp.push_back(start[i] + j);
        wr.push_back(i * n + j);
      }
    wslot = at::tensor(ws, at::kLong).to(m.dev);
    wpos = at::tensor(wp, at::kLong).to(m.dev);
    wrow = at::tensor(wr, at::kLong).to(m.dev);
  }
  // Query j of slot i may read key p when p <= start_i + j (in a sliding
  // layer, and p > start_i + j - sliding_window).
  const at::Tensor mask = causal_mask(m, pos, L);
  // A sliding layer's ring (C entries): in a step of one token, its mask
  // over the ring (smask) and each row's entry (rpos; rslot, rrow as for
  // wslot, wrow). In a prefill, its mask over [ring as it was, new keys]
  // by the positions they hold (smask [S,1,1,n,O+n], O = C, or 0 where
  // every row starts empty: then no ring is read), and the writes of each
  // row's last C real tokens.
  const int64_t C = e.ring, W = m.cfg.sliding_window;
  const int64_t O = std::any_of(start.begin(), start.end(), [](int64_t s) { return s > 0; }) ? C : 0;
  at::Tensor smask, sidx_all, rslot, rpos, rrow;
  if (C > 0 && n == 1) {
    at::Tensor p = pos.squeeze(1);
    smask = ring_step_mask(m, p, C, C);
    rpos = p.remainder(C);
  } else if (C > 0) {
    const int64_t far = std::numeric_limits<int64_t>::max() / 4;  // a position no query reads
    std::vector<int64_t> kpos(S * (O + n)), rs, rp, rr;
    for (int64_t i = 0; i < S; i++) {
      for (int64_t r = 0; r < O; r++) {
        const int64_t p = ring_entry(start[i], r, C);
        kpos[i * (O + n) + r] = p < 0 ? far : p;
      }
      for (int64_t j = 0; j < n; j++) kpos[i * (O + n) + O + j] = j < count[i] ? start[i] + j : far;
      for (int64_t j = std::max<int64_t>(0, count[i] - C); j < count[i]; j++) {
        rs.push_back(slots[i]);
        rp.push_back((start[i] + j) % C);
        rr.push_back(i * n + j);
      }
    }
    at::Tensor kp = at::tensor(kpos, at::kLong).to(m.dev).view({S, 1, O + n}), q = pos.unsqueeze(-1);
    smask = additive_mask(m, (kp <= q) & (kp > q - W));
    rslot = at::tensor(rs, at::kLong).to(m.dev);
    rpos = at::tensor(rp, at::kLong).to(m.dev);
    rrow = at::tensor(rr, at::kLong).to(m.dev);
    sidx_all = at::tensor(slots, at::kLong).to(m.dev);
  }
  // In a prefill, each sliding layer's ring as it was, for the kv-shared
  // layers that read it after it was written.
  std::vector<at::Tensor> oldK(m.layers.size()), oldV(m.layers.size());
  LayerInputs in = layer_inputs(m, ids, pos);
  at::Tensor x = in.x;
  KVShare share;  // Gemma 4's keys and values of the step, for its kv-shared layers
  std::vector<at::Tensor> chosen;  // each sparse layer's experts [S*n,k], when recorded
  std::vector<at::Tensor> *took = e.record_routing ? &chosen : nullptr;
  // A Gated DeltaNet layer continues each row's slot state (zeros for a
  // slot starting at 0) and leaves it after the row's last real token:
  // padding gets zero rates and log decays, which keep the state as it is.
  at::Tensor sidx, live, real;
  if (m.hybrid()) {
    sidx = at::tensor(slots, at::kLong).to(m.dev);
    std::vector<double> lv(S);
    for (int64_t i = 0; i < S; i++) lv[i] = start[i] > 0 ? 1 : 0;
    live = at::tensor(lv, at::kDouble).to(m.dev);
    if (ragged) real = at::arange(n, lopts).unsqueeze(0) < at::tensor(count, at::kLong).to(m.dev).unsqueeze(1);  // [S,n]
  }
  // conv_prev is layer li's conv state for the rows (zeros for a slot
  // starting at 0); conv_advance stores the new one: each row's last K-1
  // conv inputs, the previous state's where the row added fewer.
  auto conv_prev = [&](size_t li) {
    const at::Tensor &cs = e.conv_state[li];
    return cs.index_select(0, sidx) * live.to(cs.scalar_type()).view({S, 1, 1});
  };
  auto conv_advance = [&](size_t li, const at::Tensor &prev, const at::Tensor &mixed) {
    at::Tensor &cs = e.conv_state[li];
    const int64_t K1 = cs.size(2);
    at::Tensor all = at::cat({prev, mixed.transpose(1, 2).to(cs.scalar_type())}, -1);  // [S,C,K-1+n]
    at::Tensor keep;
    if (ragged) {
      at::Tensor pick = at::tensor(count, at::kLong).to(m.dev).view({S, 1}) + at::arange(K1, lopts).view({1, K1});
      keep = all.gather(2, pick.unsqueeze(1).expand({S, all.size(1), K1}));
    } else {
      keep = all.narrow(2, n, K1);
    }
    cs.index_copy_(0, sidx, keep);
  };
  for (size_t li = 0; li < m.layers.size(); li++) {
    if (m.layers[li].mamba()) {
      Scan scan;
      scan.ssd = [&](const at::Tensor &xbc, const at::Tensor &dt) {
        at::Tensor &rs = e.rec_state[li];
        at::Tensor prev = conv_prev(li);
        at::Tensor conv = mamba_conv(m.layers[li], xbc, prev);
        conv_advance(li, prev, xbc);
        at::Tensor init = rs.index_select(0, sidx) * live.to(rs.scalar_type()).view({S, 1, 1, 1});
        SSDOut o = ssd(m, m.layers[li], conv, dt, init, n > 1, real);
        rs.index_copy_(0, sidx, o.state.to(rs.scalar_type()));
        return o.y;
      };
      x = decoder_layer(layer_weights(m, li, fused ? &e.fused[li] : nullptr, in, &share, took), x, in.cos, in.sin,
                        Attend(), &lap, at::Tensor(), &scan);
      continue;
    }
    if (m.layers[li].linear()) {
      auto run_scan = [&](const at::Tensor &mixed, const at::Tensor &g, const at::Tensor &beta) {
        at::Tensor &rs = e.rec_state[li];
        at::Tensor prev = conv_prev(li);
        at::Tensor conv = causal_conv(mixed, m.layers[li].conv1d, prev);
        conv_advance(li, prev, mixed);
        at::Tensor gg = g, bb = beta;
        if (real.defined()) {
          at::Tensor r = real.unsqueeze(-1).to(g.scalar_type());
          gg = g * r;
          bb = beta * r;
        }
        at::Tensor init = rs.index_select(0, sidx) * live.to(rs.scalar_type()).view({S, 1, 1, 1});
        DeltaOut d = delta_rule(m, conv, gg, bb, init, n > 1);
        rs.index_copy_(0, sidx, d.state.to(rs.scalar_type()));
        return d.out;
      };
      const Scan scan{run_scan, at::Tensor()};
      x = decoder_layer(layer_weights(m, li, fused ? &e.fused[li] : nullptr, in, &share, took), x, in.cos, in.sin,
                        Attend(), &lap, at::Tensor(), &scan);
      continue;
    }
    // Attention writes k, v [S,kv,n,hd] at positions pos into the cache,
    // then reads it (a sliding layer its ring, a prefill's over the ring as
    // it was and the new keys). A Gemma 4 kv-shared layer writes nothing:
    // its cache is the layer's it shares, which holds this forward's keys
    // and values already.
    const Layer &l = m.layers[li];
    at::Tensor kc = e.K[li], vc = e.V[li];
    // rows is x [S,kv,n,hd] as rows [S*n,kv,hd] in the cache's dtype (under
    // autocast k and v come in the autocast dtype), those of pick if given.
    auto rows = [&](const at::Tensor &x, const at::Tensor &cache, const at::Tensor &pick) {
      at::Tensor r = x.transpose(1, 2).reshape({S * n, x.size(1), x.size(3)}).to(cache.scalar_type());
      return pick.defined() ? r.index_select(0, pick) : r;
    };
    using at::indexing::Slice;
    auto ring_attend = [&](const at::Tensor &q, const at::Tensor &k, const at::Tensor &v) {
      if (n == 1) {
        if (!l.kv_reuse && S == 1) {
          const int64_t r = start[0] % C;
          kc[slots[0]].narrow(1, r, 1).copy_(k[0]);
          vc[slots[0]].narrow(1, r, 1).copy_(v[0]);
        } else if (!l.kv_reuse) {
          kc.index_put_({wslot, Slice(), rpos}, rows(k, kc, at::Tensor()));
          vc.index_put_({wslot, Slice(), rpos}, rows(v, vc, at::Tensor()));
        }
        std::vector<at::Tensor> outs;
        for (const auto &r : runs) {
          const int64_t rn = r.i1 - r.i0, E = std::min(C, r.len);
          outs.push_back(m.attend(q.narrow(0, r.i0, rn), kc.narrow(0, r.s0, rn).narrow(2, 0, E),
                                  vc.narrow(0, r.s0, rn).narrow(2, 0, E), smask.narrow(0, r.i0, rn).narrow(-1, 0, E)));
        }
        return outs.size() == 1 ? outs[0] : at::cat(outs, 0);
      }
      const size_t src = e.cache_of[li];
      if (!l.kv_reuse) {
        oldK[li] = kc.narrow(2, 0, O).index_select(0, sidx_all);
        oldV[li] = vc.narrow(2, 0, O).index_select(0, sidx_all);
        kc.index_put_({rslot, Slice(), rpos}, rows(k, kc, rrow));
        vc.index_put_({rslot, Slice(), rpos}, rows(v, vc, rrow));
      }
      if (O == 0) return m.attend(q, k.to(kc.scalar_type()), v.to(vc.scalar_type()), smask);
      return m.attend(q, at::cat({oldK[src], k.to(kc.scalar_type())}, 2),
                      at::cat({oldV[src], v.to(vc.scalar_type())}, 2), smask);
    };
    auto attend = [&](const at::Tensor &q, const at::Tensor &k, const at::Tensor &v) {
      if (l.sliding) return ring_attend(q, k, v);
      if (!l.kv_reuse && S == 1) {
        kc[slots[0]].narrow(1, start[0], count[0]).copy_(k[0].narrow(1, 0, count[0]));
        vc[slots[0]].narrow(1, start[0], count[0]).copy_(v[0].narrow(1, 0, count[0]));
      } else if (!l.kv_reuse) {
        // One advanced-index write each for keys and values, the real
        // rows picked.
        kc.index_put_({wslot, Slice(), wpos}, rows(k, kc, wrow));
        vc.index_put_({wslot, Slice(), wpos}, rows(v, vc, wrow));
      }
      std::vector<at::Tensor> outs;
      for (const auto &r : runs) {
        int64_t rn = r.i1 - r.i0;
        outs.push_back(m.attend(q.narrow(0, r.i0, rn), kc.narrow(0, r.s0, rn).narrow(2, 0, r.len),
                                vc.narrow(0, r.s0, rn).narrow(2, 0, r.len),
                                mask.narrow(0, r.i0, rn).narrow(-1, 0, r.len)));
      }
      return outs.size() == 1 ? outs[0] : at::cat(outs, 0);
    };
    auto [lcos, lsin] = rope_of(m, l, in);
    x = decoder_layer(layer_weights(m, li, fused ? &e.fused[li] : nullptr, in, &share, took), x, lcos, lsin, attend,
                      &lap);
  }
  if (took != nullptr && !chosen.empty()) {
    // Each row's real tokens' experts [n,L,k] go after the slot's cached ones.
    const int64_t k = m.cfg.experts_per_token, per = static_cast<int64_t>(chosen.size()) * k;
    at::Tensor all = at::stack(chosen, 1).to(at::kCPU, at::kShort).contiguous();  // [S*n,L,k]
    const int16_t *src = all.data_ptr<int16_t>();
    for (int64_t i = 0; i < S; i++) {
      auto &r = e.routing[slots[i]];
      r.resize((start[i] + count[i]) * per);
      std::copy(src + i * n * per, src + (i * n + count[i]) * per, r.begin() + start[i] * per);
    }
  }
  for (int64_t i = 0; i < S; i++) e.len[slots[i]] = start[i] + count[i];
  at::Tensor xl;  // [S,H]: each row's last real token
  if (ragged) {
    std::vector<int64_t> last(S);
    for (int64_t i = 0; i < S; i++) last[i] = i * n + count[i] - 1;
    xl = x.reshape({S * n, x.size(2)}).index_select(0, at::tensor(last, at::kLong).to(m.dev));
  } else {
    xl = x.narrow(1, n - 1, 1).squeeze(1);
  }
  at::Tensor last = final_norm(m, xl);
  lap(nullptr);
  at::Tensor logits = head_logits(m, last, fused);
  lap(&StepProfile::products);
  return logits;
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

#ifdef AGENTRL_CUDA
// graph_key is what a captured decode step bakes in besides the weights
// and the cache (which it reads in place): the autocast dtype, the
// attention mode, and which of libtorch's attention kernels SDPA may
// choose from (a graph replays the kernels chosen when it was captured).
std::tuple<int, int, bool, bool, bool, bool> graph_key(const ar_model_s &m) {
  auto &ctx = at::globalContext();
  return {static_cast<int>(m.autocast), m.attention_mode, ctx.userEnabledFlashSDP(), ctx.userEnabledMemEfficientSDP(),
          ctx.userEnabledMathSDP(), ctx.userEnabledCuDNNSDP()};
}

#if AR_TORCH_AT_LEAST(2, 8)
// end_host_routing ends the pinned host allocator's routing of a capture's
// allocations to pool, where the allocator has one (libtorch 2.11 has it;
// the overload resolution finds out for the releases between).
template <class A, class P>
auto end_host_routing(A *a, const P &pool, int) -> decltype(a->end_allocate_to_pool(pool), void()) {
  a->end_allocate_to_pool(pool);
}
template <class A, class P>
void end_host_routing(A *, const P &, long) {}
#endif

// end_failed_capture ends a capture that threw midway. libtorch's
// capture_end ends the stream's capture (cudaStreamEndCapture ends it even
// when it fails) but, in 2.6 to 2.11, throws before it ends the caching
// allocators' routing of the capture's allocations to the pool, and the
// graph's reset() releases the pool only after a capture that ended. Left
// so, the allocator keeps routing to a pool whose graph is gone, and the
// next capture into it fails ("already recording to mempool_id"). The
// routing is ended here (an error where capture_end did end it, ignored).
void end_failed_capture(ar_engine_s &e, at::cuda::CUDAGraph &graph) {
  try {
    graph.capture_end();
  } catch (...) {
  }
  try {
    c10::cuda::CUDACachingAllocator::endAllocateToPool(e.m->dev.index(), e.pool);
  } catch (...) {
  }
#if AR_TORCH_AT_LEAST(2, 8)
  try {
    end_host_routing(at::getHostAllocator(at::kCUDA), e.pool, 0);
  } catch (...) {
  }
#endif
}

// graph_forward is the fused path's decode step of cache rows 0..R-1 with
// every shape fixed by R alone, so that it can be captured as a CUDA graph
// (as vLLM captures its decode step per batch size). It attends in place:
// each row reads its own cache row (a narrow view, no copy) over all its
// positions, masked beyond its own, and the new key and value are written
// at the position held in the device tensor pos (a sliding layer: over its
// ring, at entry pos mod C, masked beyond the entries it has filled). A
// row that takes no part in the step has pos = max_len, and writes to the
// scratch entry one past the last (CUDA caches, full and ring, are
// allocated one longer), so its write harms no cached token; its logits
// are dropped. rows (0..R-1), pos [R] and ids [R,1] are
// device tensors. Its layers are run's fused ones (decoder_layer on the
// fused copies); only the cache write and attention differ.
at::Tensor graph_forward(ar_engine_s &e, const at::Tensor &rows, const at::Tensor &pos, const at::Tensor &ids) {
  AutocastScope ac(e.m->dev, e.m->autocast);
  const ar_model_s &m = *e.m;
  const int64_t R = ids.size(0), C = e.ring;
  const at::Tensor mask = causal_mask(m, pos.unsqueeze(1), e.max_len + 1);
  at::Tensor smask, rpos;  // a sliding layer's mask over its ring and entries C+1, and each row's entry
  if (C > 0) {
    smask = ring_step_mask(m, pos, C, C + 1);
    rpos = pos.remainder(C).masked_fill(pos >= e.max_len, C);
  }
  LayerInputs in = layer_inputs(m, ids, pos.unsqueeze(1));
  at::Tensor x = in.x;  // [R,1,H]
  KVShare share;
  using at::indexing::Slice;
  for (size_t li = 0; li < m.layers.size(); li++) {
    const Layer &l = m.layers[li];
    at::Tensor kc = e.K[li].narrow(0, 0, R), vc = e.V[li].narrow(0, 0, R);
    auto attend = [&](const at::Tensor &q, const at::Tensor &k, const at::Tensor &v) {
      if (!l.kv_reuse) {
        const at::Tensor &entry = l.sliding ? rpos : pos;
        kc.index_put_({rows, Slice(), entry}, k.select(2, 0).to(kc.scalar_type()));
        vc.index_put_({rows, Slice(), entry}, v.select(2, 0).to(vc.scalar_type()));
      }
      return m.attend(q, kc, vc, l.sliding ? smask : mask);
    };
    auto [lcos, lsin] = rope_of(m, l, in);
    x = decoder_layer(layer_weights(m, li, &e.fused[li], in, &share), x, lcos, lsin, attend);
  }
  return head_logits(m, final_norm(m, x.squeeze(1)), true);
}

// capture runs the step of R rows eagerly on a side stream (capture is not
// allowed on the default one; the eager run does this step's work and lets
// cuBLAS and the caching allocator set up), captures it into g, and checks
// with one replay that the graph recorded the step. It returns the eager
// logits, or an undefined tensor when the capture failed (out of memory is
// the likely cause: cached blocks cannot be freed while capturing). Then
// the capture is ended and its allocator routing with it, the graph is
// kept aside (never replayed), the engine's decode steps run eagerly from
// now on (graphs_off says why), and the caller runs this step eagerly.
//
// The capture is thread-local (cudaStreamCaptureModeThreadLocal): Go runs
// engines and training on many threads, and in the global mode any
// cudaMalloc, cudaFree or synchronization of another thread would
// invalidate it. Nothing here empties the allocator's cache.
at::Tensor capture(ar_engine_s &e, std::unique_ptr<ar_engine_s::Graph> g, int64_t R) {
  e.captures++;
  if (e.pool == decltype(e.pool){0, 0}) e.pool = at::cuda::graph_pool_handle();
  c10::cuda::CUDAStream ambient = c10::cuda::getCurrentCUDAStream();
  ambient.synchronize();
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, e.m->dev.index());
  at::Tensor out;
  {
    c10::StreamGuard on_side(side);
    // The eager run: an error here is the step's own.
    out = graph_forward(e, g->rows, g->pos, g->ids);
    side.synchronize();
    // out was made on the side stream and is read and freed on the
    // ambient one: the allocator must not hand its block to the side
    // stream again before the ambient stream is done with it.
    out.record_stream(ambient);
    try {
      bool began = false;
      try {
        g->graph.capture_begin(e.pool, cudaStreamCaptureModeThreadLocal);
        began = true;
        g->logits = graph_forward(e, g->rows, g->pos, g->ids);
        g->graph.capture_end();
      } catch (...) {
        if (began) end_failed_capture(e, g->graph);
        throw;
      }
      side.synchronize();
      // The replay repeats the eager step exactly: it writes the same keys
      // and values to the same cache positions and computes the same logits.
      g->logits.fill_(std::numeric_limits<float>::quiet_NaN());
      g->graph.replay();
      side.synchronize();
      check_graph_replay(out, g->logits, R);
    } catch (const std::exception &err) {
      e.graphs_off = std::string("the CUDA graph capture of the decode step of ") + std::to_string(R) +
                     " rows failed, decode steps run eagerly: " + err.what();
      g->logits = at::Tensor();
      e.failed.push_back(std::move(g));
      return at::Tensor();
    }
  }
  e.graphs[R] = std::move(g);
  return out;
}

// graph_step runs one decode step of the fused path on CUDA by replaying
// the graph captured for R rows, R the highest slot of the step + 1,
// capturing it on first use. The rows' positions and tokens are copied
// into the graph's static inputs (rows not in the step get the scratch
// position); the step's logits [n,V], in the order of slots, are picked
// from the graph's static output. An engine's graphs share its own memory
// pool (its replays never overlap: each output is read on the same stream
// before the next). It returns an undefined tensor where the step is to
// run eagerly (a capture failed, now or before). Written for CUDA libtorch
// 2.x and compiled only in `make cuda` builds: never run on a GPU yet.
at::Tensor graph_step(ar_engine_s &e, const std::vector<int64_t> &slots, const int64_t *tokens) {
  if (!e.graphs_off.empty() || e.m->hybrid()) return at::Tensor();  // a hybrid model's steps run eagerly
  const auto key = graph_key(*e.m);
  if (key != e.key) {
    // Replays may still be running on the stream: let them finish before
    // the graphs and their pool go.
    if (!e.graphs.empty()) c10::cuda::getCurrentCUDAStream().synchronize();
    e.graphs.clear();
    e.key = key;
  }
  const int64_t R = *std::max_element(slots.begin(), slots.end()) + 1;
  std::vector<int64_t> pos(R, e.max_len), ids(R, 0);
  for (size_t i = 0; i < slots.size(); i++) {
    const int64_t s = slots[i];
    pos[s] = e.len[s];
    ids[s] = tokens[i];
    TORCH_CHECK(pos[s] + 1 <= e.max_len, "slot ", s, " would exceed the cache length ", e.max_len);
  }
  refresh_fused(e);  // in place: captured graphs keep reading the same tensors
  const at::Device dev = e.m->dev;
  at::Tensor all;
  auto it = e.graphs.find(R);
  if (it == e.graphs.end()) {
    auto g = std::make_unique<ar_engine_s::Graph>();
    auto lopts = at::TensorOptions().dtype(at::kLong).device(dev);
    g->rows = at::arange(R, lopts);
    g->pos = upload(pos.data(), {R}, dev).clone();
    g->ids = upload(ids.data(), {R, 1}, dev).clone();
    all = capture(e, std::move(g), R);
    if (!all.defined()) return all;
  } else {
    auto &g = *it->second;
    g.pos.copy_(upload(pos.data(), {R}, dev), true);
    g.ids.copy_(upload(ids.data(), {R, 1}, dev), true);
    g.graph.replay();
    e.replays++;
    all = g.logits;
  }
  for (int64_t s : slots) e.len[s] += 1;
  const int64_t n = static_cast<int64_t>(slots.size());
  return all.index_select(0, upload(slots.data(), {n}, dev));
}
#endif

}  // namespace

extern "C" {

int ar_engine_new(ar_model m, int slots, int64_t max_len, ar_engine *out, char **err) {
  return guard(err, [&] {
    DeviceScope on(m->dev);
    TORCH_CHECK(slots > 0, "engine needs at least one slot");
    TORCH_CHECK(max_len > 0, "engine max_len must be positive");
    TORCH_CHECK(m->lora.rank == 0,
                "engine: the model is a LoRA model, whose adapters the decode paths do not run; decode from its "
                "merged copy (ar_model_merged_new)");
    auto e = std::make_unique<ar_engine_s>();
    e->m = m;
    e->slots = slots;
    e->max_len = max_len;
    const auto &c = m->cfg;
    auto opts = at::TensorOptions().dtype(m->dtype).device(m->dev);
    // On CUDA one position more: the scratch position of graph_forward.
    const int64_t scratch = m->dev.is_cuda() ? 1 : 0;
    for (const auto &l : m->layers)
      if (l.sliding) e->ring = std::min(c.sliding_window, max_len);
    for (int64_t i = 0; i < c.layers; i++) {
      const Layer &l = m->layers[i];
      e->cache_of.push_back(static_cast<size_t>(i));
      if (l.linear() || l.mamba()) {
        e->K.emplace_back();
        e->V.emplace_back();
        e->conv_state.push_back(at::zeros({slots, l.conv1d.size(0), l.conv1d.size(2) - 1}, opts));
        e->rec_state.push_back(l.mamba() ? at::zeros({slots, c.mamba_heads, c.mamba_head_dim, c.ssm_state},
                                                     opts.dtype(acc_type(m->dtype)))
                                         : at::zeros({slots, c.linear_v_heads, c.linear_k_dim, c.linear_v_dim},
                                                     opts.dtype(acc_type(m->dtype))));
        continue;
      }
      if (block(c, i) == AR_BLOCK_MLP) {  // no state
        e->K.emplace_back();
        e->V.emplace_back();
        e->conv_state.emplace_back();
        e->rec_state.emplace_back();
        continue;
      }
      if (l.kv_reuse) {
        // A Gemma 4 kv-shared layer reads the cache of the last unshared
        // layer of its type (the one that stores its keys and values).
        int64_t src = i - 1;
        while (src >= 0 && !(m->layers[src].kv_store && m->layers[src].sliding == l.sliding)) src--;
        TORCH_CHECK(src >= 0, "engine: kv-shared layer ", i, " has no layer to read keys and values from");
        e->K.push_back(e->K[src]);
        e->V.push_back(e->V[src]);
        e->cache_of.back() = static_cast<size_t>(src);
      } else {
        const int64_t positions = (l.sliding ? e->ring : max_len) + scratch;
        e->K.push_back(at::zeros({slots, l.kv_heads, positions, l.head_dim}, opts));
        e->V.push_back(at::zeros({slots, l.kv_heads, positions, l.head_dim}, opts));
      }
      e->conv_state.emplace_back();
      e->rec_state.emplace_back();
    }
    e->len.assign(slots, 0);
    e->pending = at::zeros({slots, c.vocab}, at::TensorOptions().dtype(at::kFloat).device(m->dev));
    e->has_pending.assign(slots, false);
    e->routing.assign(slots, {});
    for (int i = 0; i < slots; i++) e->rng.emplace_back(static_cast<uint64_t>(i) + 1);
    if (FastDecoder::supported(*m, &e->no_fast)) e->fast = std::make_unique<FastDecoder>(*m, slots, max_len);
#ifdef AGENTRL_CUDA
    for (const auto &l : m->layers)
      if (l.router.defined())
        e->graphs_off = "the model has mixture-of-experts layers, whose routing picks each step's experts on the host "
                        "(shapes that depend on the data, which a CUDA graph cannot capture): decode steps run eagerly";
#endif
    *out = e.release();
  });
}

int ar_engine_free(ar_engine e) {
#ifdef AGENTRL_CUDA
  // Replays may still be running: let them finish before the graphs and
  // their pool go.
  if (e != nullptr && !e->graphs.empty()) {
    try {
      DeviceScope on(e->m->dev);
      c10::cuda::getCurrentCUDAStream().synchronize();
    } catch (...) {
    }
  }
#endif
  delete e;
  return AR_OK;
}

int ar_engine_prefill(ar_engine e, int slot, const int64_t *ids, int64_t n, char **err) {
  return guard(err, [&] {
    DeviceScope on(e->m->dev);
    check_slot(*e, slot);
    TORCH_CHECK(n > 0, "prefill of slot ", slot, " needs at least one token");
    c10::InferenceMode inference;
    for (int64_t i = 0; i < n; i++)
      TORCH_CHECK(ids[i] >= 0 && ids[i] < e->m->cfg.vocab, "token id ", ids[i], " outside the vocabulary");
    at::Tensor l = run(*e, {slot}, upload(ids, {1, n}, e->m->dev), path(*e) == kFused);
    e->pending[slot].copy_(l[0]);
    e->has_pending[slot] = true;
  });
}

int ar_engine_prefill_batch(ar_engine e, const int *slots, int n_slots, const int64_t *ids, const int64_t *lens,
                            char **err) {
  return guard(err, [&] {
    DeviceScope on(e->m->dev);
    TORCH_CHECK(n_slots > 0, "batched prefill needs at least one slot");
    TORCH_CHECK(slots != nullptr && lens != nullptr && ids != nullptr, "batched prefill: null slots, ids or lens");
    // Everything is checked before anything is written: a bad input leaves
    // the engine as it was.
    const int64_t V = e->m->cfg.vocab;
    std::vector<int64_t> sl(slots, slots + n_slots), count(lens, lens + n_slots), offset(n_slots);
    std::vector<bool> seen(e->slots, false);
    int64_t total = 0;
    for (int i = 0; i < n_slots; i++) {
      const int s = slots[i];
      check_slot(*e, s);
      TORCH_CHECK(!seen[s], "batched prefill: slot ", s, " given twice");
      seen[s] = true;
      TORCH_CHECK(count[i] > 0, "batched prefill of slot ", s, " needs at least one token");
      TORCH_CHECK(e->len[s] + count[i] <= e->max_len, "batched prefill: slot ", s, " would exceed the cache length ",
                  e->max_len, " (has ", e->len[s], ", adding ", count[i], ")");
      offset[i] = total;
      for (int64_t j = 0; j < count[i]; j++) {
        const int64_t id = ids[total + j];
        TORCH_CHECK(id >= 0 && id < V, "batched prefill of slot ", s, ": token id ", id, " (position ", j,
                    ") outside the vocabulary [0,", V, ")");
      }
      total += count[i];
    }
    c10::InferenceMode inference;
    const bool fused = path(*e) == kFused;
    const auto &c = e->m->cfg;
    // Slots are taken in the given order, as many per forward as keep the
    // padded tokens and the attention scores under their bounds; a forward
    // always takes at least one slot.
    for (int i0 = 0; i0 < n_slots;) {
      int i1 = i0 + 1;
      // A sliding layer's scores span its ring and the new keys where a
      // slot of the forward holds tokens (keys), else the new keys.
      auto keys = [&](int64_t n, int64_t L, bool held) { return std::max(L, held ? e->ring + n : n); };
      int64_t n = count[i0], L = e->len[sl[i0]] + count[i0];
      bool held = e->len[sl[i0]] > 0;
      for (; i1 < n_slots; i1++) {
        const int64_t n2 = std::max(n, count[i1]), L2 = std::max(L, e->len[sl[i1]] + count[i1]);
        const bool held2 = held || e->len[sl[i1]] > 0;
        const int64_t rows = i1 - i0 + 1;
        if (rows * n2 > e->prefill_tokens || rows * c.heads * n2 * keys(n2, L2, held2) > kPrefillScores) break;
        n = n2;
        L = L2;
        held = held2;
      }
      const int64_t S = i1 - i0;
      // The chunk's tokens, each row padded with token 0 to the longest.
      std::vector<int64_t> padded(S * n, 0);
      for (int64_t i = 0; i < S; i++)
        std::copy(ids + offset[i0 + i], ids + offset[i0 + i] + count[i0 + i], padded.begin() + i * n);
      std::vector<int64_t> cs(sl.begin() + i0, sl.begin() + i1), cn(count.begin() + i0, count.begin() + i1);
      at::Tensor l = run(*e, cs, upload(padded.data(), {S, n}, e->m->dev), fused, nullptr, cn);
      e->pending.index_copy_(0, upload(cs.data(), {S}, e->m->dev), l);
      for (int64_t s : cs) e->has_pending[s] = true;
      i0 = i1;
    }
  });
}

int ar_engine_copy_slot(ar_engine e, int src, int dst, char **err) {
  return guard(err, [&] {
    DeviceScope on(e->m->dev);
    check_slot(*e, src);
    check_slot(*e, dst);
    c10::InferenceMode inference;
    int64_t n = e->len[src];
    for (size_t li = 0; li < e->K.size(); li++) {
      if (e->conv_state[li].defined()) {
        e->conv_state[li][dst].copy_(e->conv_state[li][src]);
        e->rec_state[li][dst].copy_(e->rec_state[li][src]);
        continue;
      }
      if (n > 0 && e->K[li].defined() && !e->m->layers[li].kv_reuse) {  // (a kv-shared layer's cache is another's)
        // A ring's entries 0..min(n, C)-1 are filled.
        const int64_t keep = e->m->layers[li].sliding ? std::min(n, e->ring) : n;
        e->K[li][dst].narrow(1, 0, keep).copy_(e->K[li][src].narrow(1, 0, keep));
        e->V[li][dst].narrow(1, 0, keep).copy_(e->V[li][src].narrow(1, 0, keep));
      }
    }
    e->len[dst] = n;
    e->routing[dst] = e->routing[src];
    e->pending[dst].copy_(e->pending[src]);
    e->has_pending[dst] = e->has_pending[src];
  });
}

int ar_engine_release(ar_engine e, int slot, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    e->len[slot] = 0;
    e->routing[slot].clear();
    e->has_pending[slot] = false;
  });
}

int ar_engine_set_record_routing(ar_engine e, int on, char **err) {
  return guard(err, [&] {
    int64_t L = 0;
    for (const auto &l : e->m->layers) L += l.router.defined() ? 1 : 0;
    TORCH_CHECK(!on || L > 0, "routing record: the model has no mixture-of-experts layer");
    for (int s = 0; on && !e->record_routing && s < e->slots; s++)
      TORCH_CHECK(e->len[s] == 0, "routing record turned on while slot ", s, " holds ", e->len[s],
                  " tokens whose routing was not recorded; release the slots first");
    e->record_routing = on != 0;
    if (!e->record_routing)
      for (auto &r : e->routing) r.clear();
  });
}

int ar_engine_routing(ar_engine e, int slot, int16_t *out, int64_t n, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    TORCH_CHECK(e->record_routing, "routing of slot ", slot, ": the engine does not record routing");
    const auto &r = e->routing[slot];
    TORCH_CHECK(static_cast<int64_t>(r.size()) == n, "routing of slot ", slot, ": ", r.size(), " choices recorded, ",
                n, " asked for");
    std::copy(r.begin(), r.end(), out);
  });
}

int ar_engine_slot_len(ar_engine e, int slot, int64_t *len, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    *len = e->len[slot];
  });
}

int ar_engine_cache_positions(ar_engine e, int64_t *positions, int64_t n, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(n == static_cast<int64_t>(e->K.size()), "cache positions: ", n, " layers asked for, the model has ",
                e->K.size());
    const int64_t scratch = e->m->dev.is_cuda() ? 1 : 0;
    for (size_t i = 0; i < e->K.size(); i++) {
      const bool own = e->K[i].defined() && e->cache_of[i] == i;
      positions[i] = own ? e->K[i].size(2) - scratch : 0;
    }
  });
}

int ar_engine_step(ar_engine e, const int *slots, int n, const ar_sampling *s, int64_t *tokens,
                   float *logprobs, char **err) {
  return guard(err, [&] {
    DeviceScope on(e->m->dev);
    TORCH_CHECK(n > 0, "step needs at least one slot");
    c10::InferenceMode inference;
    std::vector<int64_t> sl(slots, slots + n);
    std::vector<int64_t> seen(e->slots, 0);
    for (int64_t x : sl) {
      check_slot(*e, static_cast<int>(x));
      TORCH_CHECK(!seen[x]++, "slot ", x, " given twice in one step");
      TORCH_CHECK(e->has_pending[x], "slot ", x, " has nothing to continue from (prefill it first)");
    }
    const int64_t V = e->m->cfg.vocab;
    const Path p = path(*e);
    const int64_t replays = e->replays;
    auto t = Clock::now();
    // Plain temperature sampling and greedy decoding read the pending rows
    // in place (kernels path); top-k and top-p go through libtorch.
    bool plain = (s->top_k <= 0 || s->top_k >= V) && !(s->top_p > 0 && s->top_p < 1);
    float *pending = e->pending.data_ptr<float>();
    if (p == kKernels && plain) {
      std::vector<double> u(n, 0.0);
      std::uniform_real_distribution<double> unif(0.0, 1.0);
      if (s->temperature > 0)
        for (int i = 0; i < n; i++) u[i] = unif(e->rng[sl[i]]);
      parallel_tasks(n, [&](int64_t i) {
        e->fast->sample(pending + sl[i] * V, V, s->temperature, u[i], &tokens[i], &logprobs[i]);
      });
    } else {
      at::Tensor idx = upload(sl.data(), {n}, e->m->dev);
      sample(*e, sl, e->pending.index_select(0, idx), *s, tokens, logprobs);
    }
    e->prof.sampling += since(t);
    if (p == kKernels) {
      std::vector<int64_t> start(n);
      std::vector<float *> rows(n);
      for (int i = 0; i < n; i++) {
        start[i] = e->len[sl[i]];
        TORCH_CHECK(start[i] + 1 <= e->max_len, "slot ", sl[i], " would exceed the cache length ", e->max_len);
        rows[i] = pending + sl[i] * V;
      }
      e->fast->forward(sl.data(), start.data(), tokens, n, e->K, e->V, rows.data(), &e->prof);
      for (int i = 0; i < n; i++) e->len[sl[i]] = start[i] + 1;
    } else {
      at::Tensor idx = upload(sl.data(), {n}, e->m->dev);
      double inside = e->prof.products + e->prof.attention;
      at::Tensor l;
#ifdef AGENTRL_CUDA
      if (p == kFused && e->m->dev.is_cuda()) l = graph_step(*e, sl, tokens);
#endif
      if (!l.defined()) l = run(*e, sl, upload(tokens, {n, 1}, e->m->dev), p == kFused, &e->prof);
      e->pending.index_copy_(0, idx, l);
      // run added its products and attention; the rest is other
      e->prof.other += since(t) - (e->prof.products + e->prof.attention - inside);
    }
    if (e->replays == replays) e->eager_steps++;
    e->prof.steps++;
  });
}

int ar_engine_set_decode(ar_engine e, int mode, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(mode >= AR_DECODE_AUTO && mode <= AR_DECODE_UNFUSED, "unknown decode mode ", mode);
    TORCH_CHECK(mode != AR_DECODE_KERNELS || e->fast != nullptr, "the hand-written decode step cannot run here: ",
                e->no_fast);
    TORCH_CHECK(mode != AR_DECODE_KERNELS || e->m->autocast == at::ScalarType::Undefined,
                "the hand-written decode step cannot run here: autocast is on");
    e->mode = mode;
  });
}

int ar_engine_decode_path(ar_engine e, int *p, char **why, char **isa, char **err) {
  return guard(err, [&] {
    *p = path(*e);
    if (why != nullptr) {
      std::string no = e->fast == nullptr ? e->no_fast : e->m->autocast != at::ScalarType::Undefined ? "autocast is on" : "";
      *why = no.empty() ? nullptr : strdup(no.c_str());
    }
    if (isa != nullptr) *isa = e->fast == nullptr ? nullptr : strdup(e->fast->isa());
  });
}

int ar_model_cpu_decode(ar_model m, char **isa, char **why, char **err) {
  return guard(err, [&] {
    std::string no;
    const char *k = nullptr;
    const bool ok = FastDecoder::supported(*m, &no, &k, true);
    *isa = ok ? strdup(k) : nullptr;
    *why = ok ? nullptr : strdup(no.c_str());
  });
}

int ar_engine_cuda_graphs(ar_engine e, int64_t *captured, char **off, char **err) {
  return guard(err, [&] {
    *captured = 0;
    *off = nullptr;
#ifdef AGENTRL_CUDA
    *captured = static_cast<int64_t>(e->graphs.size());
    if (!e->graphs_off.empty()) *off = strdup(e->graphs_off.c_str());
#else
    (void)e;
#endif
  });
}

int ar_engine_counters(ar_engine e, int64_t *refreshes, int64_t *captures, int64_t *replays, int64_t *eager_steps,
                       char **err) {
  return guard(err, [&] {
    *refreshes = e->refreshes;
    *captures = e->captures;
    *replays = e->replays;
    *eager_steps = e->eager_steps;
  });
}

int ar_engine_profile(ar_engine e, double *phases, int64_t *steps, int reset, char **err) {
  return guard(err, [&] {
    phases[0] = e->prof.products;
    phases[1] = e->prof.attention;
    phases[2] = e->prof.sampling;
    phases[3] = e->prof.other;
    *steps = e->prof.steps;
    if (reset) e->prof = StepProfile{};
  });
}

int ar_engine_logits(ar_engine e, int slot, float *dst, int64_t vocab, char **err) {
  return guard(err, [&] {
    DeviceScope on(e->m->dev);
    check_slot(*e, slot);
    TORCH_CHECK(vocab == e->m->cfg.vocab, "buffer holds ", vocab, " logits, vocab is ", e->m->cfg.vocab);
    at::Tensor row = e->pending[slot].to(at::kCPU).contiguous();
    std::memcpy(dst, row.data_ptr<float>(), sizeof(float) * vocab);
  });
}

int ar_engine_set_prefill_tokens(ar_engine e, int64_t tokens, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(tokens >= 0, "prefill tokens per forward must be positive (0: the default), got ", tokens);
    e->prefill_tokens = tokens == 0 ? kPrefillTokens : tokens;
  });
}

int ar_engine_seed(ar_engine e, int slot, uint64_t seed, char **err) {
  return guard(err, [&] {
    check_slot(*e, slot);
    e->rng[slot].seed(seed);
  });
}

}  // extern "C"

extern "C" int ar_check_graph_replay(ar_tensor eager, ar_tensor replayed, int64_t slots, char **err) {
  return guard(err, [&] { check_graph_replay(T(eager), T(replayed), slots); });
}
