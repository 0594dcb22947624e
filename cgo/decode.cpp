// decode.cpp: the hand-written CPU decode step (see decode.h for why).
//
// Products. y[m, o] = sum_k x[m, k] W[o, k] (+ b[o]) for the few rows m of a
// decode batch, reading W where it is, in its HF [out, in] layout: each
// output row is a dot product of a contiguous weight row with x. The kernel
// takes 4 weight rows and 4 input rows at a time (16 accumulators, 8 loads
// per 16 fused multiply-adds); the 4 weight rows (at most 4 x 8 KB here)
// stay in L1 while further groups of 4 input rows reuse them, so each
// weight byte comes from memory once per step whatever the batch. Several
// matrices that read the same input (q, k and v; gate and up) are one
// "fused" product: one pass over the input, one parallel region, their rows
// handed out together, with no concatenated copy of the weights to keep in
// sync with the policy. Threads take chunks of 64 rows from a shared
// counter (parallel_tasks), so a core slowed by other work takes fewer;
// the last few chunks are split in quarters so that the threads finish
// close together.
//
// bf16 weights are widened to f32 in registers (exact) and multiplied with
// f32 inputs; the activations between products stay f32, which is at least
// as accurate as the libtorch bf16 path (whose activations are bf16).
//
// Everything else (norms, RoPE, attention over the cache, SiLU, residuals)
// is a loop over preallocated f32 buffers; attention runs one task per
// (slot, kv head) in parallel.
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
  TORCH_CHECK(s == "auto" || s == "avx512" || s == "off", "AGENTRL_CPU_KERNELS=", s,
              ": want auto (the best this CPU runs), avx512 or off (libtorch's decode step)");
  return s;
}

}  // namespace ar

// The kernels are x86-64 (AVX-512, chosen at run time); elsewhere the file
// compiles to stubs that report the step unsupported, so the engine takes
// the fused libtorch path.
#if defined(__x86_64__)
#include <immintrin.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
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

