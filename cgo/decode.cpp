// decode.cpp: the hand-written CPU decode step (see decode.h for why).
//
// Products. y[m, o] = sum_k x[m, k] W[o, k] (+ b[o]) for the few rows m of a
// decode batch, reading W where it is, in its HF [out, in] layout: each
// output row is a dot product of a contiguous weight row with x. A kernel
// call takes R weight rows and M input rows at a time (R x M accumulators in
// registers: 4 x 4 of the 32 zmm registers on AVX-512, 3 x 4 of the 16 ymm
// registers on AVX2); the R weight rows (at most 4 x 8 KB here) stay in L1
// while further groups of input rows reuse them, so each weight byte comes
// from memory once per step whatever the batch. Several matrices that read
// the same input (q, k and v; gate and up) are one "fused" product: one pass
// over the input, one parallel region, their rows handed out together, with
// no concatenated copy of the weights to keep in sync with the policy.
// Threads take chunks of 16 R rows from a shared counter (parallel_tasks),
// so a core slowed by other work takes fewer; the last few chunks are split
// in quarters so that the threads finish close together.
//
// bf16 weights are widened to f32 in registers (exact) and multiplied with
// f32 inputs; the activations between products stay f32, which is at least
// as accurate as the libtorch bf16 path (whose activations are bf16).
//
// Everything else (norms, RoPE, attention over the cache, SiLU, residuals)
// is a loop over preallocated f32 buffers; attention runs one task per
// (slot, kv head) in parallel.
//
// Instruction sets. The kernels (decode_kernels.inc) are written once over
// a vector type V and compiled twice, in the namespaces avx512 (16 floats a
// vector) and avx2 (8 floats, AVX2 with FMA), each function with its own
// target attribute: no #pragma GCC target, whose region would compile the
// inline functions of the headers it covers for that instruction set, and
// the linker could then pick those copies for generic callers. Which set
// runs is chosen at run time (FastDecoder::supported, AGENTRL_CPU_KERNELS);
// everything outside the two namespaces is generic x86-64 code.
#include "decode.h"

// GCC 12's _mm512_reduce_add_ps starts from _mm256_undefined_pd(), which
// -Wuninitialized (and -Wmaybe-uninitialized) report at every use: a false
// positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <ATen/Parallel.h>

#include <cstdlib>
#include <cstring>

namespace ar {

std::string cpu_kernels() {
  const char *v = std::getenv("AGENTRL_CPU_KERNELS");
  std::string s = v == nullptr || *v == '\0' ? "auto" : v;
  TORCH_CHECK(s == "auto" || s == "avx512" || s == "avx2" || s == "off", "AGENTRL_CPU_KERNELS=", s,
              ": want auto (the best this CPU runs), avx512, avx2 or off (libtorch's decode step)");
  return s;
}

}  // namespace ar

// The kernels are x86-64 (AVX-512 or AVX2, chosen at run time); elsewhere
// the file compiles to stubs that report the step unsupported, so the
// engine takes the fused libtorch path.
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

namespace ar {

namespace {

// Pool is parallel_tasks' set of workers (see decode.h). A job lives on the
// caller's stack; `current` publishes it. Workers announce themselves in
// `inside` before reading `current`, and the caller withdraws the job
// before waiting for `inside` to drain: with sequentially consistent
// atomics, a worker either sees the job withdrawn or is waited for, so no
// worker touches a job after its caller returned.
class Pool {
 public:
  struct Job {
    const std::function<void(int64_t)> *fn;
    int64_t n;
    uint64_t seq;
    int want;  // workers that may join
    std::atomic<int64_t> next{0};
  };

  static Pool &get() {
    static Pool *p = new Pool();  // never destroyed: workers outlive static destructors
    return *p;
  }

  void run(int64_t n, const std::function<void(int64_t)> &fn) {
    int want = std::min<int64_t>(at::get_num_threads(), n) - 1;
    if (want <= 0) {
      for (int64_t i = 0; i < n; i++) fn(i);
      return;
    }
    std::lock_guard<std::mutex> one_job(run_mu_);  // engines on several threads take turns
    while (static_cast<int>(workers_.size()) < want) {
      int id = static_cast<int>(workers_.size());
      workers_.emplace_back([this, id] { loop(id); });
    }
    Job job;
    job.fn = &fn;
    job.n = n;
    job.seq = ++seq_;
    job.want = want;
    current_.store(&job);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lk(mu_);
      cv_.notify_all();
    }
    work(job);
    current_.store(nullptr);
    while (inside_.load() != 0) _mm_pause();
  }

 private:
  static void work(Job &j) {
    for (int64_t i; (i = j.next.fetch_add(1)) < j.n;) (*j.fn)(i);
  }

