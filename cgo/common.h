// common.h: what every translation unit of the shim shares: the handle
// structs, dtype/device mapping and the exception guard.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "agentrl.h"

struct ar_tensor_s {
  at::Tensor t;
};

namespace ar {

inline void set_err(char **err, const std::string &msg) {
  if (err == nullptr) return;
  *err = static_cast<char *>(std::malloc(msg.size() + 1));
  if (*err != nullptr) std::memcpy(*err, msg.c_str(), msg.size() + 1);
}

// guard runs f and turns every C++ exception into a status and a message.
template <class F>
int guard(char **err, F &&f) {
  try {
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

inline ar_tensor wrap(at::Tensor t) { return new ar_tensor_s{std::move(t)}; }

inline const at::Tensor &T(ar_tensor t) {
  TORCH_CHECK(t != nullptr, "null tensor handle");
  return t->t;
}

// apply_threads makes the calling OS thread's intra-op pool match the
// configured thread count (OpenMP settings are per thread).
void apply_threads();

}  // namespace ar