namespace {

#define AR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

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

// ---- vector helpers ----------------------------------------------------------

// lanes is the mask of the first min(n, 16) of 16 lanes (n >= 0): the tail
// of a row that is not a multiple of 16.
inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// exp for 16 floats: x = n ln2 + r with |r| <= ln2/2, exp(r) by Cephes'
// expf polynomial, times 2^n. Relative error about 1e-7, arguments clamped
// to [-88.38, 88.38] (so exp(-inf) is ~3e-39, not 0).
AR_AVX512 inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-88.3762626647949f)), _mm512_set1_ps(88.3762626647949f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

AR_AVX512 inline __m512 load16(const float *p) { return _mm512_loadu_ps(p); }
AR_AVX512 inline __m512 load16(const uint16_t *p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// ---- product kernels ---------------------------------------------------------

// Masked load of n < 16 weights or inputs, zeros beyond.
AR_AVX512 inline __m512 load16(const float *p, __mmask16 mk) { return _mm512_maskz_loadu_ps(mk, p); }
AR_AVX512 inline __m512 load16(const uint16_t *p, __mmask16 mk) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// reduce16 sums each of 16 vectors: lane i of the result is the sum of
// v[i]'s lanes. A transposing tree (pairs within 128-bit lanes, then
// across them) costs 15 adds and 30 shuffles for all 16, where 16
// separate horizontal sums cost about 8 dependent instructions each.
AR_AVX512 inline __m512 reduce16(const __m512 *v) {
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

// widen_pairs splits 32 bf16 (16 pairs in 32-bit lanes) into the even
// columns as f32 (each lane's low half moved up: a byte shuffle) and the odd
// ones (its low half cleared: a mask). Both are exact. The shuffle runs on
// the vector port that does not multiply (port 5), where a shift would take
// a slot of the one 512-bit FMA port on this machine's cores.
AR_AVX512 inline __attribute__((always_inline)) void widen_pairs(__m512i v, __m512 &even, __m512 &odd) {
  const __m512i up = _mm512_set4_epi32(0x0d0c8080, 0x09088080, 0x05048080, 0x01008080);
  even = _mm512_castsi512_ps(_mm512_shuffle_epi8(v, up));
  odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// dot<T, R, MM>: res[a*R + r] = sum_k x[a][k] w[r][k] for R weight rows of
// type T (f32, or bf16 widened to f32 in registers: exact) with row stride
// K, and MM f32 input rows of stride ldx. Each step of 32 columns also
// prefetches (into L2) the same columns of the next R rows, the next
// call's weights, so that memory traffic overlaps the arithmetic: for an
// 8-row product of a 2048 x 768 matrix streamed from memory on one core,
// 0.49 ms (f32) and 0.40 ms (bf16) instead of 0.73 and 0.67 ms with the
// hardware prefetcher alone (prefetching two or three blocks ahead, or into
// L1, measured slower).
//
// bf16: a 64-byte load holds 32 weights as 16 pairs, widened by
// widen_pairs: 2 instructions per 32 weights, where widening 16 at a time
// costs 4. The input rows come with each full block of 32 columns
// reordered to match (even columns, then odd: see deinterleave32). On this
// machine (one 512-bit FMA unit per core, so the products are bound by
// multiply-adds, not by memory) that measured 12% faster than widening,
// and AVX512-BF16's dot product slower still (it needs the activations in
// bf16 as well). Columns past the last full block keep the plain order.
template <typename T, int R, int MM>
AR_AVX512 inline __attribute__((always_inline)) void dot_step(const T *w, int64_t K, const float *x, int64_t ldx,
                                                              int64_t k, __m512 (&acc)[MM][R]) {
  __m512 wr[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; r++) wr[r] = load16(w + r * K + k);
#pragma GCC unroll 4
  for (int a = 0; a < MM; a++) {
    __m512 xa = _mm512_loadu_ps(x + a * ldx + k);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[a][r] = _mm512_fmadd_ps(wr[r], xa, acc[a][r]);
  }
}

// One block of 32 bf16 columns from k, inputs in deinterleaved order.
template <int R, int MM>
AR_AVX512 inline __attribute__((always_inline)) void dot_pairs(const uint16_t *w, int64_t K, const float *x,
                                                               int64_t ldx, int64_t k, __m512 (&acc)[MM][R]) {
  __m512 we[R], wo[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; r++) widen_pairs(_mm512_loadu_si512(w + r * K + k), we[r], wo[r]);
#pragma GCC unroll 4
  for (int a = 0; a < MM; a++) {
    __m512 xe = _mm512_loadu_ps(x + a * ldx + k), xo = _mm512_loadu_ps(x + a * ldx + k + 16);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[a][r] = _mm512_fmadd_ps(wo[r], xo, _mm512_fmadd_ps(we[r], xe, acc[a][r]));
  }
}

template <typename T, int R, int MM>
AR_AVX512 void dot(const void *wv, int64_t K, const float *x, int64_t ldx, float *res) {
  const T *w = static_cast<const T *>(wv);
  constexpr int kLine = 64 / sizeof(T);  // elements per cache line
  __m512 acc[MM][R];
#pragma GCC unroll 4
  for (int a = 0; a < MM; a++)
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[a][r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
      for (int l = 0; l < 32; l += kLine) _mm_prefetch(reinterpret_cast<const char *>(w + (R + r) * K + k + l), _MM_HINT_T1);
    if constexpr (std::is_same_v<T, uint16_t>) {
      dot_pairs<R, MM>(w, K, x, ldx, k, acc);
    } else {
      dot_step<T, R, MM>(w, K, x, ldx, k, acc);
      dot_step<T, R, MM>(w, K, x, ldx, k + 16, acc);
    }
  }
  for (; k + 16 <= K; k += 16) dot_step<T, R, MM>(w, K, x, ldx, k, acc);
  if (k < K) {
    __mmask16 mk = lanes(K - k);
    __m512 wr[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) wr[r] = load16(w + r * K + k, mk);
#pragma GCC unroll 4
    for (int a = 0; a < MM; a++) {
      __m512 xa = _mm512_maskz_loadu_ps(mk, x + a * ldx + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) acc[a][r] = _mm512_fmadd_ps(wr[r], xa, acc[a][r]);
    }
  }
  if constexpr (R * MM == 16) {
    _mm512_storeu_ps(res, reduce16(&acc[0][0]));
  } else {
#pragma GCC unroll 4
    for (int a = 0; a < MM; a++)
#pragma GCC unroll 4
      for (int r = 0; r < R; r++) res[a * R + r] = _mm512_reduce_add_ps(acc[a][r]);
  }
}

// deinterleave32 copies the rows x [M, K] to out, each full block of 32
// columns reordered as its 16 even columns, then its 16 odd ones (the
// order dot_pairs multiplies them in); the columns after the last full
// block keep their order. Always inlined: attention reorders each query
// head with it, on its hot path (out of line, attention took 13% longer).
inline __attribute__((always_inline)) void deinterleave32(const float *x, int64_t M, int64_t K, float *out) {
  for (int64_t m = 0; m < M; m++) {
    const float *xi = x + m * K;
    float *o = out + m * K;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32)
      for (int i = 0; i < 16; i++) {
        o[k + i] = xi[k + 2 * i];
        o[k + 16 + i] = xi[k + 2 * i + 1];
      }
    for (; k < K; k++) o[k] = xi[k];
  }
}

using DotFn = void (*)(const void *, int64_t, const float *, int64_t, float *);
constexpr int kRows = 4;   // weight rows per kernel call
constexpr int kInRows = 4;  // input rows per kernel call

// The kernel instantiations by [weight rows - 1][input rows - 1].
#define AR_ROW(T, R) {dot<T, R, 1>, dot<T, R, 2>, dot<T, R, 3>, dot<T, R, 4>}
const DotFn kF32[4][4] = {AR_ROW(float, 1), AR_ROW(float, 2), AR_ROW(float, 3), AR_ROW(float, 4)};
const DotFn kBF16[4][4] = {AR_ROW(uint16_t, 1), AR_ROW(uint16_t, 2), AR_ROW(uint16_t, 3), AR_ROW(uint16_t, 4)};
#undef AR_ROW

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
// every segment (all with K columns, f32 or bf16 as bf16 says), m < M; x
// is f32 [M, K] (for bf16 weights, read through a deinterleaved copy).
void products(const std::vector<Seg> &sv, int64_t K, const float *x, int64_t M, float *const *out, bool bf16) {
  size_t esize = bf16 ? 2 : 4;
  constexpr int64_t kChunk = 64;  // rows per unit of work
  constexpr size_t kTail = 4;     // the last chunks, handed out in quarters
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
    deinterleave32(x, M, K, xd.data());
    x = xd.data();
  }
  parallel_tasks(total, [&](int64_t c) {
    float res[kRows * kInRows];
    const Chunk &ch = chunks[c];
    const Seg &g = sv[ch.seg];
    const char *w = static_cast<const char *>(g.w->data_ptr());
    const char *b = g.b != nullptr && g.b->defined() ? static_cast<const char *>(g.b->data_ptr()) : nullptr;
    const int64_t r1 = ch.r1;
    for (int64_t r = ch.r0; r < r1; r += kRows) {
      int nr = static_cast<int>(std::min<int64_t>(kRows, r1 - r));
      for (int64_t m0 = 0; m0 < M; m0 += kInRows) {
        int nm = static_cast<int>(std::min<int64_t>(kInRows, M - m0));
        (bf16 ? kBF16 : kF32)[nr - 1][nm - 1](w + r * K * esize, K, x + m0 * K, K, res);
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

// ---- pieces between the products --------------------------------------------

// add_norm_rows: for each of S rows of H floats, the residual x += h
// (when add), then RMSNorm as the model does it (f32): h = w * (x /
// sqrt(mean(x^2) + eps)), the sum of squares in 16 f32 lanes.
template <typename W>
AR_AVX512 void add_norm_rows(float *x, float *h, const W *w, int64_t S, int64_t H, float eps, bool add) {
  for (int64_t i = 0; i < S; i++) {
    float *xi = x + i * H, *hi = h + i * H;
    __m512 ss = _mm512_setzero_ps();
    for (int64_t j = 0; j < H; j += 16) {
      __mmask16 mk = lanes(H - j);
      __m512 v = _mm512_maskz_loadu_ps(mk, xi + j);
      if (add) {
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, hi + j));
        _mm512_mask_storeu_ps(xi + j, mk, v);
      }
      ss = _mm512_fmadd_ps(v, v, ss);
    }
    __m512 r = _mm512_set1_ps(1.0f / std::sqrt(_mm512_reduce_add_ps(ss) / static_cast<float>(H) + eps));
    for (int64_t j = 0; j < H; j += 16) {
      __mmask16 mk = lanes(H - j);
      __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, xi + j), r);
      _mm512_mask_storeu_ps(hi + j, mk, _mm512_mul_ps(load16(w + j, mk), v));
    }
  }
}

// silu(gate) * up over n floats: gate [n] then up [n] in gu, into out.
AR_AVX512 void silu_mul(const float *gate, const float *up, float *out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 g = _mm512_loadu_ps(gate + i);
    __m512 s = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(s, _mm512_loadu_ps(up + i)));
  }
  for (; i < n; i++) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// rope rotates one head in place (HF rotate_half pairing: j with j + hd/2).
inline void rope_head(float *v, const float *cos, const float *sin, int64_t half) {
  for (int64_t j = 0; j < half; j++) {
    float a = v[j], b = v[j + half];
    v[j] = a * cos[j] - b * sin[j];
    v[j + half] = b * cos[j] + a * sin[j];
  }
}

// load_row widens one cache row (NC chunks of 16) to f32 in registers. A
// bf16 row with an even number of chunks is widened by pairs (as in
// dot_pairs): chunks 2c and 2c + 1 then hold the even and the odd columns
// of columns 32c..32c + 31, and the caller's query and output follow that
// order.
template <typename C, int NC>
AR_AVX512 inline __attribute__((always_inline)) void load_row(const C *p, __m512 (&row)[NC]) {
  if constexpr (std::is_same_v<C, uint16_t> && NC % 2 == 0) {
#pragma GCC unroll 8
    for (int c = 0; c < NC; c += 2) widen_pairs(_mm512_loadu_si512(p + 16 * c), row[c], row[c + 1]);
  } else {
#pragma GCC unroll 16
    for (int c = 0; c < NC; c++) row[c] = load16(p + 16 * c);
  }
}

// attend_group: the g query heads q [g, hd] (hd = 16 NC) that share one kv
// head attend to keys and values K, V [L, hd] (cache rows of type C):
// softmax(q.K / sqrt(hd)) . V into out [g, hd]. scores holds g * L floats.
// Scores: per head, the query stays in registers and 16 positions are
// summed at once by reduce16. Values: up to 16 / NC heads at a time
// accumulate in registers, so each value row is loaded (and widened) once
// per pass. 2.3x faster than a horizontal sum per score and accumulators
// in memory (medium benchmark, one layer: 43 vs 100 us per core).
template <typename C, int NC>
AR_AVX512 void attend_group(const float *q, int64_t g, const C *K, const C *V, int64_t L, float scale, float *scores,
                            float *out) {
  constexpr int64_t hd = 16 * NC;
  constexpr bool pairs = std::is_same_v<C, uint16_t> && NC % 2 == 0;
  constexpr int GB = NC >= 16 ? 1 : 16 / NC;  // heads per pass over the values
  for (int64_t j = 0; j < g; j++) {
    const float *qj = q + j * hd;
    float qd[hd];
    if constexpr (pairs) {
      deinterleave32(qj, 1, hd, qd);
      qj = qd;
    }
    __m512 qv[NC];
#pragma GCC unroll 16
    for (int c = 0; c < NC; c++) qv[c] = _mm512_mul_ps(_mm512_loadu_ps(qj + 16 * c), _mm512_set1_ps(scale));
    float *sj = scores + j * L;
    for (int64_t p0 = 0; p0 < L; p0 += 16) {
      const int64_t n = std::min<int64_t>(16, L - p0);
      __m512 acc[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; i++) {
        acc[i] = _mm512_setzero_ps();
        if (i < n) {
          __m512 row[NC];
          load_row<C, NC>(K + (p0 + i) * hd, row);
#pragma GCC unroll 16
          for (int c = 0; c < NC; c++) acc[i] = _mm512_fmadd_ps(qv[c], row[c], acc[i]);
        }
      }
      _mm512_mask_storeu_ps(sj + p0, lanes(n), reduce16(acc));
    }
  }
  for (int64_t j = 0; j < g; j++) {
    float *sj = scores + j * L;
    __m512 vmx = _mm512_set1_ps(-INFINITY);
    for (int64_t p = 0; p < L; p += 16) vmx = _mm512_mask_max_ps(vmx, lanes(L - p), vmx, _mm512_maskz_loadu_ps(lanes(L - p), sj + p));
    __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmx)), vs = _mm512_setzero_ps();
    for (int64_t p = 0; p < L; p += 16) {
      __m512 e = _mm512_maskz_mov_ps(lanes(L - p), exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes(L - p), sj + p), vm)));
      _mm512_mask_storeu_ps(sj + p, lanes(L - p), e);
      vs = _mm512_add_ps(vs, e);
    }
    __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vs));
    for (int64_t p = 0; p < L; p += 16)
      _mm512_mask_storeu_ps(sj + p, lanes(L - p), _mm512_mul_ps(inv, _mm512_maskz_loadu_ps(lanes(L - p), sj + p)));
  }
  for (int64_t j0 = 0; j0 < g; j0 += GB) {
    const int64_t gb = std::min<int64_t>(GB, g - j0);
    __m512 acc[GB][NC];
#pragma GCC unroll 16
    for (int b = 0; b < GB; b++)
#pragma GCC unroll 16
      for (int c = 0; c < NC; c++) acc[b][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < L; p++) {
      __m512 row[NC];
      load_row<C, NC>(V + p * hd, row);
#pragma GCC unroll 16
      for (int b = 0; b < GB; b++) {
        if (b < gb) {
          __m512 w = _mm512_set1_ps(scores[(j0 + b) * L + p]);
#pragma GCC unroll 16
          for (int c = 0; c < NC; c++) acc[b][c] = _mm512_fmadd_ps(w, row[c], acc[b][c]);
        }
      }
    }
    for (int64_t b = 0; b < gb; b++) {
      float *o = out + (j0 + b) * hd;
      if constexpr (pairs) {
        float t[hd];
        for (int c = 0; c < NC; c++) _mm512_storeu_ps(t + 16 * c, acc[b][c]);
        for (int c = 0; c < NC; c += 2)
          for (int i = 0; i < 16; i++) {
            o[16 * c + 2 * i] = t[16 * c + i];
            o[16 * c + 2 * i + 1] = t[16 * c + 16 + i];
          }
      } else {
        for (int c = 0; c < NC; c++) _mm512_storeu_ps(o + 16 * c, acc[b][c]);
      }
    }
  }
}

