// optim.cpp: AdamW (Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization", Algorithm 2; the same update as torch.optim.AdamW) and
// global gradient-norm clipping, one C call per step over all parameters.
//
// Mixed precision. A bf16 or f16 parameter cannot take AdamW's small steps
// itself: a step of 1e-6 on a weight near 0.02 is below half a bf16
// rounding step, so it rounds to nothing. Such a parameter gets an f32
// master copy (taken from the parameter at its first gradient) and an f32
// gradient accumulator (the master's .grad). After each backward pass
// accumulate() moves the parameter's low-precision gradient into it, so
// gradients sum in f32 over micro-batches and ranks; the update runs on
// the master, and the parameter receives the master rounded to its dtype.
// The moments are f32 as well. f32 parameters are updated in place as
// before. This is what mixed-precision trainers do (Micikevicius et al.
// 2018, arXiv:1710.03740, Sec. 3.1).
#include <cmath>
#include <vector>

#include "common.h"

struct ar_adamw_s {
  struct Group {
    double lr, beta1, beta2, eps, weight_decay;
  };
  struct Param {
    at::Tensor p;
    int group;
    int64_t step = 0;
    at::Tensor m, v;
    at::Tensor master;  // f32 copy of a bf16/f16 p, holding the f32 gradient; undefined for f32 p

    bool low_precision() const { return p.scalar_type() == at::kBFloat16 || p.scalar_type() == at::kHalf; }
    // The tensor the update and the gradient statistics act on.
    const at::Tensor &work() const { return master.defined() ? master : p; }
    // Sets the master weights to src in f32, a leaf whose .grad is the
    // accumulator.
    // Set in place once made: handles on the master (grad_tensors) stay valid.
    void set_master(const at::Tensor &src) {
      c10::NoGradGuard no_grad;
      if (master.defined()) {
        master.copy_(src);
        return;
      }
      master = src.detach().to(p.device(), at::kFloat).clone();
      master.set_requires_grad(true);
    }
    // Moves p's gradient, if any, into the master's f32 accumulator.
    void accumulate() {
      if (!low_precision()) return;
      if (!master.defined()) set_master(p);
      at::Tensor g = p.grad();
      if (!g.defined()) return;
      if (master.grad().defined()) {
        master.mutable_grad().add_(g);
      } else {
        master.mutable_grad() = g.to(at::kFloat);
      }
      p.mutable_grad() = at::Tensor();
    }
  };
  std::vector<Group> groups;
  std::vector<Param> params;

  void accumulate() {
    c10::NoGradGuard no_grad;
    for (auto &pr : params) pr.accumulate();
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
    for (int i = 0; i < nparams; i++) {
      TORCH_CHECK(group[i] >= 0 && group[i] < ngroups, "param ", i, ": group ", group[i], " out of range");
      TORCH_CHECK(T(params[i]).is_floating_point(), "param ", i, " is not floating point");
      o->params.push_back({T(params[i]), group[i]});
    }
    *out = o.release();
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

int ar_adamw_step(ar_adamw o, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    apply_threads();
    o->accumulate();
    for (auto &pr : o->params) {
      const at::Tensor &w = pr.work();
      at::Tensor g = w.grad();
      if (!g.defined()) continue;
      const auto &h = o->groups[pr.group];
      if (!pr.m.defined()) {
        pr.m = at::zeros_like(w, at::MemoryFormat::Preserve);
        pr.v = at::zeros_like(w, at::MemoryFormat::Preserve);
      }
      pr.step++;
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
      if (pr.master.defined()) pr.p.copy_(pr.master);  // rounded to p's dtype
    }
  });
}

int ar_adamw_zero_grad(ar_adamw o, char **err) {
  return guard(err, [&] {
    for (auto &pr : o->params) {
      if (pr.p.grad().defined()) pr.p.mutable_grad() = at::Tensor();
      if (pr.master.defined() && pr.master.grad().defined()) pr.master.mutable_grad() = at::Tensor();
    }
  });
}

int ar_adamw_grad_norm(ar_adamw o, double *norm, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    o->accumulate();
    std::vector<at::Tensor> norms;
    for (auto &pr : o->params) {
      at::Tensor g = pr.work().grad();
      if (g.defined()) norms.push_back(g.detach().to(at::kFloat).norm(2));
    }
    *norm = norms.empty() ? 0 : at::stack(norms).norm(2).item<double>();
  });
}

int ar_adamw_scale_grads(ar_adamw o, double coef, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    o->accumulate();
    for (auto &pr : o->params) {
      at::Tensor g = pr.work().grad();
      if (g.defined()) g.mul_(coef);
    }
  });
}

int ar_adamw_grad_tensors(ar_adamw o, ar_tensor *out, int n, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(n == static_cast<int>(o->params.size()), "grad_tensors: ", n, " slots for ", o->params.size(),
                " params");
    o->accumulate();
    for (int i = 0; i < n; i++) out[i] = wrap(o->params[i].work());
  });
}

int ar_adamw_get_state(ar_adamw o, int i, int64_t *step, ar_tensor *m, ar_tensor *v, ar_tensor *master,
                       char **err) {
  return guard(err, [&] {
    TORCH_CHECK(i >= 0 && i < static_cast<int>(o->params.size()), "param ", i, " out of range");
    auto &pr = o->params[i];
    *step = pr.step;
    *m = pr.m.defined() ? wrap(pr.m.clone()) : nullptr;
    *v = pr.v.defined() ? wrap(pr.v.clone()) : nullptr;
    *master = pr.master.defined() ? wrap(pr.master.detach().clone()) : nullptr;
  });
}

int ar_adamw_set_state(ar_adamw o, int i, int64_t step, ar_tensor m, ar_tensor v, ar_tensor master,
                       char **err) {
  return guard(err, [&] {
    TORCH_CHECK(i >= 0 && i < static_cast<int>(o->params.size()), "param ", i, " out of range");
    auto &pr = o->params[i];
    TORCH_CHECK(T(m).sizes() == pr.p.sizes() && T(v).sizes() == pr.p.sizes(), "optimizer state for param ", i,
                " has shape ", T(m).sizes(), ", param has ", pr.p.sizes());
    // The moments are f32 for f32 and low-precision parameters alike.
    at::ScalarType st = pr.low_precision() ? at::kFloat : pr.p.scalar_type();
    pr.step = step;
    pr.m = T(m).to(pr.p.device(), st).clone();
    pr.v = T(v).to(pr.p.device(), st).clone();
    if (pr.low_precision()) {
      c10::NoGradGuard no_grad;
      // Without a saved master (a checkpoint of an f32 run), the parameter
      // itself is the best copy there is.
      pr.set_master(master != nullptr ? T(master) : pr.p);
      TORCH_CHECK(pr.master.sizes() == pr.p.sizes(), "master weights for param ", i, " have shape ",
                  pr.master.sizes(), ", param has ", pr.p.sizes());
      pr.p.copy_(pr.master);
    }
  });
}

}  // extern "C"
