// library.cpp: version checks, threads, seeding, device queries.
#include <dlfcn.h>
#include <malloc.h>

#include <ATen/Parallel.h>
#include <ATen/SequenceNumber.h>
#include <ATen/Version.h>
#include <torch/version.h>

#include <atomic>
#include <cstdio>
#include <regex>

#ifdef AGENTRL_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "common.h"
#include "internal.h"

namespace ar {

namespace {
std::atomic<int> g_threads{0};
std::atomic<int> g_device{-1};  // as ar_set_device made it (-1: the CPU)
}

at::Device process_device() {
  const int d = g_device.load(std::memory_order_relaxed);
  return d < 0 ? at::Device(at::kCPU) : device(d);
}

at::ScalarType scalar_type(int dtype) {
  switch (dtype) {
    case AR_F32: return at::kFloat;
    case AR_F16: return at::kHalf;
    case AR_BF16: return at::kBFloat16;
    case AR_I64: return at::kLong;
    case AR_I32: return at::kInt;
    case AR_BOOL: return at::kBool;
    case AR_U8: return at::kByte;
    case AR_F64: return at::kDouble;
  }
  TORCH_CHECK(false, "unknown dtype code ", dtype);
}

int dtype_code(at::ScalarType st) {
  switch (st) {
    case at::kFloat: return AR_F32;
    case at::kHalf: return AR_F16;
    case at::kBFloat16: return AR_BF16;
    case at::kLong: return AR_I64;
    case at::kInt: return AR_I32;
    case at::kBool: return AR_BOOL;
    case at::kByte: return AR_U8;
    case at::kDouble: return AR_F64;
    default: break;
  }
  TORCH_CHECK(false, "dtype ", st, " has no agentrl code");
}

at::Device device(int dev) {
  if (dev == -2) return at::Device(at::kMeta);
  if (dev < 0) return at::Device(at::kCPU);
#ifdef AGENTRL_CUDA
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(dev));
#else
  TORCH_CHECK(false, "cuda:", dev, " requested but this build of agentrl has no CUDA (build with `make cuda`)");
#endif
}

int device_code(const at::Device &d) {
  if (d.is_cuda()) return d.index();
  return d.is_meta() ? -2 : -1;
}

// blas_set_threads reaches OpenBLAS's own pthread pool, which libtorch does
// not manage. Resolved at run time: the BLAS behind libblas.so.3 may be
// another implementation, in which case there is nothing to set.
static void blas_set_threads(int n) {
  using fn = void (*)(int);
  static fn f = reinterpret_cast<fn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (f != nullptr) f(n);
}

// Keep freed memory in the heap instead of returning blocks to the kernel
// with munmap, which would cost a page fault per 4 KB when they are next
// used. Tensors of 4 MB and up do not come from this heap but from the host
// cache (host_memory.cpp), which reuses them the same way without the
// fragmentation one heap shared with small blocks suffers. One arena: with
// one per thread, memory that libtorch's worker threads allocate and free
// stays in their arenas, where the caller's allocations cannot reuse it.
__attribute__((constructor)) static void keep_heap() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_ARENA_MAX, 1);
}

void allow_cuda_tf32_matmul() {
  // setAllowTF32CuBLAS, not setFloat32MatmulPrecision("high"): from 2.9 the
  // latter also sets oneDNN's f32 matrix products on the CPU to TF32.
  at::globalContext().setAllowTF32CuBLAS(true);
}

bool cpu_f32_matmul_reduced() {
  auto &ctx = at::globalContext();
#if AR_TORCH_AT_LEAST(2, 10)
  const auto p = ctx.float32Precision(at::Float32Backend::MKLDNN, at::Float32Op::MATMUL);
  return p == at::Float32Precision::TF32 || p == at::Float32Precision::BF16;
#elif AR_TORCH_AT_LEAST(2, 9)
  const std::string p = ctx.float32Precision("mkldnn", "matmul");
  return p == "tf32" || p == "bf16";
#else
  // Before 2.9 only "medium" reaches oneDNN (bf16 products).
  return ctx.float32MatmulPrecision() == at::Float32MatmulPrecision::MEDIUM;
#endif
}

void apply_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0 && at::get_num_threads() != n) at::set_num_threads(n);
}

// The highest autograd sequence number any thread's counter has reached at
// the end of an entry point (SequenceScope).
static std::atomic<uint64_t> g_sequence{0};

SequenceScope::SequenceScope() {
  // libtorch has no setter: the counter only counts up, one at a time.
  const uint64_t mark = g_sequence.load(std::memory_order_acquire);
  for (uint64_t n = at::sequence_number::peek(); n < mark; n++) at::sequence_number::get_and_increment();
}

SequenceScope::~SequenceScope() {
  const uint64_t n = at::sequence_number::peek();
  uint64_t mark = g_sequence.load(std::memory_order_relaxed);
  while (mark < n && !g_sequence.compare_exchange_weak(mark, n, std::memory_order_release, std::memory_order_relaxed)) {
  }
}

}  // namespace ar

using namespace ar;