// AttendFn is attend_group for one cache type and head_dim; kAttend
// holds them by [bf16][head_dim / 16 - 1] (head_dim <= 256: see supported).
using AttendFn = void (*)(const float *, int64_t, const void *, const void *, int64_t, float, float *, float *);
template <typename C, int NC>
void attend_erased(const float *q, int64_t g, const void *K, const void *V, int64_t L, float scale, float *scores,
                   float *out) {
  attend_group<C, NC>(q, g, static_cast<const C *>(K), static_cast<const C *>(V), L, scale, scores, out);
}
template <typename C, int... NC>
constexpr std::array<AttendFn, sizeof...(NC)> attend_table(std::integer_sequence<int, NC...>) {
  return {attend_erased<C, NC + 1>...};
}
const std::array<AttendFn, 16> kAttend[2] = {attend_table<float>(std::make_integer_sequence<int, 16>{}),
                                              attend_table<uint16_t>(std::make_integer_sequence<int, 16>{})};

bool cpu_has(const char *feature) {
  __builtin_cpu_init();
  if (std::strcmp(feature, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
  if (std::strcmp(feature, "avx512bw") == 0) return __builtin_cpu_supports("avx512bw");
  if (std::strcmp(feature, "avx512vl") == 0) return __builtin_cpu_supports("avx512vl");
  if (std::strcmp(feature, "avx512dq") == 0) return __builtin_cpu_supports("avx512dq");
  return false;
}

}  // namespace

bool FastDecoder::supported(const ar_model_s &m, std::string *why) {
  auto no = [&](const std::string &s) {
    if (why != nullptr) *why = s;
    return false;
  };
  if (!m.dev.is_cpu()) return no("not a CPU model");
  if (m.dtype != at::kFloat && m.dtype != at::kBFloat16) return no("weights are neither f32 nor bf16");
  if (m.autocast != at::ScalarType::Undefined) return no("autocast is on");
  if (m.cfg.head_dim % 16 != 0 || m.cfg.head_dim > 256) return no("head_dim is not a multiple of 16 up to 256");
  if (m.cfg.norm_offset != 0 || m.cfg.attn_output_gate != 0 || m.rotary_dim() != m.cfg.head_dim)
    return no("Qwen3.5's attention (1 + w norms, the output gate, partial RoPE) runs on the libtorch paths only");
  if (m.cfg.experts > 0)
    for (int64_t i = 0; i < m.cfg.layers; i++)
      if (sparse(m.cfg, i)) return no("the model has mixture-of-experts layers (the libtorch path runs them)");
  if (cpu_kernels() == "off") return no("AGENTRL_CPU_KERNELS=off");
  for (const char *f : {"avx512f", "avx512bw", "avx512vl", "avx512dq"})
    if (!cpu_has(f)) return no(std::string("the CPU lacks ") + f);
  return true;
}

FastDecoder::FastDecoder(const ar_model_s &m, int slots, int64_t max_len) : m_(m), max_len_(max_len) {
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

void FastDecoder::forward(const int64_t *slots, const int64_t *start, const int64_t *tokens, int64_t S,
                          std::vector<at::Tensor> &K, std::vector<at::Tensor> &V, float *const *logits,
                          StepProfile *prof) {
  const auto &c = m_.cfg;
  const int64_t H = c.hidden, hd = c.head_dim, half = hd / 2, nh = c.heads, nkv = c.kv_heads, g = nh / nkv;
  const int64_t I = c.intermediate, QKV = (nh + 2 * nkv) * hd;
  const bool bf = m_.dtype == at::kBFloat16;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  const auto attention_factor = static_cast<float>(c.rope_attention_factor);
  const AttendFn attend = kAttend[bf ? 1 : 0][hd / 16 - 1];
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
    if (bf) add_norm_rows(x_.data(), h_.data(), static_cast<const uint16_t *>(w.data_ptr()), S, H, eps, add);
    else add_norm_rows(x_.data(), h_.data(), w.data_ptr<float>(), S, H, eps, add);
  };
  // head_norm: RMSNorm of n heads (hd floats each) in place, with weights
  // w (Qwen3's q_norm and k_norm).
  auto head_norm = [&](float *heads, int64_t n, const at::Tensor &w) {
    if (bf) add_norm_rows(heads, heads, static_cast<const uint16_t *>(w.data_ptr()), n, hd, eps, false);
    else add_norm_rows(heads, heads, w.data_ptr<float>(), n, hd, eps, false);
  };
  lap(&StepProfile::other);

  for (size_t li = 0; li < m_.layers.size(); li++) {
    const auto &l = m_.layers[li];
    norm(l.input_layernorm, li > 0);  // after the previous layer's MLP residual
    lap(&StepProfile::other);
    const std::vector<Seg> qkv_segs = segments(l, kQKV);
    products(qkv_segs, H, h_.data(), S, qkvrows.data(), bf);
    lap(&StepProfile::products);

    // Attention, one task per (slot, kv head): q/k norms (Qwen3) and RoPE
    // on its k and q heads, the cache write at the slot's position, then
    // the group's queries.
    at::Tensor &kc = K[li], &vc = V[li];
    parallel_tasks(S * nkv, [&](int64_t t) {
      {
        int64_t i = t / nkv, kh = t % nkv, L = start[i] + 1;
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
        int64_t off = ((slots[i] * nkv + kh) * max_len_) * hd;  // [slot, kh, 0, 0]
        float *out = &att_[i * nh * hd + kh * g * hd];
        float *sc = &scores_[(i * nh + kh * g) * max_len_];
        if (bf) {
          uint16_t *kp = static_cast<uint16_t *>(kc.data_ptr()) + off, *vp = static_cast<uint16_t *>(vc.data_ptr()) + off;
          for (int64_t d = 0; d < hd; d++) {
            kp[start[i] * hd + d] = f32_to_bf16(k[d]);
            vp[start[i] * hd + d] = f32_to_bf16(v[d]);
          }
          attend(q, g, kp, vp, L, scale, sc, out);
        } else {
          float *kp = kc.data_ptr<float>() + off, *vp = vc.data_ptr<float>() + off;
          std::memcpy(kp + start[i] * hd, k, sizeof(float) * hd);
          std::memcpy(vp + start[i] * hd, v, sizeof(float) * hd);
          attend(q, g, kp, vp, L, scale, sc, out);
        }
      }
    });
    lap(&StepProfile::attention);

    products({{&l.o_proj, nullptr, 0}}, nh * hd, att_.data(), S, hrows.data(), bf);
    lap(&StepProfile::products);
    norm(l.post_attention_layernorm, true);
    lap(&StepProfile::other);
    const std::vector<Seg> gu_segs = segments(l, kGateUp);
    products(gu_segs, H, h_.data(), S, gurows.data(), bf);
    lap(&StepProfile::products);
    for (int64_t i = 0; i < S; i++)
      silu_mul(&gu_[i * 2 * I + gu_segs[0].col], &gu_[i * 2 * I + gu_segs[1].col], &act_[i * I], I);
    lap(&StepProfile::other);
    products({{&l.down_proj, nullptr, 0}}, I, act_.data(), S, hrows.data(), bf);
    lap(&StepProfile::products);
  }
  norm(m_.norm, !m_.layers.empty());
  lap(&StepProfile::other);
  products({{&m_.lm_head, nullptr, 0}}, H, h_.data(), S, logits, bf);
  lap(&StepProfile::products);
}

namespace {

// Row statistics for sampling: the maximum and the first index holding it.
AR_AVX512 void row_max(const float *row, int64_t V, float *mx, int64_t *arg) {
  __m512 vm = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= V; i += 16) vm = _mm512_max_ps(vm, _mm512_loadu_ps(row + i));
  float m = _mm512_reduce_max_ps(vm);
  for (; i < V; i++) m = std::max(m, row[i]);
  *mx = m;
  for (i = 0; i + 16 <= V; i += 16) {
    __mmask16 eq = _mm512_cmp_ps_mask(_mm512_loadu_ps(row + i), _mm512_set1_ps(m), _CMP_EQ_OQ);
    if (eq) {
      *arg = i + __builtin_ctz(eq);
      return;
    }
  }
  for (; i < V; i++)
    if (row[i] == m) {
      *arg = i;
      return;
    }
  *arg = 0;  // all NaN
}

// exp((row - mx) * invT) summed per block of 16 (the last block padded with
// zeros) into blocks; returns the total, added in order in double.
AR_AVX512 double block_sums(const float *row, int64_t V, float mx, float invT, float *blocks) {
  __m512 vm = _mm512_set1_ps(mx), vt = _mm512_set1_ps(invT);
  double total = 0;
  for (int64_t i = 0, b = 0; i < V; i += 16, b++) {
    __mmask16 mk = lanes(V - i);
    __m512 e = exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, row + i), vm), vt));
    blocks[b] = _mm512_mask_reduce_add_ps(mk, e);
    total += blocks[b];
  }
  return total;
}

