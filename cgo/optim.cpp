// optim.cpp: AdamW (Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization", Algorithm 2; the same update as torch.optim.AdamW) and
// global gradient-norm clipping, one C call per step over all parameters.
//
// Mixed precision. A bf16 or f16 parameter cannot take AdamW's small steps
// itself: a step of 1e-6 on a weight near 0.02 is below half a bf16
// rounding step, so it rounds to nothing. Such a parameter gets an f32
// master copy (taken from the parameter at its first gradient) and an f32
// gradient accumulator of its shape. After each backward pass
// accumulate() moves the parameter's low-precision gradient into it, so
// gradients sum in f32 over micro-batches and ranks; the update runs on
// the master, and the parameter receives the master rounded to its dtype.
// The moments are f32 as well. f32 parameters are updated in place as
// before. This is what mixed-precision trainers do (Micikevicius et al.
// 2018, arXiv:1710.03740, Sec. 3.1).
//
// Sharded state (ZeRO stages 1 and 2, Rajbhandari et al. 2020,
// arXiv:1910.02054). With a process group of N ranks attached, the
// parameters are one conceptual flat vector, in order, padded to a multiple
// of N; rank r owns its elements [r*S, (r+1)*S), S = padded length / N,
// which may cut a parameter anywhere. Each parameter keeps its state for
// the sub-range [lo, hi) of its own flat elements that this rank owns (all
// of them when unsharded: one code path), so the masters and moments of a
// rank are its 1/N. The step updates the owned range only, and the ranks
// all-gather the updated weights. Stage 1 all-reduces whole gradients;
// stage 2 reduce-scatters them, so each rank keeps only its range's sum.
// A step's micro-batch gradients accumulate whole (autograd's .grad, or
// the f32 accumulator) before that reduction.
//
// Fused step. Where the linked libtorch has it for the parameters' device,
// the update runs as libtorch's multi-tensor AdamW, at::_fused_adamw_ (the
// kernel behind torch.optim.AdamW(fused=True): CUDA from libtorch 2.0, the
// CPU from 2.4), one call per group, device, dtype and step count, over
// the same weights (masters for bf16/f16 parameters), gradients and
// moments the loop takes one parameter at a time: it reads and writes each
// once instead of once per elementwise op. Its formulas are the loop's;
// it rounds differently in the last bits (the first moment as a lerp, and
// on CUDA the bias corrections in f32). Elsewhere (libtorch 1.13, the CPU
// before 2.4) the loop runs. ar_adamw_set_fused chooses.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "collectives.h"
#include "common.h"

#if AR_TORCH_AT_LEAST(2, 0)
#include <ATen/core/dispatch/Dispatcher.h>
#endif

namespace {

// fused_missing is why the fused AdamW cannot run on device d with the
// linked libtorch ("" when it can).
std::string fused_missing(const at::Device &d) {
#if AR_TORCH_AT_LEAST(2, 0)
  if (d.is_cpu() || d.is_cuda()) {
    auto op = c10::Dispatcher::singleton().findSchema({"aten::_fused_adamw_", ""});
    if (op.has_value() && op->hasKernelForDispatchKey(d.is_cpu() ? c10::DispatchKey::CPU : c10::DispatchKey::CUDA))
      return "";
  }
  return "the linked libtorch has no at::_fused_adamw_ kernel for " + d.str() +
         " (libtorch has it for CUDA from 2.0, for the CPU from 2.4)";
#else
  return "libtorch " + std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
         " has no at::_fused_adamw_ (libtorch has it for CUDA from 2.0, for the CPU from 2.4)";
#endif
}

}  // namespace

struct ar_adamw_s {
  struct Group {
    double lr, beta1, beta2, eps, weight_decay;
  };
  struct Param {
    at::Tensor p;
    int group;
    int64_t step = 0;
    int64_t lo = 0, hi = 0;  // the flat elements of p this rank updates
    at::Tensor m, v;         // moments of p's elements [lo, hi), flat; undefined before the first step
    at::Tensor master;       // f32 copy of a bf16/f16 p's elements [lo, hi), flat; undefined for f32 p
    at::Tensor acc;          // f32 gradient accumulator of a bf16/f16 p (p's shape)
    at::Tensor shard_grad;   // after a reduce-scatter: the summed gradient of [lo, hi), flat
    bool has_grad = false;   // some rank has a gradient for p this step

