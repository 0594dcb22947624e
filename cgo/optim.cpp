// optim.cpp: AdamW (Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization", Algorithm 2; the same update as torch.optim.AdamW) and
// global gradient-norm clipping, one C call per step over all parameters.
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
  };
  std::vector<Group> groups;
  std::vector<Param> params;
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

int ar_adamw_step(ar_adamw o, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    apply_threads();
    for (auto &pr : o->params) {
      at::Tensor g = pr.p.grad();
      if (!g.defined()) continue;
      const auto &h = o->groups[pr.group];
      if (!pr.m.defined()) {
        pr.m = at::zeros_like(pr.p, at::MemoryFormat::Preserve);
        pr.v = at::zeros_like(pr.p, at::MemoryFormat::Preserve);
      }
      pr.step++;
      // theta <- theta - lr * lambda * theta          (decoupled weight decay)
      if (h.weight_decay != 0) pr.p.mul_(1 - h.lr * h.weight_decay);
      // m <- beta1 m + (1 - beta1) g ;  v <- beta2 v + (1 - beta2) g^2
      pr.m.mul_(h.beta1).add_(g, 1 - h.beta1);
      pr.v.mul_(h.beta2).addcmul_(g, g, 1 - h.beta2);
      // theta <- theta - lr * m_hat / (sqrt(v_hat) + eps)
      double bc1 = 1 - std::pow(h.beta1, static_cast<double>(pr.step));
      double bc2 = 1 - std::pow(h.beta2, static_cast<double>(pr.step));
      at::Tensor denom = (pr.v.sqrt() / std::sqrt(bc2)).add_(h.eps);
      pr.p.addcdiv_(pr.m, denom, -h.lr / bc1);
    }
  });
}

int ar_adamw_zero_grad(ar_adamw o, char **err) {
  return guard(err, [&] {
    for (auto &pr : o->params) {
      if (pr.p.grad().defined()) pr.p.mutable_grad() = at::Tensor();
    }
  });
}

int ar_adamw_grad_norm(ar_adamw o, double *norm, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    std::vector<at::Tensor> norms;
    for (auto &pr : o->params) {
      at::Tensor g = pr.p.grad();
      if (g.defined()) norms.push_back(g.detach().to(at::kFloat).norm(2));
    }
    *norm = norms.empty() ? 0 : at::stack(norms).norm(2).item<double>();
  });
}

int ar_adamw_scale_grads(ar_adamw o, double coef, char **err) {
  return guard(err, [&] {
    c10::NoGradGuard no_grad;
    for (auto &pr : o->params) {
      if (pr.p.grad().defined()) pr.p.mutable_grad().mul_(coef);
    }
  });
}

int ar_adamw_get_state(ar_adamw o, int i, int64_t *step, ar_tensor *m, ar_tensor *v, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(i >= 0 && i < static_cast<int>(o->params.size()), "param ", i, " out of range");
    auto &pr = o->params[i];
    *step = pr.step;
    *m = pr.m.defined() ? wrap(pr.m.clone()) : nullptr;
    *v = pr.v.defined() ? wrap(pr.v.clone()) : nullptr;
  });
}

int ar_adamw_set_state(ar_adamw o, int i, int64_t step, ar_tensor m, ar_tensor v, char **err) {
  return guard(err, [&] {
    TORCH_CHECK(i >= 0 && i < static_cast<int>(o->params.size()), "param ", i, " out of range");
    auto &pr = o->params[i];
    TORCH_CHECK(T(m).sizes() == pr.p.sizes() && T(v).sizes() == pr.p.sizes(), "optimizer state for param ", i,
                " has shape ", T(m).sizes(), ", param has ", pr.p.sizes());
    pr.step = step;
    pr.m = T(m).to(pr.p.device(), pr.p.scalar_type()).clone();
    pr.v = T(v).to(pr.p.device(), pr.p.scalar_type()).clone();
  });
}

}  // extern "C"