  void loop(int id) {
    uint64_t last = 0;
    for (;;) {
      auto t0 = std::chrono::steady_clock::now();
      for (int spin = 0;; spin++) {
        inside_.fetch_add(1);
        Job *j = current_.load();
        if (j != nullptr && j->seq != last) {
          last = j->seq;
          if (id < j->want) work(*j);
          inside_.fetch_sub(1);
          t0 = std::chrono::steady_clock::now();
          continue;
        }
        inside_.fetch_sub(1);
        _mm_pause();
        if ((spin & 63) == 0 && std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(50)) break;
      }
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lk, [&] {
        Job *j = current_.load();
        return j != nullptr && j->seq != last;
      });
      sleepers_.fetch_sub(1);
    }
  }

  std::mutex run_mu_, mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::atomic<Job *> current_{nullptr};
  std::atomic<int> inside_{0}, sleepers_{0};
  uint64_t seq_ = 0;
};

}  // namespace

void parallel_tasks(int64_t n, const std::function<void(int64_t)> &fn) { Pool::get().run(n, fn); }

// DotFn is a product kernel call: res[a*R + r] = x[a] . w[r] for R weight
// rows (stride K) and M input rows (stride ldx), R and M its own.
using DotFn = void (*)(const void *w, int64_t K, const float *x, int64_t ldx, float *res);

// Product is one instruction set's product kernels for one weight type:
// calls of up to rows weight rows x in_rows input rows (fn[weight rows -
// 1][input rows - 1]), work handed out in chunks of chunk rows.
struct Product {
  int rows, in_rows;
  int64_t chunk;
  std::array<std::array<DotFn, 4>, 4> fn;
};

// AttendFn is attention for one cache type and head_dim: the g query heads
// q [g, hd] that share a kv head attend to its keys and values K, V [L, hd]
// (cache rows) into out [g, hd]; scores holds g * L floats.
using AttendFn = void (*)(const float *q, int64_t g, const void *K, const void *V, int64_t L, float scale,
                          float *scores, float *out);

// Kernels is one instruction set's kernels, the table the generic step
// below calls through (decode_kernels.inc fills one per set).
struct Kernels {
  const char *isa;  // "avx512" or "avx2"
  Product f32, bf16;  // the products' kernels, by weight type
  // reorder copies input rows x [M, K] to out with each full block of 2W
  // columns as its W even columns, then its W odd ones: the order the bf16
  // kernels multiply them in.
  void (*reorder)(const float *x, int64_t M, int64_t K, float *out);
  // attention by [bf16][head_dim / 16 - 1] (head_dim <= 256)
  std::array<AttendFn, 16> attend[2];
  // the residual add and RMSNorm, by the norm weights' type
  void (*norm_f32)(float *x, float *h, const float *w, int64_t S, int64_t H, float eps, bool add);
  void (*norm_bf16)(float *x, float *h, const uint16_t *w, int64_t S, int64_t H, float eps, bool add);
  void (*silu_mul)(const float *gate, const float *up, float *out, int64_t n);
  // the sampler's row statistics
  void (*row_max)(const float *row, int64_t V, float *mx, int64_t *arg);
  double (*block_sums)(const float *row, int64_t V, float mx, float invT, float *blocks);
  void (*block_exps)(const float *row, int64_t n, float mx, float invT, float *out);
};