AR_AVX512 void block_exps(const float *row, int64_t n, float mx, float invT, float *out) {
  __mmask16 mk = lanes(n);
  __m512 e = exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, row), _mm512_set1_ps(mx)), _mm512_set1_ps(invT)));
  _mm512_mask_storeu_ps(out, mk, e);
}

}  // namespace

void sample_fast(const float *row, int64_t V, double T, double u, int64_t *token, float *lp) {
  const bool greedy = T <= 0;
  const float invT = greedy ? 1.0f : static_cast<float>(1.0 / T);
  float mx;
  int64_t arg;
  row_max(row, V, &mx, &arg);
  thread_local std::vector<float> blocks;
  blocks.resize((V + 15) / 16);
  const double z = block_sums(row, V, mx, invT, blocks.data());
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
      block_exps(row + b * 16, n, mx, invT, e);
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

bool FastDecoder::supported(const ar_model_s &, std::string *why) {
  cpu_kernels();  // a bad value is an error everywhere
  if (why != nullptr) *why = "not an x86-64 CPU";
  return false;
}

FastDecoder::FastDecoder(const ar_model_s &m, int, int64_t max_len) : m_(m), max_len_(max_len) {}

void FastDecoder::forward(const int64_t *, const int64_t *, const int64_t *, int64_t, std::vector<at::Tensor> &,
                          std::vector<at::Tensor> &, float *const *, StepProfile *) {
  TORCH_CHECK(false, "the hand-written decode step needs an x86-64 CPU");
}

void sample_fast(const float *, int64_t, double, double, int64_t *, float *) {
  TORCH_CHECK(false, "the hand-written sampler needs an x86-64 CPU");
}

}  // namespace ar

#endif