extern "C" {

int ar_info(int *abi, int *compiled_major, int *compiled_minor, int *runtime_major,
            int *runtime_minor, int *cuda_compiled, char **err) {
  return guard(err, [&] {
    *abi = AR_ABI_VERSION;
    *compiled_major = TORCH_VERSION_MAJOR;
    *compiled_minor = TORCH_VERSION_MINOR;
    // The loaded libtorch reports its version in its build configuration.
    std::string cfg = at::show_config();
    std::smatch m;
    static const std::regex re("TORCH_VERSION=(\\d+)\\.(\\d+)");
    if (std::regex_search(cfg, m, re)) {
      *runtime_major = std::stoi(m[1]);
      *runtime_minor = std::stoi(m[2]);
    } else {
      *runtime_major = -1;
      *runtime_minor = -1;
    }
#ifdef AGENTRL_CUDA
    *cuda_compiled = 1;
#else
    *cuda_compiled = 0;
#endif
  });
}

int ar_cuda_device_count(int *n, char **err) {
  return guard(err, [&] {
#ifdef AGENTRL_CUDA
    *n = static_cast<int>(c10::cuda::device_count());
#else
    *n = 0;
#endif
  });
}

int ar_set_device(int device, char **err) {
  return guard(err, [&] {
    if (device < 0) return;
#ifdef AGENTRL_CUDA
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(device));
    g_device.store(device, std::memory_order_relaxed);
#else
    TORCH_CHECK(false, "cuda:", device, " requested but this build of agentrl has no CUDA (build with `make cuda`)");
#endif
  });
}

int ar_set_threads(int n, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(n > 0, "threads must be positive, got ", n);
    g_threads.store(n);
    at::set_num_threads(n);
    // libtorch's OpenMP pool runs elementwise kernels, OpenBLAS's pool runs
    // matrix products; they run one after the other, so each may use all n
    // cores (AGENTRL_BLAS_THREADS overrides the BLAS share for experiments).
    int blas = n;
    if (const char *s = std::getenv("AGENTRL_BLAS_THREADS")) blas = std::atoi(s);
    blas_set_threads(blas > 0 ? blas : 1);
  });
}

int ar_get_threads(int *n, char **err) {
  return guard(err, [&] { *n = at::get_num_threads(); });
}

int ar_manual_seed(uint64_t seed, char **err) {
  return guard(err, [&] { at::manual_seed(seed); });
}

int ar_rope_inv_freq(double base, int64_t dim, int64_t n, double *out, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(dim > 0 && n >= 0 && 2 * n <= dim, "RoPE over ", n, " pairs of ", dim, " dimensions");
    // transformers' float32 ops in its order (its tensor ** and 1.0 / x):
    // the exponents, base to their power, the reciprocal times 1.
    at::Tensor e = at::arange(0, 2 * n, 2, at::kLong).to(at::kFloat) / dim;
    at::Tensor inv = at::pow(base, e).reciprocal() * 1.0;
    at::Tensor d = inv.to(at::kDouble).contiguous();
    std::copy_n(d.data_ptr<double>(), n, out);
  });
}

int ar_cuda_memory(int dev, int64_t *allocated, int64_t *reserved, int64_t *peak, char **err) {
  return guard(err, [&] {
    *allocated = *reserved = *peak = 0;
#ifdef AGENTRL_CUDA
    if (dev >= 0) {
      TORCH_CHECK(dev < c10::cuda::device_count(), "cuda:", dev, " requested but ", c10::cuda::device_count(),
                  " CUDA devices are visible");
      DeviceScope on(device(dev));
      // The caching allocator sizes its per-device state when libtorch
      // initialises CUDA, on the first CUDA tensor; before that its
      // statistics have no entry for dev. An empty tensor initialises it
      // (and allocates nothing).
      (void)at::empty({0}, at::TensorOptions().device(device(dev)));
      auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(dev));
      // Slot 0 of each StatArray is StatType::AGGREGATE (all pools). The
      // enum moved from c10::cuda::CUDACachingAllocator (1.13 to 2.4) to
      // c10::CachingDeviceAllocator and then c10::CachingAllocator; its
      // order has not changed, so the index builds against every release.
      constexpr size_t agg = 0;
#if !AR_TORCH_AT_LEAST(2, 5)
      static_assert(static_cast<size_t>(c10::cuda::CUDACachingAllocator::StatType::AGGREGATE) == agg);
#endif
      *allocated = st.allocated_bytes[agg].current;
      *reserved = st.reserved_bytes[agg].current;
      *peak = st.allocated_bytes[agg].peak;
    }
#else
    (void)dev;
#endif
  });
}

int ar_cuda_empty_cache(char **err) {
  return guard(err, [&] {
#ifdef AGENTRL_CUDA
    c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  });
}

}  // extern "C"

extern "C" int ar_allow_cuda_tf32_matmul(char **err) {
  return guard(err, [] { allow_cuda_tf32_matmul(); });
}

extern "C" int ar_cpu_f32_matmul_reduced(int *reduced, char **err) {
  return guard(err, [&] { *reduced = cpu_f32_matmul_reduced() ? 1 : 0; });
}
