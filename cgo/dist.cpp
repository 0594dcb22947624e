// dist.cpp: data-parallel collectives over libtorch's c10d: a TCPStore for
// rendezvous and heartbeats, and a process group: Gloo where its headers
// are available (Debian: libgloo-dev), NCCL on CUDA builds with nccl.h.
// A backend that was not compiled in is a clear error at ar_dist_new.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

// `make cuda` says which backends it found headers for (AGENTRL_GLOO,
// AGENTRL_NCCL: 0 or 1, cgo/torchflags.sh), so a stray system header of
// another version is never picked up: c10d's classes embed the backends'
// types. The CPU build uses Debian's libgloo-dev when it is installed.
#if defined(AGENTRL_GLOO)
#if AGENTRL_GLOO
#define AR_HAVE_GLOO 1
#endif
#elif __has_include(<gloo/config.h>) && !defined(AR_NO_GLOO)
#define AR_HAVE_GLOO 1
#endif
#ifdef AR_HAVE_GLOO
#define USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#if defined(AGENTRL_CUDA) && defined(AGENTRL_NCCL) && AGENTRL_NCCL
#define USE_C10D_NCCL
#define AR_HAVE_NCCL 1
#include <nccl.h>
#include <torch/csrc/cuda/nccl.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <deque>
#include <vector>

#include "collectives.h"
#include "common.h"
#include "internal.h"

struct ar_kvstore_s {
  c10::intrusive_ptr<c10d::TCPStore> tcp;
  c10::intrusive_ptr<c10d::Store> s;  // tcp, or a PrefixStore over it
};

// Both backends are held by their concrete type: libtorch 1.13 derives them
// from ProcessGroup, 2.x from Backend, and the collectives used here have
// the same signatures on both.
struct ar_dist_s {
#ifdef AR_HAVE_GLOO
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#ifdef AR_HAVE_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
  int rank = 0, world = 1;
  at::Device dev = at::Device(at::kCPU);
  // A collective failed (threw): NCCL's communicators may be stuck in it,
  // and ar_dist_free aborts them instead of shutting them down, which
  // waits for the pending work.
  bool failed = false;
};

namespace {

using Works = std::vector<c10::intrusive_ptr<c10d::Work>>;

// on_group calls f with the group's backend.
template <class F>
void on_group(ar_dist d, F &&f) {
  TORCH_CHECK(d != nullptr, "null process group");
#ifdef AR_HAVE_GLOO
  if (d->gloo) {
    f(*d->gloo);
    return;
  }
#endif
#ifdef AR_HAVE_NCCL
  if (d->nccl) {
    f(*d->nccl);
    return;
  }
#endif
  TORCH_CHECK(false, "process group is closed");
}

// collective runs f, a collective on d, with d's device current on the
// calling thread (CUDA keeps the current device per thread, and NCCL's
// communicators and streams follow it), and marks the group failed when f
// throws.
template <class F>
void collective(ar_dist d, F &&f) {
  TORCH_CHECK(d != nullptr, "null process group");
  ar::DeviceScope on(d->dev);
  try {
    f();
  } catch (...) {
    d->failed = true;
    throw;
  }
}

void wait_all(Works &ws) {
  for (auto &w : ws) w->wait();
}

c10d::ReduceOp reduce_op(int op) {
  switch (op) {
    case AR_RED_SUM: return c10d::ReduceOp::SUM;
    case AR_RED_MAX: return c10d::ReduceOp::MAX;
    case AR_RED_MIN: return c10d::ReduceOp::MIN;
  }
  TORCH_CHECK(false, "unknown reduce op ", op);
}

c10d::Store &store(ar_kvstore s) {
  TORCH_CHECK(s != nullptr && s->s, "null store");
  return *s->s;
}

// Gloo (in libtorch 1.13) reduces no bfloat16: such tensors travel as
// float32 (exact), and come back rounded once.
// reduce_f64 reduces n doubles over all ranks, in place.
void reduce_f64(ar_dist d, double *vals, int n, int op) {
  collective(d, [&] {
    at::Tensor t = at::from_blob(vals, {n}, at::kDouble).clone().to(d->dev);
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = reduce_op(op);
    Works works;
    on_group(d, [&](auto &pg) { works.push_back(pg.allreduce(v, o)); });
    wait_all(works);
    at::Tensor r = v[0].to(at::kCPU).contiguous();
    std::memcpy(vals, r.data_ptr<double>(), sizeof(double) * n);
  });
}

bool widen(ar_dist d, const at::Tensor &t) {
#ifdef AR_HAVE_GLOO
  return d->gloo && t.scalar_type() == at::kBFloat16;
#else
  return false;
#endif
}

}  // namespace

