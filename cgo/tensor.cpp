// tensor.cpp: tensor creation, read-back, autograd and the differentiable
// ops the RL losses are composed from.
#include <vector>

#include "common.h"

using namespace ar;

namespace {

std::vector<int64_t> dims(const int64_t *shape, int ndim) {
  TORCH_CHECK(ndim >= 0 && ndim <= 8, "tensors have at most 8 dims, got ", ndim);
  return std::vector<int64_t>(shape, shape + ndim);
}

at::Tensor apply_binary(int op, const at::Tensor &a, const at::Tensor &b) {
  switch (op) {
    case AR_ADD: return a + b;
    case AR_SUB: return a - b;
    case AR_MUL: return a * b;
    case AR_DIV: return a / b;
    case AR_POW: return at::pow(a, b);
    case AR_MINIMUM: return at::minimum(a, b);
    case AR_MAXIMUM: return at::maximum(a, b);
    case AR_EQ: return at::eq(a, b);
    case AR_NE: return at::ne(a, b);
    case AR_LT: return at::lt(a, b);
    case AR_LE: return at::le(a, b);
    case AR_GT: return at::gt(a, b);
    case AR_GE: return at::ge(a, b);
    case AR_MATMUL: return at::matmul(a, b);
    case AR_LOGICAL_AND: return at::logical_and(a, b);
    case AR_LOGICAL_OR: return at::logical_or(a, b);
  }
  TORCH_CHECK(false, "unknown binary op ", op);
}

at::Tensor apply_scalar(int op, const at::Tensor &a, double s) {
  switch (op) {
    case AR_ADD: return a + s;
    case AR_SUB: return a - s;
    case AR_MUL: return a * s;
    case AR_DIV: return a / s;
    case AR_POW: return at::pow(a, s);
    case AR_MINIMUM: return at::clamp_max(a, s);
    case AR_MAXIMUM: return at::clamp_min(a, s);
    case AR_EQ: return at::eq(a, s);
    case AR_NE: return at::ne(a, s);
    case AR_LT: return at::lt(a, s);
    case AR_LE: return at::le(a, s);
    case AR_GT: return at::gt(a, s);
    case AR_GE: return at::ge(a, s);
  }
  TORCH_CHECK(false, "op ", op, " takes no scalar operand");
}

at::Tensor apply_rscalar(int op, double s, const at::Tensor &a) {
  switch (op) {
    case AR_ADD: return s + a;
    case AR_SUB: return s - a;
    case AR_MUL: return s * a;
    case AR_DIV: return at::reciprocal(a) * s;
    case AR_POW: return at::pow(s, a);
  }
  TORCH_CHECK(false, "op ", op, " takes no scalar left operand");
}

}  // namespace

extern "C" {

int ar_tensor_from_data(const void *data, int dtype, const int64_t *shape, int ndim, int dev,
                        ar_tensor *out, char **err) {
  return guard(err, [&] {
    auto opts = at::TensorOptions().dtype(scalar_type(dtype));
    auto sizes = dims(shape, ndim);
    at::Tensor host = at::empty(sizes, opts);
    size_t nbytes = host.numel() * host.element_size();
    if (nbytes > 0) std::memcpy(host.data_ptr(), data, nbytes);
    at::Device d = device(dev);
    *out = wrap(d.is_cpu() ? host : host.to(d));
  });
}

int ar_tensor_zeros(int dtype, const int64_t *shape, int ndim, int dev, ar_tensor *out,
                    char **err) {
  return guard(err, [&] {
    auto opts = at::TensorOptions().dtype(scalar_type(dtype)).device(device(dev));
    *out = wrap(at::zeros(dims(shape, ndim), opts));
  });
}

int ar_tensor_free(ar_tensor t) {
  delete t;
  return AR_OK;
}

int ar_tensor_copy_out(ar_tensor t, int dtype, void *dst, size_t nbytes, char **err) {
  return guard(err, [&] {
    at::Tensor h = T(t).detach().to(at::kCPU, scalar_type(dtype)).contiguous();
    size_t have = h.numel() * h.element_size();
    TORCH_CHECK(have == nbytes, "copy_out: tensor holds ", have, " bytes, buffer ", nbytes);
    if (have > 0) std::memcpy(dst, h.data_ptr(), have);
  });
}

int ar_tensor_shape(ar_tensor t, int64_t *d, int max_dims, int *ndim, char **err) {
  return guard(err, [&] {
    auto s = T(t).sizes();
    TORCH_CHECK(static_cast<int>(s.size()) <= max_dims, "tensor has ", s.size(), " dims");
    *ndim = static_cast<int>(s.size());
    for (size_t i = 0; i < s.size(); i++) d[i] = s[i];
  });
}

int ar_tensor_meta(ar_tensor t, int *dtype, int *dev, int *requires_grad, char **err) {
  return guard(err, [&] {
    *dtype = dtype_code(T(t).scalar_type());
    *dev = device_code(T(t).device());
    *requires_grad = T(t).requires_grad() ? 1 : 0;
  });
}

int ar_tensor_to(ar_tensor t, int dev, int dtype, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(T(t).to(device(dev), scalar_type(dtype))); });
}