    bool low_precision() const { return p.scalar_type() == at::kBFloat16 || p.scalar_type() == at::kHalf; }
    int64_t owned() const { return hi - lo; }
    // The type of the update's arithmetic, moments and gradients.
    at::ScalarType work_type() const { return low_precision() ? at::kFloat : p.scalar_type(); }
    // p's owned elements, a flat view of its storage.
    at::Tensor p_owned() const { return p.detach().view({-1}).narrow(0, lo, owned()); }
    // The weights the update acts on.
    at::Tensor weights() const { return master.defined() ? master : p_owned(); }
    // The whole accumulated gradient (undefined when there is none).
    at::Tensor full_grad() const { return low_precision() ? acc : p.grad(); }
    // The gradient of the owned elements, flat (undefined when none).
    at::Tensor owned_grad() const {
      if (shard_grad.defined()) return shard_grad;
      at::Tensor g = full_grad();
      return g.defined() ? g.view({-1}).narrow(0, lo, owned()) : g;
    }
    // Sets the master weights to src's owned elements (src has p's shape).
    void set_master(const at::Tensor &src) {
      master = src.detach().reshape({-1}).narrow(0, lo, owned()).to(p.device(), at::kFloat, false, true);
    }
    // Moves p's gradient, if any, into the f32 accumulator; keeps gradients
    // contiguous, so flat views of them alias their memory.
    void accumulate() {
      if (!low_precision()) {
        at::Tensor g = p.grad();
        if (g.defined() && !g.is_contiguous()) p.mutable_grad() = g.contiguous();
        return;
      }
      if (!master.defined()) set_master(p);
      at::Tensor g = p.grad();
      if (!g.defined()) return;
      if (acc.defined()) {
        acc.add_(g);
      } else {
        acc = g.to(at::kFloat, false, true).contiguous();
      }
      p.mutable_grad() = at::Tensor();
    }
    void drop_grads() {
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
      acc = at::Tensor();
      shard_grad = at::Tensor();
    }
  };
  std::vector<Group> groups;
  std::vector<Param> params;
  std::vector<int64_t> offset;  // where each parameter starts in the flat vector
  ar_dist dist = nullptr;       // with a group: gradients are reduced, and (stage >= 1) state sharded
  int stage = 0, rank = 0, world = 1;
  int64_t shard = 0;         // S, elements per rank (sharded)
  int64_t bucket = 25 << 20; // bytes a reduce-scatter or all-gather moves at once
  bool reduced = false;      // reduce_grads ran since the last step or zero_grad
  bool fused = false;        // the step runs at::_fused_adamw_ (see fused_missing)

  bool sharded() const { return dist != nullptr && stage >= 1; }

  void accumulate() {
    c10::NoGradGuard no_grad;
    for (auto &pr : params) pr.accumulate();
  }

  // segments calls f(i, a, b, pos) for each piece of the flat range
  // [start, start+len) that lies in parameter i, as p's flat elements
  // [a, b) at position pos of the range.
  template <class F>
  void segments(int64_t start, int64_t len, F &&f) const {
    for (size_t i = 0; i < params.size(); i++) {
      int64_t n = params[i].p.numel();
      int64_t a = std::max<int64_t>(start, offset[i]), b = std::min<int64_t>(start + len, offset[i] + n);
      if (a < b) f(i, a - offset[i], b - offset[i], a - start);
    }
  }

  // Chunk of a shard that one collective moves, in elements of size bytes.
  int64_t chunk(int64_t size) const { return std::max<int64_t>(1, bucket / (size * world)); }

  // has_grads sets each parameter's has_grad: whether some rank holds a
  // gradient for it (this rank alone without a group).
  void has_grads() {
    std::vector<double> has(params.size());
    for (size_t i = 0; i < params.size(); i++) has[i] = params[i].full_grad().defined() ? 1 : 0;
    if (dist != nullptr && !has.empty()) ar::dist_allreduce_f64(dist, has.data(), has.size(), AR_RED_MAX);
    for (size_t i = 0; i < params.size(); i++) params[i].has_grad = has[i] > 0;
  }