namespace ar {

std::string nccl_header_mismatch(int major, int minor, uint64_t torch_version) {
  if (torch_version == 0) return "this libtorch was built without NCCL: use dist.backend=gloo";
  const uint64_t tmajor = torch_version >> 32, tminor = (torch_version >> 16) & 0xffff, tpatch = torch_version & 0xffff;
  if (tmajor == static_cast<uint64_t>(major) && tminor == static_cast<uint64_t>(minor)) return "";
  std::string built = std::to_string(tmajor) + "." + std::to_string(tminor) + "." + std::to_string(tpatch);
  if (tmajor == 1 && tminor == 0 && tpatch == 0) built = "an NCCL it does not name";
  return "agentrl was compiled with nccl.h of NCCL " + std::to_string(major) + "." + std::to_string(minor) +
         ", but libtorch was built with NCCL " + built +
         ": c10d's ProcessGroupNCCL::Options embeds ncclConfig_t, whose size differs between NCCL versions, so the "
         "two would disagree on its layout; rebuild with the nccl.h of libtorch's NCCL (NCCL_HOME, docs/gpu.md#nccl)";
}

int dist_rank(ar_dist d) { return d->rank; }
int dist_world(ar_dist d) { return d->world; }
at::Device dist_device(ar_dist d) { return d->dev; }

void dist_allreduce_f64(ar_dist d, double *vals, int n, int op) { reduce_f64(d, vals, n, op); }

void dist_allreduce_tensors(ar_dist d, const std::vector<at::Tensor> &grads, int64_t bucket_bytes) {
  collective(d, [&] {
    at::NoGradGuard ng;
    // Buckets: runs of gradients with one dtype and device, each at most
    // bucket_bytes (a larger tensor is a bucket by itself).
    std::vector<std::vector<size_t>> buckets;
    int64_t bytes = 0;
    for (size_t i = 0; i < grads.size(); i++) {
      int64_t b = grads[i].numel() * grads[i].element_size();
      bool fresh = buckets.empty() || bytes + b > bucket_bytes ||
                   grads[i].scalar_type() != grads[buckets.back()[0]].scalar_type() ||
                   grads[i].device() != grads[buckets.back()[0]].device();
      if (fresh) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(i);
      bytes += b;
    }
    // Two buckets in flight at a time: one is summed while the next is
    // packed, and the extra memory stays at two buckets.
    struct Flight {
      size_t k;
      at::Tensor flat;
      c10::intrusive_ptr<c10d::Work> work;
    };
    std::deque<Flight> flying;
    auto land = [&] {
      Flight &f = flying.front();
      f.work->wait();
      int64_t off = 0;
      for (size_t i : buckets[f.k]) {
        int64_t m = grads[i].numel();
        grads[i].copy_(f.flat.narrow(0, off, m).view(grads[i].sizes()));
        off += m;
      }
      flying.pop_front();
    };
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::SUM;
    for (size_t k = 0; k < buckets.size(); k++) {
      std::vector<at::Tensor> parts;
      for (size_t i : buckets[k]) parts.push_back(grads[i].reshape({-1}));
      at::Tensor flat = at::cat(parts);
      if (widen(d, flat)) flat = flat.to(at::kFloat);
      std::vector<at::Tensor> v{flat};
      on_group(d, [&](auto &pg) { flying.push_back({k, flat, pg.allreduce(v, o)}); });
      if (flying.size() > 1) land();
    }
    while (!flying.empty()) land();
  });
}

void dist_reduce_scatter(ar_dist d, const at::Tensor &in, const at::Tensor &out) {
  collective(d, [&] {
    at::NoGradGuard ng;
    const int64_t len = out.numel();
    TORCH_CHECK(in.dim() == 1 && out.dim() == 1 && in.numel() == len * d->world, "reduce_scatter: ", in.numel(),
                " elements in, ", len, " out, world ", d->world);
    at::Tensor buf = widen(d, in) ? in.to(at::kFloat) : in.contiguous();
    Works works;
#ifdef AR_HAVE_NCCL
    if (d->nccl) {
      // NCCL has reduce_scatter, with this signature in 1.13 and 2.x.
      std::vector<at::Tensor> outs{out};
      std::vector<std::vector<at::Tensor>> ins(1);
      for (int r = 0; r < d->world; r++) ins[0].push_back(buf.narrow(0, r * len, len));
      works.push_back(d->nccl->reduce_scatter(outs, ins, c10d::ReduceScatterOptions()));
      wait_all(works);
      return;
    }
#endif
    // Gloo in libtorch 1.13 has no reduce_scatter: one reduce per rank, that
    // rank as the root, over its segment; the root's segment receives the sum.
    std::vector<std::vector<at::Tensor>> segs;
    for (int r = 0; r < d->world; r++) segs.push_back({buf.narrow(0, r * len, len)});
    on_group(d, [&](auto &pg) {
      for (int r = 0; r < d->world; r++) {
        c10d::ReduceOptions o;
        o.rootRank = r;
        o.reduceOp = c10d::ReduceOp::SUM;
        works.push_back(pg.reduce(segs[r], o));
      }
    });
    wait_all(works);
    out.copy_(segs[d->rank][0]);
  });
}

void dist_allgather(ar_dist d, const at::Tensor &in, const at::Tensor &out) {
  collective(d, [&] {
    at::NoGradGuard ng;
    const int64_t len = in.numel();
    TORCH_CHECK(in.dim() == 1 && out.dim() == 1 && out.numel() == len * d->world, "allgather: ", len,
                " elements in, ", out.numel(), " out, world ", d->world);
    bool wide = widen(d, in);
    at::Tensor src = wide ? in.to(at::kFloat) : in.contiguous();
    at::Tensor dst = wide ? at::empty({out.numel()}, src.options()) : out;
    std::vector<std::vector<at::Tensor>> outs(1);
    for (int r = 0; r < d->world; r++) outs[0].push_back(dst.narrow(0, r * len, len));
    std::vector<at::Tensor> ins{src};
    Works works;
    on_group(d, [&](auto &pg) { works.push_back(pg.allgather(outs, ins)); });
    wait_all(works);
    if (wide) out.copy_(dst);
  });
}

}  // namespace ar