int ar_tensor_item(ar_tensor t, double *out, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(T(t).numel() == 1, "item() needs a one-element tensor, got shape ", T(t).sizes());
    *out = T(t).detach().to(at::kCPU, at::kDouble).item<double>();
  });
}

int ar_tensor_set_requires_grad(ar_tensor t, int on, char **err) {
  return guard(err, [&] { t->t.set_requires_grad(on != 0); });
}

int ar_tensor_grad(ar_tensor t, ar_tensor *out, char **err) {
  return guard(err, [&] {
    const at::Tensor &g = T(t).grad();
    *out = g.defined() ? wrap(g) : nullptr;
  });
}

int ar_tensor_zero_grad(ar_tensor t, char **err) {
  return guard(err, [&] {
    at::Tensor g = t->t.mutable_grad();
    if (g.defined()) t->t.mutable_grad() = at::Tensor();
  });
}

int ar_tensor_backward(ar_tensor t, char **err) {
  return guard(err, [&] {
    c10::AutoGradMode on(true);
    T(t).backward();
  });
}

int ar_tensor_pin(ar_tensor t, ar_tensor *out, char **err) {
  return guard(err, [&] {
#ifdef AGENTRL_CUDA
    // Pinned memory belongs to the CUDA context of the current device: the
    // tensor's, or the process's (ar_set_device), not device 0's by
    // default on whichever thread Go runs this on.
    DeviceScope on(T(t).is_cuda() ? T(t).device() : process_device());
    *out = wrap(T(t).to(at::kCPU).pin_memory());
#else
    *out = wrap(T(t).to(at::kCPU).clone());
#endif
  });
}

int ar_tensor_checksum(ar_tensor t, double *sum, double *sumsq, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    at::Tensor flat = T(t).detach().reshape({-1});
    double s = 0, q = 0;
    // Chunks bound the float copy; the loop is the one reduction order.
    const int64_t chunk = int64_t(1) << 20;
    for (int64_t off = 0; off < flat.numel(); off += chunk) {
      at::Tensor c = flat.narrow(0, off, std::min(chunk, flat.numel() - off)).to(at::kCPU, at::kFloat).contiguous();
      const float *p = c.data_ptr<float>();
      for (int64_t i = 0; i < c.numel(); i++) {
        s += p[i];
        q += static_cast<double>(p[i]) * p[i];
      }
    }
    *sum = s;
    *sumsq = q;
  });
}

int ar_unary(int op, ar_tensor a, ar_tensor *out, char **err) {
  return guard(err, [&] {
    const at::Tensor &x = T(a);
    switch (op) {
      case AR_NEG: *out = wrap(-x); return;
      case AR_EXP: *out = wrap(at::exp(x)); return;
      case AR_LOG: *out = wrap(at::log(x)); return;
      case AR_SQRT: *out = wrap(at::sqrt(x)); return;
      case AR_ABS: *out = wrap(at::abs(x)); return;
      case AR_DETACH: *out = wrap(x.detach()); return;
      case AR_SIGMOID: *out = wrap(at::sigmoid(x)); return;
      case AR_TANH: *out = wrap(at::tanh(x)); return;
      case AR_LOGICAL_NOT: *out = wrap(at::logical_not(x)); return;
      case AR_CONTIGUOUS: *out = wrap(x.contiguous()); return;
    }
    TORCH_CHECK(false, "unknown unary op ", op);
  });
}