  // reduce_grads sums the gradients over the ranks: whole (stage 0 and 1)
  // or only this rank's range (stage 2, the rest is dropped).
  void reduce_grads() {
    c10::NoGradGuard no_grad;
    accumulate();
    has_grads();
    reduced = true;
    if (dist == nullptr) return;
    std::vector<at::Tensor> grads;
    for (auto &pr : params) {
      if (!pr.has_grad) continue;
      if (!pr.full_grad().defined()) {
        if (pr.low_precision())
          pr.acc = at::zeros(pr.p.sizes(), pr.p.options().dtype(at::kFloat));
        else
          pr.p.mutable_grad() = at::zeros_like(pr.p, at::MemoryFormat::Contiguous);
      }
      grads.push_back(pr.full_grad());
    }
    if (stage < 2) {
      ar::dist_allreduce_tensors(dist, grads, bucket);
      return;
    }
    at::ScalarType wt = params[0].work_type();
    at::TensorOptions opt = params[0].p.options().dtype(wt);
    for (auto &pr : params)
      if (pr.has_grad) pr.shard_grad = at::empty({pr.owned()}, opt);
    const int64_t step = chunk(at::elementSize(wt));
    for (int64_t c = 0; c < shard; c += step) {
      const int64_t len = std::min(step, shard - c);
      at::Tensor in = at::zeros({world * len}, opt), out = at::empty({len}, opt);
      for (int r = 0; r < world; r++) {
        segments(r * shard + c, len, [&](size_t i, int64_t a, int64_t b, int64_t pos) {
          const auto &pr = params[i];
          if (pr.has_grad) in.narrow(0, r * len + pos, b - a).copy_(pr.full_grad().view({-1}).narrow(0, a, b - a));
        });
      }
      ar::dist_reduce_scatter(dist, in, out);
      segments(rank * shard + c, len, [&](size_t i, int64_t a, int64_t b, int64_t pos) {
        auto &pr = params[i];
        if (pr.has_grad) pr.shard_grad.narrow(0, a - pr.lo, b - a).copy_(out.narrow(0, pos, b - a));
      });
    }
    for (auto &pr : params) {
      if (pr.p.grad().defined()) pr.p.mutable_grad() = at::Tensor();
      pr.acc = at::Tensor();
    }
  }

  // prepare makes the gradients ready for the norm, scaling and the step.
  void prepare() {
    if (dist == nullptr) {
      accumulate();
      has_grads();
      return;
    }
    TORCH_CHECK(reduced, "adamw: reduce the gradients over the ranks (ar_adamw_reduce_grads) before this");
  }

  // why_not_fused is why some parameter's device has no fused AdamW (""
  // when every one has it).
  std::string why_not_fused() const {
    for (const auto &pr : params) {
      std::string why = fused_missing(pr.p.device());
      if (!why.empty()) return why;
    }
    return "";
  }

  // update_loop is AdamW's update of one parameter's owned range, one
  // elementwise op at a time (pr.step already counts this step).
  void update_loop(Param &pr) {
    const auto &h = groups[pr.group];
    at::Tensor w = pr.weights(), g = pr.owned_grad();
    // theta <- theta - lr * lambda * theta          (decoupled weight decay)
    if (h.weight_decay != 0) w.mul_(1 - h.lr * h.weight_decay);
    // m <- beta1 m + (1 - beta1) g ;  v <- beta2 v + (1 - beta2) g^2
    pr.m.mul_(h.beta1).add_(g, 1 - h.beta1);
    pr.v.mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
    // theta <- theta - lr * m_hat / (sqrt(v_hat) + eps)
    double bc1 = 1 - std::pow(h.beta1, static_cast<double>(pr.step));
    double bc2 = 1 - std::pow(h.beta2, static_cast<double>(pr.step));
    at::Tensor denom = (pr.v.sqrt() / std::sqrt(bc2)).add_(h.eps);
    w.addcdiv_(pr.m, denom, -h.lr / bc1);
  }