extern "C" {

int ar_store_new(const char *host, int port, int is_server, int world,
                 int64_t timeout_ms, const char *prefix, ar_kvstore *out,
                 char **err) {
  return ar::guard(err, [&] {
    TORCH_CHECK(port > 0 && port < 65536, "store port ", port, " out of range");
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(port);
    o.isServer = is_server != 0;
    if (world > 0) o.numWorkers = static_cast<std::size_t>(world);
    o.waitWorkers = world > 0;
    o.timeout = std::chrono::milliseconds(timeout_ms);
    c10::intrusive_ptr<c10d::TCPStore> tcp;
#if AR_TORCH_AT_LEAST(2, 4)
    // From 2.4 TCPStore asks for libuv by default, and a libtorch built
    // without it (Debian's) refuses: fall back to the classic server then.
    try {
      tcp = c10::make_intrusive<c10d::TCPStore>(std::string(host), o);
    } catch (const c10::Error &e) {
      if (std::string(e.what_without_backtrace()).find("libuv") == std::string::npos) throw;
      o.useLibUV = false;
      tcp = c10::make_intrusive<c10d::TCPStore>(std::string(host), o);
    }
#else
    tcp = c10::make_intrusive<c10d::TCPStore>(std::string(host), o);
#endif
    tcp->setTimeout(std::chrono::milliseconds(timeout_ms));
    c10::intrusive_ptr<c10d::Store> s = tcp;
    if (prefix != nullptr && prefix[0] != 0) s = c10::make_intrusive<c10d::PrefixStore>(prefix, tcp);
    *out = new ar_kvstore_s{std::move(tcp), std::move(s)};
  });
}

int ar_store_free(ar_kvstore s) {
  delete s;
  return AR_OK;
}

int ar_store_add(ar_kvstore s, const char *key, int64_t delta, int64_t *value,
                 char **err) {
  return ar::guard(err, [&] { *value = store(s).add(key, delta); });
}

int ar_store_set(ar_kvstore s, const char *key, const void *data, size_t n,
                 char **err) {
  return ar::guard(err, [&] {
    auto p = static_cast<const uint8_t *>(data);
    store(s).set(key, std::vector<uint8_t>(p, p + n));
  });
}

int ar_store_get(ar_kvstore s, const char *key, void **data, size_t *n,
                 char **err) {
  return ar::guard(err, [&] {
    std::vector<uint8_t> v = store(s).get(key);
    *data = std::malloc(std::max<size_t>(v.size(), 1));
    if (*data == nullptr) throw std::bad_alloc();
    if (!v.empty()) std::memcpy(*data, v.data(), v.size());
    *n = v.size();
  });
}

int ar_dist_new(ar_kvstore s, int backend, int rank, int world,
                int64_t timeout_ms, int device, int net, const char *where,
                ar_dist *out, char **err) {
  return ar::guard(err, [&] {
    TORCH_CHECK(world >= 1 && rank >= 0 && rank < world, "rank ", rank,
                " of world size ", world);
    auto timeout = std::chrono::milliseconds(timeout_ms);
    auto d = std::make_unique<ar_dist_s>();
    d->rank = rank;
    d->world = world;
    d->dev = ar::device(device);
    TORCH_CHECK(s != nullptr && s->s, "null store");
    c10::intrusive_ptr<c10d::Store> st = s->s;
    if (backend == AR_GLOO) {
#ifdef AR_HAVE_GLOO
      auto o = c10d::ProcessGroupGloo::Options::create(timeout);
      switch (net) {
        case AR_NET_INTERFACE:
          o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(where));
          break;
        case AR_NET_HOST:
          o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(where));
          break;
        default:
          o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      o->threads = 2;
      d->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(st, rank, world, o);
#else
      TORCH_CHECK(false,
                  "this build of agentrl has no Gloo (its headers were not "
                  "found at build time: install libgloo-dev, or gloo's "
                  "headers into the libtorch include folder)");
#endif
    } else if (backend == AR_NCCL) {
#ifdef AR_HAVE_NCCL
      TORCH_CHECK(d->dev.is_cuda(), "the NCCL backend needs a CUDA device");
      // c10d's Options embed ncclConfig_t, sized by the nccl.h this file
      // was compiled with and written by libtorch's constructor, sized by
      // its own: they must be one NCCL version.
      std::string bad = ar::nccl_header_mismatch(NCCL_MAJOR, NCCL_MINOR, torch::cuda::nccl::version());
      TORCH_CHECK(bad.empty(), bad);
      ar::DeviceScope on(d->dev);
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = timeout;
      d->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(st, rank, world, o);
#else
      TORCH_CHECK(false,
                  "this build of agentrl has no NCCL (`make cuda` found no "
                  "nccl.h, or was run with NCCL=off): use dist.backend=gloo");
#endif
    } else {
      TORCH_CHECK(false, "unknown backend code ", backend);
    }
    *out = d.release();
  });
}