int ar_binary(int op, ar_tensor a, ar_tensor b, ar_tensor *out, char **err) {
  return guard(err, [&] {
    *out = wrap(apply_binary(op, T(a), T(b)));
  });
}

int ar_scalar(int op, ar_tensor a, double s, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(apply_scalar(op, T(a), s)); });
}

int ar_rscalar(int op, double s, ar_tensor a, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(apply_rscalar(op, s, T(a))); });
}

int ar_clamp(ar_tensor a, double lo, double hi, int has_lo, int has_hi, ar_tensor *out,
             char **err) {
  return guard(err, [&] {
    c10::optional<at::Scalar> l, h;
    if (has_lo) l = lo;
    if (has_hi) h = hi;
    *out = wrap(at::clamp(T(a), l, h));
  });
}

int ar_where(ar_tensor cond, ar_tensor a, ar_tensor b, ar_tensor *out, char **err) {
  return guard(err, [&] {
    at::Tensor c = T(cond).to(at::kBool);
    // where.self has no meta kernel (libtorch 1.13 through 2.14 at least).
    // On the meta device (no values, used by tests as a second device) the
    // same shape, dtype and device checks come from products with the
    // condition.
    if (c.is_meta() || T(a).is_meta() || T(b).is_meta()) {
      *out = wrap(T(a) * c + T(b) * ~c);
      return;
    }
    *out = wrap(at::where(c, T(a), T(b)));
  });
}

int ar_reduce(int op, ar_tensor a, const int64_t *d, int ndims, int keepdim, ar_tensor *out,
              char **err) {
  return guard(err, [&] {
    const at::Tensor &x = T(a);
    std::vector<int64_t> ds(d, d + ndims);
    bool all = ndims == 0;
    switch (op) {
      case AR_SUM: *out = wrap(all ? x.sum() : x.sum(ds, keepdim != 0)); return;
      case AR_MEAN: *out = wrap(all ? x.mean() : x.mean(ds, keepdim != 0)); return;
      case AR_MAX:
      case AR_MIN: {
        if (all) {
          *out = wrap(op == AR_MAX ? x.max() : x.min());
          return;
        }
        TORCH_CHECK(ndims == 1, "max/min reduce over one dim at a time");
        auto r = op == AR_MAX ? x.max(ds[0], keepdim != 0) : x.min(ds[0], keepdim != 0);
        *out = wrap(std::get<0>(r));
        return;
      }
    }
    TORCH_CHECK(false, "unknown reduce op ", op);
  });
}

int ar_log_softmax(ar_tensor a, int64_t dim, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(at::log_softmax(T(a), dim)); });
}

int ar_softmax(ar_tensor a, int64_t dim, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(at::softmax(T(a), dim)); });
}

int ar_gather(ar_tensor a, int64_t dim, ar_tensor index, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(at::gather(T(a), dim, T(index).to(at::kLong))); });
}

int ar_reshape(ar_tensor a, const int64_t *shape, int ndim, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(T(a).reshape(dims(shape, ndim))); });
}

int ar_slice(ar_tensor a, int64_t dim, int64_t start, int64_t end, int64_t step, ar_tensor *out,
             char **err) {
  return guard(err, [&] { *out = wrap(T(a).slice(dim, start, end, step)); });
}

static std::vector<at::Tensor> list(const ar_tensor *ts, int n) {
  std::vector<at::Tensor> v;
  v.reserve(n);
  for (int i = 0; i < n; i++) v.push_back(T(ts[i]));
  return v;
}

int ar_cat(const ar_tensor *ts, int n, int64_t dim, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(at::cat(list(ts, n), dim)); });
}

int ar_stack(const ar_tensor *ts, int n, int64_t dim, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(at::stack(list(ts, n), dim)); });
}

int ar_transpose(ar_tensor a, int64_t d0, int64_t d1, ar_tensor *out, char **err) {
  return guard(err, [&] { *out = wrap(T(a).transpose(d0, d1)); });
}

}  // extern "C"