  // update_fused is the same update of the parameters ps (their step
  // counts already advanced) through at::_fused_adamw_: one call per
  // group, device, dtype and step count, as its lists must share one
  // device and dtype and its hyper-parameters are per call.
  void update_fused(const std::vector<Param *> &ps) {
#if AR_TORCH_AT_LEAST(2, 0)
    using Key = std::tuple<int, int, int, int64_t>;  // group, device, dtype, step
    std::map<Key, std::vector<Param *>> buckets;
    for (Param *pr : ps)
      buckets[Key{pr->group, ar::device_code(pr->p.device()), static_cast<int>(pr->work_type()), pr->step}].push_back(pr);
    for (auto &kv : buckets) {
      const auto &bucket = kv.second;
      const auto &h = groups[std::get<0>(kv.first)];
      std::vector<at::Tensor> w, g, m, v;
      for (Param *pr : bucket) {
        w.push_back(pr->weights());
        g.push_back(pr->owned_grad());
        m.push_back(pr->m);
        v.push_back(pr->v);
      }
      // The step count as torch.optim keeps it for the fused kernel (an
      // f32 scalar on the parameters' device), already advanced: the
      // kernel reads it and leaves it. One tensor serves the bucket.
      at::Tensor step = at::full({}, static_cast<double>(std::get<3>(kv.first)), w[0].options().dtype(at::kFloat));
      std::vector<at::Tensor> steps(bucket.size(), step);
      at::_fused_adamw_(w, g, m, v, {}, steps, h.lr, h.beta1, h.beta2, h.weight_decay, h.eps, /*amsgrad=*/false,
                        /*maximize=*/false);
      // The fused kernel writes the weights without moving their version
      // counters, which is how the decode engine sees that its fused
      // copies are stale (engine.cpp, weights_version): move them here.
      for (const at::Tensor &t : w)
        if (!t.is_inference()) t.unsafeGetTensorImpl()->bump_version();
    }
#else
    TORCH_CHECK(ps.empty(), "adamw: ", fused_missing(at::Device(at::kCPU)));
#endif
  }

  // allgather_weights gives every rank the weights each rank updated.
  void allgather_weights() {
    c10::NoGradGuard no_grad;
    at::ScalarType dt = params[0].p.scalar_type();
    for (auto &pr : params)
      if (pr.p.scalar_type() != dt) dt = at::kFloat;  // exact for bf16, f16 and f32 alike
    at::TensorOptions opt = params[0].p.options().dtype(dt);
    const int64_t step = chunk(at::elementSize(dt));
    for (int64_t c = 0; c < shard; c += step) {
      const int64_t len = std::min(step, shard - c);
      at::Tensor in = at::zeros({len}, opt), out = at::empty({world * len}, opt);
      segments(rank * shard + c, len, [&](size_t i, int64_t a, int64_t b, int64_t pos) {
        in.narrow(0, pos, b - a).copy_(params[i].p.detach().view({-1}).narrow(0, a, b - a));
      });
      ar::dist_allgather(dist, in, out);
      for (int r = 0; r < world; r++) {
        if (r == rank) continue;
        segments(r * shard + c, len, [&](size_t i, int64_t a, int64_t b, int64_t pos) {
          params[i].p.detach().view({-1}).narrow(0, a, b - a).copy_(out.narrow(0, r * len + pos, b - a));
        });
      }
    }
  }
};

using namespace ar;