int ar_dist_free(ar_dist d) {
#if defined(AR_HAVE_NCCL) && AR_TORCH_AT_LEAST(2, 3)
  // NCCL's communicators are torn down by shutdown(), not by the
  // destructor, which only warns that the process group was not destroyed.
  // shutdown() waits for the pending collectives, which after a failed one
  // (a rank gone, a timeout) may never finish: then abort() instead.
  if (d != nullptr && d->nccl) {
    try {
      ar::DeviceScope on(d->dev);
      if (d->failed)
        d->nccl->abort();
      else
        d->nccl->shutdown();
    } catch (...) {
    }
  }
#endif
  delete d;
  return AR_OK;
}

int ar_dist_allreduce_grads(ar_dist d, const ar_tensor *params, int n,
                            int64_t bucket_bytes, char **err) {
  return ar::guard(err, [&] {
    TORCH_CHECK(d != nullptr, "null process group");
    ar::DeviceScope on(d->dev);
    at::NoGradGuard ng;
    // Which parameters have a gradient on some rank (one small all-reduce).
    std::vector<double> has(n);
    for (int i = 0; i < n; i++) has[i] = ar::T(params[i]).grad().defined() ? 1 : 0;
    if (n > 0) reduce_f64(d, has.data(), n, AR_RED_MAX);
    std::vector<at::Tensor> grads;
    for (int i = 0; i < n; i++) {
      if (has[i] == 0) continue;
      const at::Tensor &p = ar::T(params[i]);
      if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
      grads.push_back(p.grad());
    }
    ar::dist_allreduce_tensors(d, grads, bucket_bytes);
  });
}