namespace {

// ---- scalar helpers ----------------------------------------------------------

inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, as libtorch's (and the hardware's) f32 -> bf16.
inline uint16_t f32_to_bf16(float f) {
  if (std::isnan(f)) return 0x7fc0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

// deinterleave<B> copies the rows x [M, K] to out, each full block of B
// columns reordered as its B/2 even columns, then its B/2 odd ones (the
// order the bf16 kernels multiply them in, B = 2W); the columns after the
// last full block keep their order. Generic code, always inlined:
// attention reorders each query head with it, on its hot path (out of
// line, attention took 13% longer).
template <int B>
inline __attribute__((always_inline)) void deinterleave(const float *x, int64_t M, int64_t K, float *out) {
  for (int64_t m = 0; m < M; m++) {
    const float *xi = x + m * K;
    float *o = out + m * K;
    int64_t k = 0;
    for (; k + B <= K; k += B)
      for (int i = 0; i < B / 2; i++) {
        o[k + i] = xi[k + 2 * i];
        o[k + B / 2 + i] = xi[k + 2 * i + 1];
      }
    for (; k < K; k++) o[k] = xi[k];
  }
}

// ---- AVX-512 -----------------------------------------------------------------

namespace avx512 {

#define AR_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define AR_INLINE AR_TARGET inline __attribute__((always_inline))

// V: 16 floats in a zmm register; tails as lane masks.
struct V {
  using vec = __m512;
  using Tail = __mmask16;  // the first n lanes
  static constexpr int W = 16;
  static constexpr const char *kName = "avx512";
  // 4 x 4 accumulators (of 32 registers) in the products, 16 in attention;
  // bf16 rows widened both halves at once (see dot_pairs).
  static constexpr int kRowsF32 = 4, kInRowsF32 = 4, kRowsBF16 = 4, kInRowsBF16 = 4, kAccRegs = 16;
  static constexpr bool kHalves = false;

  static AR_INLINE Tail tail(int64_t n) {
    return n >= 16 ? static_cast<Tail>(0xffff) : n <= 0 ? static_cast<Tail>(0) : static_cast<Tail>((1u << n) - 1);
  }
  static AR_INLINE vec zero() { return _mm512_setzero_ps(); }
  static AR_INLINE vec set1(float x) { return _mm512_set1_ps(x); }
  static AR_INLINE vec load(const float *p) { return _mm512_loadu_ps(p); }
  static AR_INLINE vec load(const uint16_t *p) {
    __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  // The first lanes of t, zeros beyond (nothing past them is read).
  static AR_INLINE vec load(const float *p, Tail t) { return _mm512_maskz_loadu_ps(t, p); }
  static AR_INLINE vec load(const uint16_t *p, Tail t) {
    __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(t, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static AR_INLINE void store(float *p, vec v) { _mm512_storeu_ps(p, v); }
  static AR_INLINE void store(float *p, Tail t, vec v) { _mm512_mask_storeu_ps(p, t, v); }
  static AR_INLINE vec add(vec a, vec b) { return _mm512_add_ps(a, b); }
  static AR_INLINE vec sub(vec a, vec b) { return _mm512_sub_ps(a, b); }
  static AR_INLINE vec mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
  static AR_INLINE vec div(vec a, vec b) { return _mm512_div_ps(a, b); }
  static AR_INLINE vec min(vec a, vec b) { return _mm512_min_ps(a, b); }
  static AR_INLINE vec max(vec a, vec b) { return _mm512_max_ps(a, b); }
  static AR_INLINE vec fmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }    // a b + c
  static AR_INLINE vec fnmadd(vec a, vec b, vec c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a b
  // a in the lanes of t, b elsewhere
  static AR_INLINE vec select(Tail t, vec a, vec b) { return _mm512_mask_blend_ps(t, b, a); }
  static AR_INLINE vec round(vec x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // y 2^n for integral n in [-128, 128], rounded once
  static AR_INLINE vec scale2(vec y, vec n) { return _mm512_scalef_ps(y, n); }
  static AR_INLINE float reduce_add(vec v) { return _mm512_reduce_add_ps(v); }
  static AR_INLINE float reduce_max(vec v) { return _mm512_reduce_max_ps(v); }
  // The bits of the lanes equal to x.
  static AR_INLINE unsigned equal(vec v, float x) { return _mm512_cmp_ps_mask(v, _mm512_set1_ps(x), _CMP_EQ_OQ); }

  // sum_lanes: lane i of the result is the sum of v[i]'s lanes, for 16
  // vectors. A transposing tree (pairs within 128-bit lanes, then across
  // them) costs 15 adds and 30 shuffles for all 16, where 16 separate
  // horizontal sums cost about 8 dependent instructions each.
  static AR_INLINE vec sum_lanes(const vec *v) {
    __m512 s[8], u[4];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
      s[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
      __m512d a = _mm512_castps_pd(s[2 * i]), b = _mm512_castps_pd(s[2 * i + 1]);
      u[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    __m512 v01 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88), _mm512_shuffle_f32x4(u[0], u[1], 0xdd));
    __m512 v23 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x88), _mm512_shuffle_f32x4(u[2], u[3], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(v01, v23, 0x88), _mm512_shuffle_f32x4(v01, v23, 0xdd));
  }

  // even and odd: of 32 bf16 (16 pairs in 32-bit lanes), the even columns
  // as f32 (each lane's low half moved up: a byte shuffle) and the odd ones
  // (its low half cleared: a mask). Both are exact. The shuffle runs on the
  // vector port that does not multiply (port 5), where a shift would take a
  // slot of the one 512-bit FMA port on the AVX-512 machine's cores.
  static AR_INLINE vec even(const uint16_t *p) {
    const __m512i up = _mm512_set4_epi32(0x0d0c8080, 0x09088080, 0x05048080, 0x01008080);
    return _mm512_castsi512_ps(_mm512_shuffle_epi8(_mm512_loadu_si512(p), up));
  }
  static AR_INLINE vec odd(const uint16_t *p) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
};

#include "decode_kernels.inc"

#undef AR_INLINE
#undef AR_TARGET

}  // namespace avx512

// ---- AVX2 with FMA -----------------------------------------------------------

namespace avx2 {

#define AR_TARGET __attribute__((target("avx2,fma")))
#define AR_INLINE AR_TARGET inline __attribute__((always_inline))

// V: 8 floats in a ymm register. AVX2 has no lane masks: a tail is a
// vector mask and its length; f32 tails load with vmaskmovps, bf16 tails
// and every partial store go through a small buffer (vmaskmovps stores are
// slow on AMD's cores).
struct V {
  using vec = __m256;
  struct Tail {
    __m256i m;  // all ones in the first n lanes
    int n;
  };
  static constexpr int W = 8;
  static constexpr const char *kName = "avx2";
  // 16 registers: the products take 3 x 4 accumulators and 3 weight rows
  // (15 registers, the inputs read as memory operands; bf16 rows widened
  // one half at a time, see dot_pairs); attention keeps 8 accumulators.
  // Measured on the AVX-512 machine (Zen 4) against 3 x 3, 4 x 3, 2 x 4 and
  // 4 x 4: in cache, f32 3 x 4 45-49 G multiply-adds/s per core against
  // 44-46 for 3 x 3 and 25-28 for the others, which spill or wait on fewer
  // accumulator chains; bf16 3 x 4 by halves 43-45 (at 16 input rows 50),
  // against 37-39 for the best tiling with both halves live (3 x 2).
  static constexpr int kRowsF32 = 3, kInRowsF32 = 4, kRowsBF16 = 3, kInRowsBF16 = 4, kAccRegs = 8;
  static constexpr bool kHalves = true;

  static AR_INLINE Tail tail(int64_t n) {
    const int c = n <= 0 ? 0 : n >= 8 ? 8 : static_cast<int>(n);
    return {_mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)), c};
  }
  static AR_INLINE vec zero() { return _mm256_setzero_ps(); }
  static AR_INLINE vec set1(float x) { return _mm256_set1_ps(x); }
  static AR_INLINE vec load(const float *p) { return _mm256_loadu_ps(p); }
  static AR_INLINE vec load(const uint16_t *p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  // The first lanes of t, zeros beyond (nothing past them is read).
  static AR_INLINE vec load(const float *p, Tail t) { return _mm256_maskload_ps(p, t.m); }
  static AR_INLINE vec load(const uint16_t *p, Tail t) {
    if (t.n == 8) return load(p);
    uint16_t b[8] = {};
    std::memcpy(b, p, sizeof(uint16_t) * t.n);
    return load(b);
  }
  static AR_INLINE void store(float *p, vec v) { _mm256_storeu_ps(p, v); }
  static AR_INLINE void store(float *p, Tail t, vec v) {
    if (t.n == 8) {
      _mm256_storeu_ps(p, v);
      return;
    }
    float b[8];
    _mm256_storeu_ps(b, v);
    std::memcpy(p, b, sizeof(float) * t.n);
  }
  static AR_INLINE vec add(vec a, vec b) { return _mm256_add_ps(a, b); }
  static AR_INLINE vec sub(vec a, vec b) { return _mm256_sub_ps(a, b); }
  static AR_INLINE vec mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
  static AR_INLINE vec div(vec a, vec b) { return _mm256_div_ps(a, b); }
  static AR_INLINE vec min(vec a, vec b) { return _mm256_min_ps(a, b); }
  static AR_INLINE vec max(vec a, vec b) { return _mm256_max_ps(a, b); }
  static AR_INLINE vec fmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }    // a b + c
  static AR_INLINE vec fnmadd(vec a, vec b, vec c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a b
  // a in the lanes of t, b elsewhere
  static AR_INLINE vec select(Tail t, vec a, vec b) { return _mm256_blendv_ps(b, a, _mm256_castsi256_ps(t.m)); }
  static AR_INLINE vec round(vec x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // y 2^n for integral n in [-128, 128], rounded once, as AVX-512's scalef:
  // 2^n is not a normal float at both ends of that range, so y is
  // multiplied by 2^h, exactly (h = floor(n/2) in [-64, 64]), then by
  // 2^(n-h), the one rounding.
  static AR_INLINE vec scale2(vec y, vec n) {
    const __m256i ni = _mm256_cvtps_epi32(n), h = _mm256_srai_epi32(ni, 1), l = _mm256_sub_epi32(ni, h);
    const __m256i bias = _mm256_set1_epi32(127);
    const vec ph = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
    const vec pl = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(l, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(y, ph), pl);
  }
  static AR_INLINE float reduce_add(vec v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  static AR_INLINE float reduce_max(vec v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
  }
  // The bits of the lanes equal to x.
  static AR_INLINE unsigned equal(vec v, float x) {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_set1_ps(x), _CMP_EQ_OQ)));
  }

  // sum_lanes: lane i of the result is the sum of v[i]'s lanes, for 8
  // vectors: two rounds of horizontal adds sum each vector's halves within
  // their 128-bit lanes, then the two lanes are added.
  static AR_INLINE vec sum_lanes(const vec *v) {
    const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
  }

  // even and odd: of 16 bf16 (8 pairs in 32-bit lanes), the even columns
  // as f32 (a byte shuffle within each 128-bit lane) and the odd ones (a
  // mask), as on AVX-512.
  static AR_INLINE vec even(const uint16_t *p) {
    const __m256i up = _mm256_setr_epi32(0x01008080, 0x05048080, 0x09088080, 0x0d0c8080, 0x01008080, 0x05048080,
                                         0x09088080, 0x0d0c8080);
    return _mm256_castsi256_ps(_mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)), up));
  }
  static AR_INLINE vec odd(const uint16_t *p) {
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)),
                                                _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  }
};