extern "C" {

int ar_adamw_new(const ar_tensor *params, const int *group, int nparams, const double *lr,
                 const double *beta1, const double *beta2, const double *eps,
                 const double *weight_decay, int ngroups, ar_adamw *out, char **err) {
  return guard(err, [&] {
    auto o = std::make_unique<ar_adamw_s>();
    for (int g = 0; g < ngroups; g++) {
      TORCH_CHECK(lr[g] >= 0, "group ", g, ": lr must be >= 0, got ", lr[g]);
      TORCH_CHECK(beta1[g] >= 0 && beta1[g] < 1, "group ", g, ": beta1 must be in [0,1), got ", beta1[g]);
      TORCH_CHECK(beta2[g] >= 0 && beta2[g] < 1, "group ", g, ": beta2 must be in [0,1), got ", beta2[g]);
      TORCH_CHECK(eps[g] > 0, "group ", g, ": eps must be > 0, got ", eps[g]);
      o->groups.push_back({lr[g], beta1[g], beta2[g], eps[g], weight_decay[g]});
    }
    int64_t off = 0;
    for (int i = 0; i < nparams; i++) {
      const at::Tensor &p = T(params[i]);
      TORCH_CHECK(group[i] >= 0 && group[i] < ngroups, "param ", i, ": group ", group[i], " out of range");
      TORCH_CHECK(p.is_floating_point(), "param ", i, " is not floating point");
      TORCH_CHECK(p.is_contiguous(), "param ", i, " is not contiguous");
      ar_adamw_s::Param pr{p, group[i]};
      pr.hi = p.numel();
      o->params.push_back(std::move(pr));
      o->offset.push_back(off);
      off += p.numel();
    }
    o->fused = !o->params.empty() && o->why_not_fused().empty();
    *out = o.release();
  });
}

int ar_adamw_shard(ar_adamw o, ar_dist d, int stage, int64_t bucket_bytes, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(stage >= 0 && stage <= 2, "ZeRO stage ", stage, ": want 0, 1 or 2");
    TORCH_CHECK(d != nullptr, "adamw_shard: null process group");
    TORCH_CHECK(bucket_bytes > 0, "adamw_shard: bucket of ", bucket_bytes, " bytes");
    for (auto &pr : o->params)
      TORCH_CHECK(pr.step == 0 && !pr.m.defined() && !pr.master.defined(),
                  "adamw_shard: the optimizer already has state; shard it before its first step or load");
    if (stage >= 1) {
      at::ScalarType wt = o->params[0].work_type();
      for (size_t i = 0; i < o->params.size(); i++) {
        TORCH_CHECK(o->params[i].work_type() == wt, "ZeRO: param ", i, " is updated in ",
                    o->params[i].work_type(), ", param 0 in ", wt, ": sharding needs one type");
        TORCH_CHECK(o->params[i].p.device() == o->params[0].p.device(), "ZeRO: param ", i,
                    " is on another device than param 0");
      }
    }
    o->dist = d;
    o->stage = stage;
    o->bucket = bucket_bytes;
    o->rank = dist_rank(d);
    o->world = dist_world(d);
    int64_t total = o->params.empty() ? 0 : o->offset.back() + o->params.back().p.numel();
    o->shard = (total + o->world - 1) / o->world;
    for (size_t i = 0; i < o->params.size(); i++) {
      auto &pr = o->params[i];
      int64_t n = pr.p.numel();
      pr.lo = 0;
      pr.hi = n;
      if (stage >= 1) {
        pr.lo = std::clamp<int64_t>(o->rank * o->shard - o->offset[i], 0, n);
        pr.hi = std::clamp<int64_t>((o->rank + 1) * o->shard - o->offset[i], 0, n);
      }
    }
  });
}

int ar_adamw_free(ar_adamw o) {
  delete o;
  return AR_OK;
}

int ar_adamw_set_lr(ar_adamw o, int group, double lr, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(group >= 0 && group < static_cast<int>(o->groups.size()), "group ", group, " out of range");
    o->groups[group].lr = lr;
  });
}

int ar_adamw_accumulate(ar_adamw o, char **err) {
  return guard(err, [&] { o->accumulate(); });
}

int ar_adamw_reduce_grads(ar_adamw o, char **err) {
  return guard(err, [&] { o->reduce_grads(); });
}

int ar_adamw_step(ar_adamw o, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    o->prepare();
    std::vector<ar_adamw_s::Param *> stepped;
    for (auto &pr : o->params) {
      if (!pr.has_grad) continue;
      if (!pr.m.defined()) {
        pr.m = at::zeros({pr.owned()}, pr.p.options().dtype(pr.work_type()));
        pr.v = at::zeros({pr.owned()}, pr.p.options().dtype(pr.work_type()));
      }
      pr.step++;
      if (pr.owned() == 0) continue;
      if (!o->fused) o->update_loop(pr);
      stepped.push_back(&pr);
    }
    if (o->fused) o->update_fused(stepped);
    for (auto *pr : stepped)
      if (pr->master.defined()) pr->p_owned().copy_(pr->master);  // rounded to p's dtype
    if (o->sharded()) o->allgather_weights();
    o->reduced = false;
  });
}

int ar_adamw_fused(ar_adamw o, int *fused, char **err) {
  return guard(err, [&] { *fused = o->fused ? 1 : 0; });
}

int ar_adamw_set_fused(ar_adamw o, int fused, char **err) {
  return guard(err, [&] {
    if (fused) {
      const std::string why = o->why_not_fused();
      TORCH_CHECK(why.empty(), "adamw: no fused step here: ", why);
    }
    o->fused = fused != 0;
  });
}

int ar_adamw_zero_grad(ar_adamw o, char **err) {
  return guard(err, [&] {
    for (auto &pr : o->params) pr.drop_grads();
    o->reduced = false;
  });
}