int ar_dist_allreduce_f64(ar_dist d, double *vals, int n, int op, char **err) {
  return ar::guard(err, [&] { reduce_f64(d, vals, n, op); });
}

int ar_dist_allgather(ar_dist d, const void *data, int64_t n, void **out,
                      int64_t *sizes, char **err) {
  return ar::guard(err, [&] {
    collective(d, [&] {
      auto gather = [&](const at::Tensor &in) {
        std::vector<std::vector<at::Tensor>> outs(1);
        for (int r = 0; r < d->world; r++) outs[0].push_back(at::empty_like(in));
        std::vector<at::Tensor> ins{in};
        Works works;
        on_group(d, [&](auto &pg) { works.push_back(pg.allgather(outs, ins)); });
        wait_all(works);
        return outs[0];
      };
      auto len = gather(at::full({1}, n, at::TensorOptions().dtype(at::kLong).device(d->dev)));
      int64_t most = 0, total = 0;
      for (int r = 0; r < d->world; r++) {
        sizes[r] = len[r].to(at::kCPU).item<int64_t>();
        most = std::max(most, sizes[r]);
        total += sizes[r];
      }
      at::Tensor buf = at::zeros({std::max<int64_t>(most, 1)}, at::kByte);
      if (n > 0) std::memcpy(buf.data_ptr<uint8_t>(), data, n);
      auto parts = gather(buf.to(d->dev));
      auto *dst = static_cast<uint8_t *>(std::malloc(std::max<int64_t>(total, 1)));
      if (dst == nullptr) throw std::bad_alloc();
      int64_t off = 0;
      for (int r = 0; r < d->world; r++) {
        at::Tensor p = parts[r].to(at::kCPU).contiguous();
        if (sizes[r] > 0) std::memcpy(dst + off, p.data_ptr<uint8_t>(), sizes[r]);
        off += sizes[r];
      }
      *out = dst;
    });
  });
}

int ar_dist_broadcast(ar_dist d, const ar_tensor *ts, int n, int root,
                      char **err) {
  return ar::guard(err, [&] {
    collective(d, [&] {
      at::NoGradGuard ng;
      c10d::BroadcastOptions o;
      o.rootRank = root;
      std::vector<std::vector<at::Tensor>> vs;
      for (int i = 0; i < n; i++) {
        const at::Tensor &t = ar::T(ts[i]);
        TORCH_CHECK(t.is_contiguous(), "broadcast of a non-contiguous tensor");
        vs.push_back({widen(d, t) ? t.to(at::kFloat) : t});
      }
      Works works;
      on_group(d, [&](auto &pg) {
        for (auto &v : vs) works.push_back(pg.broadcast(v, o));
      });
      wait_all(works);
      for (int i = 0; i < n; i++) {
        const at::Tensor &t = ar::T(ts[i]);
        if (!vs[i][0].is_same(t)) t.copy_(vs[i][0]);
        // The collective wrote t's memory behind autograd's back: move its
        // version counter as an in-place op would, so copies keyed on it
        // (the decode engine's fused weights) see the change.
        else if (!t.is_inference()) t.unsafeGetTensorImpl()->bump_version();
      }
    });
  });
}

int ar_dist_barrier(ar_dist d, char **err) {
  return ar::guard(err, [&] {
    collective(d, [&] {
      c10d::BarrierOptions o;
#ifdef AR_HAVE_NCCL
      // Without device_ids NCCL guesses the device from the rank (and
      // warns), which is not this process's device where ranks do not
      // map one to one onto devices.
      if (d->nccl) o.device_ids = {d->dev.index()};
#endif
      Works works;
      on_group(d, [&](auto &pg) { works.push_back(pg.barrier(o)); });
      wait_all(works);
    });
  });
}

}  // extern "C"

extern "C" int ar_nccl_header_check(int major, int minor, uint64_t torch_version, char **err) {
  return ar::guard(err, [&] {
    std::string bad = ar::nccl_header_mismatch(major, minor, torch_version);
    TORCH_CHECK(bad.empty(), bad);
  });
}
