// common.h: what every translation unit of the shim shares: the handle
// structs, dtype/device mapping and the exception guard.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <torch/version.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "agentrl.h"

// Version differences between the libtorch releases the shim builds
// against (Debian's 1.13, the 2.x of CUDA users) are guarded with these.
#ifndef TORCH_VERSION_MAJOR
#error "torch/version.h did not define TORCH_VERSION_MAJOR"
#endif
#define AR_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

struct ar_tensor_s {
  at::Tensor t;
};

namespace ar {

inline void set_err(char **err, const std::string &msg) {
  if (err == nullptr) return;
  *err = static_cast<char *>(std::malloc(msg.size() + 1));
  if (*err != nullptr) std::memcpy(*err, msg.c_str(), msg.size() + 1);
}

// apply_threads makes the calling OS thread's intra-op pool match the
// configured thread count. OpenMP's settings are per OS thread, and a Go
// goroutine may call in from any of them: a thread that last ran under
// another count (an earlier job in the process, a rank's share) would
// split, and so sum, in another order.
void apply_threads();

// SequenceScope keeps autograd's sequence numbers rising across OS
// threads for the entry point it spans. Each node an op records takes the
// next number of a counter libtorch keeps per OS thread, and a backward
// pass runs the ready nodes highest number first, so that later ops are
// differentiated first; the order fixes the order in which a tensor's
// gradients are summed, and so their rounding. A goroutine moves between
// OS threads between two calls: the ops of one graph would take numbers
// from different counters, out of order, and where a tensor feeds several
// ops its gradient would be summed in an order that depends on which
// thread ran which op. So each entry point first brings the calling
// thread's counter up to the highest any thread has reached, and raises
// that mark to where it ends.
class SequenceScope {
 public:
  SequenceScope();
  ~SequenceScope();
  SequenceScope(const SequenceScope &) = delete;
  SequenceScope &operator=(const SequenceScope &) = delete;
};

// guard runs f on the configured thread count, with autograd's sequence
// numbers continuing those of earlier calls on any thread, and turns every
// C++ exception into a status and a message. Every entry point runs in one.
template <class F>
int guard(char **err, F &&f) {
  try {
    apply_threads();
    SequenceScope sequence;
    f();
    return AR_OK;
  } catch (const c10::OutOfMemoryError &e) {
    set_err(err, e.what_without_backtrace());
    return AR_OOM;
  } catch (const c10::Error &e) {
    set_err(err, e.what_without_backtrace());
    return AR_ERR;
  } catch (const std::bad_alloc &) {
    set_err(err, "out of host memory (std::bad_alloc)");
    return AR_OOM;
  } catch (const std::exception &e) {
    set_err(err, e.what());
    return AR_ERR;
  } catch (...) {
    set_err(err, "unknown C++ exception");
    return AR_ERR;
  }
}

at::ScalarType scalar_type(int dtype);
int dtype_code(at::ScalarType st);
at::Device device(int dev);
int device_code(const at::Device &d);
// process_device is the device ar_set_device chose (the CPU until then).
// CUDA's current device is per thread, and Go calls in from many.
at::Device process_device();

inline ar_tensor wrap(at::Tensor t) { return new ar_tensor_s{std::move(t)}; }

inline const at::Tensor &T(ar_tensor t) {
  TORCH_CHECK(t != nullptr, "null tensor handle");
  return t->t;
}

// DeviceScope makes d the calling thread's current device for its
// lifetime when d is a CUDA device (a no-op elsewhere). CUDA keeps the
// current device per thread, and streams, graph captures and the caching
// allocator's pools follow it: without it work meant for cuda:1 would
// take device 0's streams. Every entry point that works on a model's
// device opens one.
class DeviceScope {
 public:
  explicit DeviceScope(const at::Device &d) {
    if (d.is_cuda()) g_.reset_device(d);
  }

 private:
  c10::OptionalDeviceGuard g_;
};

// check_graph_replay verifies that a captured CUDA graph recorded the
// step: its static output was poisoned with NaN before the first replay,
// and the replay must have written the eager step's result into it. A graph
// captured on the wrong device or stream records nothing (libtorch only
// warns "The CUDA Graph is empty"), and its replays would leave stale
// logits behind.
void check_graph_replay(const at::Tensor &eager, const at::Tensor &replayed, int64_t slots);

// allow_cuda_tf32_matmul lets cuBLAS run f32 matrix products on TF32
// tensor cores, as torch.backends.cuda.matmul.allow_tf32 = True does. It is
// a process-wide libtorch setting; the CPU's products are left alone.
void allow_cuda_tf32_matmul();
// cpu_f32_matmul_reduced says whether libtorch would run f32 matrix
// products on the CPU (oneDNN) in a reduced precision (TF32 or bf16).
bool cpu_f32_matmul_reduced();

}  // namespace ar
