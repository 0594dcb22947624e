// profiler.cpp: libtorch's profiler (torch/csrc/autograd/profiler_kineto.h)
// driven from the shim, its events reduced to one row per name and device:
// the kernel profile a benchmark brings back (ar_profile_start and
// ar_profile_stop in internal.h).
//
// The profiler is libtorch's, as torch.profiler drives it: operators are
// recorded through RecordFunction callbacks on the calling thread (and the
// threads it hands work to, such as autograd's device threads), kernels
// through Kineto and CUPTI on a CUDA libtorch. Operators nest (aten::linear
// calls aten::addmm), so each row also gets its self time: its events'
// time less that of the events nested in them on the same thread (for a
// device, the same stream), which sums, over the rows, to the time of the
// outermost events. Kernels on one stream do not nest: their self time is
// their time; a span around them (a synchronization CUPTI reports) keeps
// only the time no kernel of its stream ran.
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#ifdef AGENTRL_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "common.h"
#include "internal.h"

namespace {

namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;

// The event's start and duration in ns: KinetoEvent has startNs and
// durationNs in libtorch 2.x, startUs and durationUs in 1.13.
template <class E>
auto start_ns(const E &e, int) -> decltype(static_cast<int64_t>(e.startNs())) {
  return static_cast<int64_t>(e.startNs());
}
template <class E>
int64_t start_ns(const E &e, long) {
  return static_cast<int64_t>(e.startUs()) * 1000;
}
template <class E>
auto duration_ns(const E &e, int) -> decltype(static_cast<int64_t>(e.durationNs())) {
  return static_cast<int64_t>(e.durationNs());
}
template <class E>
int64_t duration_ns(const E &e, long) {
  return static_cast<int64_t>(e.durationUs()) * 1000;
}

struct Span {
  int64_t start, end;
  size_t row;  // the aggregate the event adds to
};

struct Row {
  std::string name;
  int device;
  int64_t calls = 0, total = 0, self = 0;
};

// aggregate reduces events to one row per (name, device), rows sorted by
// self time, longest first.
std::vector<Row> aggregate(const std::vector<prof::KinetoEvent> &events) {
  std::vector<Row> rows;
  std::map<std::pair<std::string, int>, size_t> index;
  std::map<std::pair<int, uint64_t>, std::vector<Span>> threads;  // events by device and thread (stream)
  for (const auto &e : events) {
    const int dev = e.deviceType() == c10::DeviceType::CUDA ? AR_PROFILE_CUDA : AR_PROFILE_CPU;
    auto key = std::make_pair(e.name(), dev);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, rows.size()).first;
      rows.push_back(Row{key.first, dev});
    }
    const int64_t d = std::max<int64_t>(duration_ns(e, 0), 0);
    Row &r = rows[it->second];
    r.calls++;
    r.total += d;
    r.self += d;
    if (!e.isAsync()) {
      const int64_t s = start_ns(e, 0);
      threads[{dev, e.startThreadId()}].push_back(Span{s, s + d, it->second});
    }
  }
  // An event's parent is the innermost earlier event of its thread still
  // open when it starts: the parent's self time loses the part of the
  // child's time that lies within it (1.13's microsecond times may let a
  // child end a microsecond after its parent).
  for (auto &kv : threads) {
    auto &spans = kv.second;
    std::stable_sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<const Span *> open;
    for (const Span &s : spans) {
      while (!open.empty() && open.back()->end <= s.start) open.pop_back();
      if (!open.empty()) rows[open.back()->row].self -= std::min(s.end, open.back()->end) - s.start;
      open.push_back(&s);
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return a.self > b.self; });
  return rows;
}

bool g_cuda = false;  // the running profile records CUDA kernels

}  // namespace

using namespace ar;

extern "C" {

int ar_profile_start(int cuda, char **err) {
  return guard(err, [&] {
    std::set<ActivityType> activities{ActivityType::CPU};
    if (cuda) {
#ifdef AGENTRL_CUDA
      activities.insert(ActivityType::CUDA);
#else
      TORCH_CHECK(false, "profile: CUDA kernels asked for, but this build of agentrl has no CUDA (build with `make cuda`)");
#endif
    }
    const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
    prof::prepareProfiler(config, activities);
    prof::enableProfiler(config, activities);
    g_cuda = cuda != 0;
  });
}

int ar_profile_stop(ar_profile_entry **entries, int64_t *n, char **err) {
  *entries = nullptr;
  *n = 0;
  return guard(err, [&] {
#ifdef AGENTRL_CUDA
    if (g_cuda) c10::cuda::device_synchronize();  // the kernels of the work profiled have run
#endif
    g_cuda = false;
    std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
    TORCH_CHECK(result != nullptr, "profile: libtorch's profiler returned no result");
    std::vector<Row> rows = aggregate(result->events());
    if (rows.empty()) return;
    auto *out = static_cast<ar_profile_entry *>(std::calloc(rows.size(), sizeof(ar_profile_entry)));
    if (out == nullptr) throw std::bad_alloc();
    for (size_t i = 0; i < rows.size(); i++) {
      const Row &r = rows[i];
      out[i].name = static_cast<char *>(std::malloc(r.name.size() + 1));
      if (out[i].name == nullptr) {
        ar_profile_free(out, static_cast<int64_t>(i));
        throw std::bad_alloc();
      }
      std::memcpy(out[i].name, r.name.c_str(), r.name.size() + 1);
      out[i].device = r.device;
      out[i].calls = r.calls;
      out[i].total_ns = r.total;
      out[i].self_ns = r.self;
    }
    *entries = out;
    *n = static_cast<int64_t>(rows.size());
  });
}

int ar_profile_free(ar_profile_entry *entries, int64_t n) {
  if (entries == nullptr) return AR_OK;
  for (int64_t i = 0; i < n; i++) std::free(entries[i].name);
  std::free(entries);
  return AR_OK;
}

}  // extern "C"