int ar_adamw_grad_norm(ar_adamw o, double *norm, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    o->prepare();
    std::vector<at::Tensor> norms;
    for (auto &pr : o->params) {
      if (!pr.has_grad || pr.owned() == 0) continue;
      norms.push_back(pr.owned_grad().to(at::kFloat).norm(2));
    }
    double sq = norms.empty() ? 0 : at::stack(norms).pow(2).sum().item<double>();
    if (o->sharded()) {
      // Each rank holds the squares of its range: their sum is the norm's.
      dist_allreduce_f64(o->dist, &sq, 1, AR_RED_SUM);
      *norm = std::sqrt(sq);
    } else if (o->dist != nullptr) {
      // Equal gradients, norms that may differ in the last bits (the
      // reduction order follows the thread count): the ranks take the
      // largest, so they scale by the same factor and stay identical.
      *norm = std::sqrt(sq);
      dist_allreduce_f64(o->dist, norm, 1, AR_RED_MAX);
    } else {
      *norm = std::sqrt(sq);
    }
  });
}

int ar_adamw_scale_grads(ar_adamw o, double coef, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    o->prepare();
    for (auto &pr : o->params)
      if (pr.has_grad && pr.owned() > 0) pr.owned_grad().mul_(coef);
  });
}

int ar_adamw_state_bytes(ar_adamw o, int64_t *bytes, char **err) {
  return guard(err, [&] {
    int64_t n = 0;
    for (auto &pr : o->params)
      for (const at::Tensor *t : {&pr.m, &pr.v, &pr.master})
        if (t->defined()) n += t->numel() * t->element_size();
    *bytes = n;
  });
}

int ar_adamw_get_state(ar_adamw o, int i, int64_t *step, ar_tensor *m, ar_tensor *v, ar_tensor *master,
                       char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    TORCH_CHECK(i >= 0 && i < static_cast<int>(o->params.size()), "param ", i, " out of range");
    auto &pr = o->params[i];
    *step = pr.step;
    std::vector<at::Tensor> kinds;
    for (const at::Tensor *t : {&pr.m, &pr.v, &pr.master})
      if (t->defined()) kinds.push_back(*t);
    const int64_t n = pr.p.numel();
    std::vector<at::Tensor> full;
    if (!o->sharded()) {
      for (auto &t : kinds) full.push_back(t.view(pr.p.sizes()).clone());
    } else if (!kinds.empty()) {
      // Each rank writes its range into zeros, and a sum gathers them:
      // adding zeros is exact.
      at::Tensor buf = at::zeros({static_cast<int64_t>(kinds.size()) * n}, kinds[0].options());
      for (size_t k = 0; k < kinds.size(); k++) buf.narrow(0, k * n + pr.lo, pr.owned()).copy_(kinds[k]);
      dist_allreduce_tensors(o->dist, {buf}, o->bucket);
      for (size_t k = 0; k < kinds.size(); k++) full.push_back(buf.narrow(0, k * n, n).view(pr.p.sizes()).clone());
    }
    size_t k = 0;
    *m = pr.m.defined() ? wrap(full[k++]) : nullptr;
    *v = pr.v.defined() ? wrap(full[k++]) : nullptr;
    *master = pr.master.defined() ? wrap(full[k++]) : nullptr;
  });
}

int ar_adamw_set_state(ar_adamw o, int i, int64_t step, ar_tensor m, ar_tensor v, ar_tensor master,
                       char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    TORCH_CHECK(i >= 0 && i < static_cast<int>(o->params.size()), "param ", i, " out of range");
    auto &pr = o->params[i];
    TORCH_CHECK(T(m).sizes() == pr.p.sizes() && T(v).sizes() == pr.p.sizes(), "optimizer state for param ", i,
                " has shape ", T(m).sizes(), ", param has ", pr.p.sizes());
    // The full state is given; this rank keeps its range.
    auto owned = [&](const at::Tensor &t, at::ScalarType st) {
      return t.reshape({-1}).narrow(0, pr.lo, pr.owned()).to(pr.p.device(), st, false, true);
    };
    pr.step = step;
    pr.m = owned(T(m), pr.work_type());
    pr.v = owned(T(v), pr.work_type());
    if (pr.low_precision()) {
      // Without a saved master (a checkpoint of an f32 run), the parameter
      // itself is the best copy there is.
      const at::Tensor &src = master != nullptr ? T(master) : pr.p;
      TORCH_CHECK(src.sizes() == pr.p.sizes(), "master weights for param ", i, " have shape ", src.sizes(),
                  ", param has ", pr.p.sizes());
      pr.set_master(src);
      if (master != nullptr) pr.p.detach().copy_(src);  // every rank rounds the whole master alike
    }
  });
}

}  // extern "C"