#include "decode_kernels.inc"

#undef AR_INLINE
#undef AR_TARGET

}  // namespace avx2

bool cpu_has(const char *feature) {
  __builtin_cpu_init();
  if (std::strcmp(feature, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
  if (std::strcmp(feature, "avx512bw") == 0) return __builtin_cpu_supports("avx512bw");
  if (std::strcmp(feature, "avx512vl") == 0) return __builtin_cpu_supports("avx512vl");
  if (std::strcmp(feature, "avx512dq") == 0) return __builtin_cpu_supports("avx512dq");
  if (std::strcmp(feature, "avx2") == 0) return __builtin_cpu_supports("avx2");
  if (std::strcmp(feature, "fma") == 0) return __builtin_cpu_supports("fma");
  return false;
}

// lacking is the comma-separated features of fs this CPU lacks ("" when it has them all).
std::string lacking(std::initializer_list<const char *> fs) {
  std::string out;
  for (const char *f : fs)
    if (!cpu_has(f)) out += (out.empty() ? "" : ", ") + std::string(f);
  return out;
}

// choose is the kernels AGENTRL_CPU_KERNELS picks on this CPU: auto, the
// AVX-512 ones where the CPU has F, BW, VL and DQ, else the AVX2 ones where
// it has AVX2 and FMA; avx512 or avx2, those where the CPU has them. Or
// nullptr, and *why says why not.
const Kernels *choose(std::string *why) {
  const std::string s = cpu_kernels();
  const std::string no512 = lacking({"avx512f", "avx512bw", "avx512vl", "avx512dq"}), no2 = lacking({"avx2", "fma"});
  if (s == "off") {
    *why = "AGENTRL_CPU_KERNELS=off";
  } else if (s == "avx512" || (s == "auto" && no512.empty())) {
    if (no512.empty()) return &avx512::kernels;
    *why = "AGENTRL_CPU_KERNELS=avx512, but the CPU lacks " + no512;
  } else if (no2.empty()) {
    return &avx2::kernels;
  } else if (s == "avx2") {
    *why = "AGENTRL_CPU_KERNELS=avx2, but the CPU lacks " + no2;
  } else {
    *why = "the CPU has neither AVX-512 (it lacks " + no512 + ") nor AVX2 with FMA (it lacks " + no2 + ")";
  }
  return nullptr;
}

// A matrix of a (possibly fused) product: rows x K weights (and a bias, or
// null) in the model's dtype; its outputs go to columns col.. of each output row.
struct Seg {
  const at::Tensor *w, *b;
  int64_t col;
};

// segments are group g's parts of layer l as the segments of one product:
// each part's weight and bias at its first output column, in the order
// the fused layout gives them.
std::vector<Seg> segments(const Layer &l, const Group &g) {
  std::vector<Seg> out;
  int64_t col = 0;
  for (int i = 0; i < g.n; i++) {
    const Group::Part &p = g.parts[i];
    out.push_back({&p.weight(l), p.bias(l), col});
    col += p.weight(l).size(0);
  }
  return out;
}

// products computes out[m][seg.col + o] = x[m] . seg.w[o] + seg.b[o] for
// every segment (all with K columns, f32 or bf16 as bf16 says), m < M, with
// the kernels k; x is f32 [M, K] (for bf16 weights, read through a
// reordered copy).
void products(const Kernels &k, const std::vector<Seg> &sv, int64_t K, const float *x, int64_t M, float *const *out,
              bool bf16) {
  const Product &pr = bf16 ? k.bf16 : k.f32;
  const size_t esize = bf16 ? 2 : 4;
  const int64_t kChunk = pr.chunk;  // rows per unit of work
  constexpr size_t kTail = 4;       // the last chunks, handed out in quarters
  struct Chunk {
    size_t seg;
    int64_t r0, r1;
  };
  // One list per calling thread, kept for its capacity; the tasks read it
  // through this reference (a worker's own thread_local would be empty).
  thread_local std::vector<Chunk> chunk_buf;
  std::vector<Chunk> &chunks = chunk_buf;
  chunks.clear();
  for (size_t s = 0; s < sv.size(); s++) {
    TORCH_CHECK(sv[s].w->size(1) == K && sv[s].w->is_contiguous(), "decode: weight is not a contiguous [rows, ", K, "]");
    for (int64_t r = 0, rows = sv[s].w->size(0); r < rows; r += kChunk) chunks.push_back({s, r, std::min(rows, r + kChunk)});
  }
  // Quarter chunks at the end, so that the threads finish within a quarter
  // chunk of each other: every product ends in a barrier.
  const size_t from = chunks.size() > kTail ? chunks.size() - kTail : 0, nt = chunks.size() - from;
  Chunk tail[kTail];
  std::copy(chunks.begin() + static_cast<std::ptrdiff_t>(from), chunks.end(), tail);
  chunks.resize(from);
  for (size_t i = 0; i < nt; i++)
    for (int64_t r = tail[i].r0; r < tail[i].r1; r += kChunk / 4)
      chunks.push_back({tail[i].seg, r, std::min(tail[i].r1, r + kChunk / 4)});
  const auto total = static_cast<int64_t>(chunks.size());
  if (bf16) {
    thread_local std::vector<float> xd;
    xd.resize(M * K);
    k.reorder(x, M, K, xd.data());
    x = xd.data();
  }
  parallel_tasks(total, [&](int64_t c) {
    float res[32];  // R x M results, rounded up to whole vectors
    const Chunk &ch = chunks[c];
    const Seg &g = sv[ch.seg];
    const char *w = static_cast<const char *>(g.w->data_ptr());
    const char *b = g.b != nullptr && g.b->defined() ? static_cast<const char *>(g.b->data_ptr()) : nullptr;
    const int64_t r1 = ch.r1;
    for (int64_t r = ch.r0; r < r1; r += pr.rows) {
      int nr = static_cast<int>(std::min<int64_t>(pr.rows, r1 - r));
      for (int64_t m0 = 0; m0 < M; m0 += pr.in_rows) {
        int nm = static_cast<int>(std::min<int64_t>(pr.in_rows, M - m0));
        pr.fn[nr - 1][nm - 1](w + r * K * esize, K, x + m0 * K, K, res);
        for (int a = 0; a < nm; a++) {
          float *o = out[m0 + a] + g.col + r;
          for (int j = 0; j < nr; j++) {
            float bias = 0;
            if (b != nullptr)
              bias = bf16 ? bf16_to_f32(reinterpret_cast<const uint16_t *>(b)[r + j])
                          : reinterpret_cast<const float *>(b)[r + j];
            o[j] = res[a * nr + j] + bias;
          }
        }
      }
    }
  });
}

// rope rotates one head in place (HF rotate_half pairing: j with j + hd/2).
inline void rope_head(float *v, const float *cos, const float *sin, int64_t half) {
  for (int64_t j = 0; j < half; j++) {
    float a = v[j], b = v[j + half];
    v[j] = a * cos[j] - b * sin[j];
    v[j + half] = b * cos[j] + a * sin[j];
  }
}

}  // namespace

bool FastDecoder::supported(const ar_model_s &m, std::string *why, const char **isa, bool any_device) {
  std::string reason;
  auto no = [&](const std::string &s) {
    if (why != nullptr) *why = s;
    return false;
  };
  const Kernels *k = choose(&reason);  // first: a bad AGENTRL_CPU_KERNELS is an error whatever the model
  if (!any_device && !m.dev.is_cpu()) return no("not a CPU model");
  if (m.dtype != at::kFloat && m.dtype != at::kBFloat16) return no("weights are neither f32 nor bf16");
  if (m.autocast != at::ScalarType::Undefined) return no("autocast is on");
  if (m.cfg.gemma != 0)
    return no("the model is a Gemma 4 model (its layer shapes, norms, per-layer inputs and shared keys and values), "
              "which only the libtorch paths run");
  if (m.cfg.nemotron != 0) return no("the model is a Nemotron-H model (Mamba-2 layers), which only the libtorch paths run");
  if (m.hybrid()) return no("the model has Gated DeltaNet layers (Qwen3.5), which only the libtorch paths run");
  if (m.cfg.head_dim % 16 != 0 || m.cfg.head_dim > 256) return no("head_dim is not a multiple of 16 up to 256");
  if (m.cfg.norm_offset != 0 || m.cfg.attn_output_gate != 0 || m.rotary_dim() != m.cfg.head_dim)
    return no("Qwen3.5's attention (1 + w norms, the output gate, partial RoPE) runs on the libtorch paths only");
  if (m.cfg.experts > 0)
    for (int64_t i = 0; i < m.cfg.layers; i++)
      if (sparse(m.cfg, i)) return no("the model has mixture-of-experts layers (the libtorch path runs them)");
  if (k == nullptr) return no(reason);
  if (isa != nullptr) *isa = k->isa;
  return true;
}

FastDecoder::FastDecoder(const ar_model_s &m, int slots, int64_t max_len) : m_(m), max_len_(max_len) {
  std::string why;
  k_ = choose(&why);
  TORCH_CHECK(k_ != nullptr, "the hand-written decode step cannot run here: ", why);
  const auto &c = m.cfg;
  int64_t qkv = (c.heads + 2 * c.kv_heads) * c.head_dim;
  x_.resize(slots * c.hidden);
  h_.resize(slots * c.hidden);
  qkv_.resize(slots * qkv);
  att_.resize(slots * c.heads * c.head_dim);
  gu_.resize(slots * 2 * c.intermediate);
  act_.resize(slots * c.intermediate);
  scores_.resize(slots * c.heads * max_len);
  cos_.resize(slots * c.head_dim / 2);
  sin_.resize(slots * c.head_dim / 2);
}

const char *FastDecoder::isa() const { return k_->isa; }

void FastDecoder::forward(const int64_t *slots, const int64_t *start, const int64_t *tokens, int64_t S,
                          std::vector<at::Tensor> &K, std::vector<at::Tensor> &V, float *const *logits,
                          StepProfile *prof) {
  const auto &c = m_.cfg;
  const int64_t H = c.hidden, hd = c.head_dim, half = hd / 2, nh = c.heads, nkv = c.kv_heads, g = nh / nkv;
  const int64_t I = c.intermediate, QKV = (nh + 2 * nkv) * hd;
  const bool bf = m_.dtype == at::kBFloat16;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  const auto attention_factor = static_cast<float>(c.rope_attention_factor);
  const Kernels &k = *k_;
  const AttendFn attend = k.attend[bf ? 1 : 0][hd / 16 - 1];
  Lap lap{prof};

  // Row pointers into the activation buffers, one per slot of the batch.
  auto rows = [S](std::vector<float> &buf, int64_t width) {
    std::vector<float *> r(S);
    for (int64_t i = 0; i < S; i++) r[i] = buf.data() + i * width;
    return r;
  };
  auto hrows = rows(h_, H), qkvrows = rows(qkv_, QKV), gurows = rows(gu_, 2 * I);

  // Embedding rows, and the rotary tables at each slot's position (f32, as
  // the model computes them: freqs = position * inv_freq, cos and sin times
  // the attention factor).
  for (int64_t i = 0; i < S; i++) {
    if (bf) {
      const uint16_t *e = static_cast<const uint16_t *>(m_.embed.data_ptr()) + tokens[i] * H;
      for (int64_t j = 0; j < H; j++) x_[i * H + j] = bf16_to_f32(e[j]);
    } else {
      std::memcpy(&x_[i * H], m_.embed.data_ptr<float>() + tokens[i] * H, sizeof(float) * H);
    }
    const float *inv = m_.inv_freq.data_ptr<float>();
    for (int64_t j = 0; j < half; j++) {
      float f = static_cast<float>(start[i]) * inv[j];
      cos_[i * half + j] = std::cos(f) * attention_factor;
      sin_[i * half + j] = std::sin(f) * attention_factor;
    }
  }
  // norm: h = RMSNorm(x) with weights w, after x += h when add.
  const auto eps = static_cast<float>(c.rms_eps);
  auto norm = [&](const at::Tensor &w, bool add) {
    if (bf) k.norm_bf16(x_.data(), h_.data(), static_cast<const uint16_t *>(w.data_ptr()), S, H, eps, add);
    else k.norm_f32(x_.data(), h_.data(), w.data_ptr<float>(), S, H, eps, add);
  };
  // head_norm: RMSNorm of n heads (hd floats each) in place, with weights
  // w (Qwen3's q_norm and k_norm).
  auto head_norm = [&](float *heads, int64_t n, const at::Tensor &w) {
    if (bf) k.norm_bf16(heads, heads, static_cast<const uint16_t *>(w.data_ptr()), n, hd, eps, false);
    else k.norm_f32(heads, heads, w.data_ptr<float>(), n, hd, eps, false);
  };
  lap(&StepProfile::other);

  for (size_t li = 0; li < m_.layers.size(); li++) {
    const auto &l = m_.layers[li];
    norm(l.input_layernorm, li > 0);  // after the previous layer's MLP residual
    lap(&StepProfile::other);
    const std::vector<Seg> qkv_segs = segments(l, kQKV);
    products(k, qkv_segs, H, h_.data(), S, qkvrows.data(), bf);
    lap(&StepProfile::products);

    // Attention, one task per (slot, kv head): q/k norms (Qwen3) and RoPE
    // on its k and q heads, the cache write at the slot's position, then
    // the group's queries over the cached keys. The layer's cache holds
    // P positions per slot, position p at entry p mod P: a full layer's
    // max_len (entry p), a sliding layer's ring of min(sliding_window,
    // max_len), whose first min(L, P) entries are then exactly the keys of
    // the window (their order does not matter to attention).
    at::Tensor &kc = K[li], &vc = V[li];
    const int64_t P = kc.size(2);
    parallel_tasks(S * nkv, [&](int64_t t) {
      {
        int64_t i = t / nkv, kh = t % nkv, L = std::min(start[i] + 1, P), ent = start[i] % P;
        float *row = &qkv_[i * QKV];
        float *q = row + qkv_segs[0].col + kh * g * hd, *k = row + qkv_segs[1].col + kh * hd,
              *v = row + qkv_segs[2].col + kh * hd;
        const float *cs = &cos_[i * half], *sn = &sin_[i * half];
        if (l.q_norm.defined()) {
          head_norm(k, 1, l.k_norm);
          head_norm(q, g, l.q_norm);
        }
        rope_head(k, cs, sn, half);
        for (int64_t j = 0; j < g; j++) rope_head(q + j * hd, cs, sn, half);
        int64_t off = ((slots[i] * nkv + kh) * P) * hd;  // [slot, kh, 0, 0]
        float *out = &att_[i * nh * hd + kh * g * hd];
        float *sc = &scores_[(i * nh + kh * g) * max_len_];
        if (bf) {
          uint16_t *kp = static_cast<uint16_t *>(kc.data_ptr()) + off, *vp = static_cast<uint16_t *>(vc.data_ptr()) + off;
          for (int64_t d = 0; d < hd; d++) {
            kp[ent * hd + d] = f32_to_bf16(k[d]);
            vp[ent * hd + d] = f32_to_bf16(v[d]);
          }
          attend(q, g, kp, vp, L, scale, sc, out);
        } else {
          float *kp = kc.data_ptr<float>() + off, *vp = vc.data_ptr<float>() + off;
          std::memcpy(kp + ent * hd, k, sizeof(float) * hd);
          std::memcpy(vp + ent * hd, v, sizeof(float) * hd);
          attend(q, g, kp, vp, L, scale, sc, out);
        }
      }
    });
    lap(&StepProfile::attention);

    products(k, {{&l.o_proj, nullptr, 0}}, nh * hd, att_.data(), S, hrows.data(), bf);
    lap(&StepProfile::products);
    norm(l.post_attention_layernorm, true);
    lap(&StepProfile::other);
    const std::vector<Seg> gu_segs = segments(l, kGateUp);
    products(k, gu_segs, H, h_.data(), S, gurows.data(), bf);
    lap(&StepProfile::products);
    for (int64_t i = 0; i < S; i++)
      k.silu_mul(&gu_[i * 2 * I + gu_segs[0].col], &gu_[i * 2 * I + gu_segs[1].col], &act_[i * I], I);
    lap(&StepProfile::other);
    products(k, {{&l.down_proj, nullptr, 0}}, I, act_.data(), S, hrows.data(), bf);
    lap(&StepProfile::products);
  }
  norm(m_.norm, !m_.layers.empty());
  lap(&StepProfile::other);
  products(k, {{&m_.lm_head, nullptr, 0}}, H, h_.data(), S, logits, bf);
  lap(&StepProfile::products);
}

void FastDecoder::sample(const float *row, int64_t V, double T, double u, int64_t *token, float *lp) const {
  const bool greedy = T <= 0;
  const float invT = greedy ? 1.0f : static_cast<float>(1.0 / T);
  float mx;
  int64_t arg;
  k_->row_max(row, V, &mx, &arg);
  thread_local std::vector<float> blocks;
  blocks.resize((V + 15) / 16);
  const double z = k_->block_sums(row, V, mx, invT, blocks.data());
  int64_t tok = arg;
  if (!greedy) {
    // The first token whose cumulative mass reaches u * z, skipping tokens
    // of zero probability (the CDF is flat there); the most likely token
    // when rounding leaves the target beyond the total.
    const double target = u * z;
    double cum = 0;
    for (int64_t b = 0; b < static_cast<int64_t>(blocks.size()); b++) {
      if (cum + blocks[b] < target) {
        cum += blocks[b];
        continue;
      }
      float e[16];
      int64_t n = std::min<int64_t>(16, V - b * 16);
      k_->block_exps(row + b * 16, n, mx, invT, e);
      int64_t found = -1;
      for (int64_t j = 0; j < n; j++) {
        cum += e[j];
        if (cum >= target && e[j] > 0) {
          found = b * 16 + j;
          break;
        }
      }
      if (found >= 0) {
        tok = found;
        break;
      }
    }
  }
  *token = tok;
  *lp = static_cast<float>((row[tok] - mx) * invT - std::log(z));
}

}  // namespace ar

#else  // not x86-64

namespace ar {

void parallel_tasks(int64_t n, const std::function<void(int64_t)> &fn) {
  for (int64_t i = 0; i < n; i++) fn(i);
}

bool FastDecoder::supported(const ar_model_s &, std::string *why, const char **, bool) {
  cpu_kernels();  // a bad value is an error everywhere
  if (why != nullptr) *why = "not an x86-64 CPU";
  return false;
}

FastDecoder::FastDecoder(const ar_model_s &m, int, int64_t max_len) : m_(m), max_len_(max_len) {
  TORCH_CHECK(false, "the hand-written decode step needs an x86-64 CPU");
}

const char *FastDecoder::isa() const { return ""; }

void FastDecoder::forward(const int64_t *, const int64_t *, const int64_t *, int64_t, std::vector<at::Tensor> &,
                          std::vector<at::Tensor> &, float *const *, StepProfile *) {
  TORCH_CHECK(false, "the hand-written decode step needs an x86-64 CPU");
}

void FastDecoder::sample(const float *, int64_t, double, double, int64_t *, float *) const {
  TORCH_CHECK(false, "the hand-written sampler needs an x86-64 CPU");
}

}  // namespace ar

#endif
