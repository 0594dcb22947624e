// decode.h: the CPU decode step of the KV-cache engine, written out by hand
// (decode.cpp). A decode step moves one token per slot through the model: at
// batch <= 16 every weight matrix is read once per step and used for a handful
// of rows, so the step is bound by memory bandwidth, not by arithmetic. The
// libtorch path spends most of its time elsewhere: GEMM packing of the weight
// for an 8-row product, a few hundred small ops each with its dispatch and
// allocation, masks rebuilt every step, sorting-free but full-vocab sampling
// through several tensors. Here each product is one pass over the weights in
// their Hugging Face [out, in] layout (so the engine reads the policy's own
// tensors: nothing to copy, nothing to go stale when the policy is updated),
// and everything between the products is a loop over a few thousand floats
// in preallocated buffers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model.h"
#include "profile.h"

namespace ar {

// parallel_tasks calls fn(i) for every i in [0, n), spread over the
// calling thread and up to at::get_num_threads() - 1 workers of the
// decode step's own pool, and returns when every call has returned. Tasks
// are claimed one at a time from a shared counter and the caller works
// too, so a worker that another process keeps off its core costs nothing:
// the caller waits only for tasks a worker has actually started (an
// OpenMP region waits for every thread to arrive). Idle workers spin for
// ~50 us, long enough to span the serial gaps of a step, then sleep. fn
// must not throw (it may run on a worker thread).
void parallel_tasks(int64_t n, const std::function<void(int64_t)> &fn);

// cpu_kernels is the hand-written kernels' setting, AGENTRL_CPU_KERNELS:
// "auto" (unset: the best instruction set this CPU runs: AVX-512, else
// AVX2 with FMA), "avx512" or "avx2" (those kernels, where the CPU has
// them) or "off" (libtorch's decode step, as on a CPU without either).
// Tests and benchmarks pin it to run as another machine would; any other
// value is an error naming it.
std::string cpu_kernels();

struct Kernels;  // one instruction set's kernels (decode.cpp)

// FastDecoder runs decode steps of one model for up to `slots` slots.
class FastDecoder {
 public:
  // supported says whether this machine and model can use the hand-written
  // step: a CPU model (any device with any_device: what a CPU engine would
  // do with the model, as the dry run asks of a model it only describes)
  // with f32 or bf16 weights, no autocast, attention and dense layers only,
  // a head_dim that is a multiple of 16 up to 256, and kernels for this CPU
  // under cpu_kernels(): AVX-512 (F, BW, VL, DQ) or AVX2 with FMA. If so,
  // *isa (when not null) names the instruction set, "avx512" or "avx2";
  // otherwise *why says what is missing. A bad AGENTRL_CPU_KERNELS throws.
  static bool supported(const ar_model_s &m, std::string *why, const char **isa = nullptr, bool any_device = false);

  // The kernels are chosen as supported chooses them (it throws where none run).
  FastDecoder(const ar_model_s &m, int slots, int64_t max_len);

  // isa is the instruction set of the kernels this step runs.
  const char *isa() const;

  // forward appends tokens[i] at position start[i] of cache slot slots[i]
  // (i < S), writing the new keys and values into K and V (per layer
  // [slots, kv, max_len, hd] in the model's dtype), and writes the logits
  // (vocab floats) of each slot's new token to logits[i].
  void forward(const int64_t *slots, const int64_t *start, const int64_t *tokens, int64_t S,
               std::vector<at::Tensor> &K, std::vector<at::Tensor> &V, float *const *logits, StepProfile *prof);

  // sample draws a token from a row of V logits at temperature T (> 0;
  // greedy when T <= 0) with the uniform u in [0, 1), by inverse CDF: the
  // first token whose cumulative probability reaches u times the total, as
  // the libtorch path does. *lp is log softmax(logits / T)[token] (T = 1
  // when greedy). No top-k or top-p: those go through the libtorch path.
  void sample(const float *row, int64_t V, double T, double u, int64_t *token, float *lp) const;

 private:
  const ar_model_s &m_;
  const Kernels *k_ = nullptr;
  int64_t max_len_;
  // Activations, f32 unless noted: residual x and normed h [slots, hidden];
  // qkv [slots, (heads + 2 kv) * hd]; att [slots, heads * hd]; gu [slots,
  // 2 * inter] (gate then up); act [slots, inter];
  // scores [slots, heads, max_len]; the rotary tables [slots, hd/2].
  std::vector<float> x_, h_, qkv_, att_, gu_, act_, scores_, cos_, sin_;
};

}  // namespace ar
