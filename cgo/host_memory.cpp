// host_memory.cpp: the CPU tensor allocator. Large tensors come from a cache
// of anonymous mappings; small ones from the C heap.
//
// An update allocates and frees the same large buffers over and over (a
// layer's activations, a chunk of logits). Returning each to the kernel costs
// a page fault per 4 KB when it is next touched (over a million faults, a
// quarter of the CPU time of a medium model's update), which is why the heap
// keeps what is freed (keep_heap, library.cpp). But in one heap, a small
// block that lives on (autograd bookkeeping, a checkpoint) splits the freed
// region it was cut from, and the next layer's large buffers no longer fit
// there: resident memory grew 1.4 GB above the live tensors in a LoRA update.
//
// So tensors of kLarge bytes or more get mappings of their own, rounded up to
// whole 2 MB huge pages. A freed mapping is kept for the next request of the
// same rounded size. On a miss that would take the mapped total (in use plus
// cached) above the most ever in use, the oldest cached mapping is resized to
// the request (mremap keeps its pages, so they need no new faults), and more
// are unmapped, oldest first, until the total fits: the cache never makes
// resident memory exceed the live tensors' peak, and an update that repeats
// the previous one's allocations touches few new pages.
#include <sys/mman.h>

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

#include "common.h"

namespace ar {

namespace {

constexpr size_t kLarge = size_t(4) << 20;
constexpr size_t kGrain = size_t(2) << 20;

struct Mapping {
  void *ptr;
  size_t size;
};

class HostCache {
 public:
  // take returns memory for n bytes, n >= kLarge.
  void *take(size_t n) {
    size_t size = (n + kGrain - 1) / kGrain * kGrain;
    std::lock_guard<std::mutex> lock(mu_);
    auto hit = by_size_.find(size);
    if (hit != by_size_.end()) {
      Mapping *m = *hit->second;
      forget(hit);
      return lend(m);
    }
    peak_ = std::max(peak_, live_ + size);
    Mapping *m = nullptr;
    if (!free_.empty() && live_ + cached_ + size > peak_) {
      // Over the peak: the oldest cached mapping is resized to this request.
      // Its pages come along, so only what it lacks is faulted in anew.
      m = free_.front();
      detach(m);
      void *p = mremap(m->ptr, m->size, size, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) {
        munmap(m->ptr, m->size);
        delete m;
        m = nullptr;
      } else {
        *m = Mapping{p, size};
      }
    }
    while (!free_.empty() && live_ + cached_ + size > peak_) unmap_oldest();
    if (m == nullptr) m = map(size);
    return lend(m);
  }

  // give takes back what take returned; false for memory it did not lend.
  bool give(void *p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = in_use_.find(p);
    if (it == in_use_.end()) return false;
    Mapping *m = it->second;
    in_use_.erase(it);
    live_ -= m->size;
    cached_ += m->size;
    by_size_.emplace(m->size, free_.insert(free_.end(), m));
    return true;
  }

  void stats(int64_t *live, int64_t *mapped, int64_t *peak) {
    std::lock_guard<std::mutex> lock(mu_);
    *live = static_cast<int64_t>(live_);
    *mapped = static_cast<int64_t>(live_ + cached_);
    *peak = static_cast<int64_t>(peak_);
  }

 private:
  void *lend(Mapping *m) {
    live_ += m->size;
    in_use_.emplace(m->ptr, m);
    return m->ptr;
  }

  Mapping *map(size_t size) {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      while (!free_.empty()) unmap_oldest();
      p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, size, MADV_HUGEPAGE);  // fewer faults where the kernel allows it
    return new Mapping{p, size};
  }

  // forget takes a cached mapping out of the cache (the caller owns it).
  void forget(std::multimap<size_t, std::list<Mapping *>::iterator>::iterator it) {
    cached_ -= it->first;
    free_.erase(it->second);
    by_size_.erase(it);
  }

  // detach takes m out of the cache (the caller owns it).
  void detach(Mapping *m) {
    auto range = by_size_.equal_range(m->size);
    for (auto it = range.first; it != range.second; ++it) {
      if (*it->second == m) return forget(it);
    }
  }

  void unmap_oldest() {
    Mapping *m = free_.front();
    detach(m);
    munmap(m->ptr, m->size);
    delete m;
  }

  std::mutex mu_;
  std::list<Mapping *> free_;  // cached mappings, oldest first
  std::multimap<size_t, std::list<Mapping *>::iterator> by_size_;
  std::unordered_map<void *, Mapping *> in_use_;  // lent, by address
  size_t live_ = 0, cached_ = 0, peak_ = 0;
};

// Never destroyed: tensors may be freed while the process exits.
HostCache &cache() {
  static HostCache *c = new HostCache();
  return *c;
}

// release frees memory from either source: the deleter of every large
// tensor, and raw_deleter, through which libtorch frees some buffers by
// address alone (its bf16 matrix products do).
void release(void *p) {
  if (!cache().give(p)) c10::free_cpu(p);
}

class HostAllocator final : public at::Allocator {
 public:
  // libtorch 1.13 declares allocate const, 2.x does not: one of the two
  // overrides the pure virtual, whichever the headers declare.
  at::DataPtr allocate(size_t n) const { return make(n); }
  at::DataPtr allocate(size_t n) { return make(n); }
  // Pure virtual from libtorch 2.x on.
  void copy_data(void *dest, const void *src, size_t count) const { std::memcpy(dest, src, count); }
  // raw_allocate and raw_deallocate need the context to be the address.
  at::DeleterFnPtr raw_deleter() const override { return &release; }

 private:
  static at::DataPtr make(size_t n) {
    if (n < kLarge) {
      void *p = c10::alloc_cpu(n);
      return {p, p, &c10::free_cpu, at::Device(at::kCPU)};
    }
    void *p = cache().take(n);
    return {p, p, &release, at::Device(at::kCPU)};
  }
};

// AGENTRL_NO_HOST_CACHE=1 leaves libtorch's own allocator in place (all
// tensors in the C heap), as PYTORCH_NO_CUDA_MEMORY_CACHING does on a GPU.
__attribute__((constructor)) static void install_host_allocator() {
  const char *off = std::getenv("AGENTRL_NO_HOST_CACHE");
  if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return;
  static HostAllocator *allocator = new HostAllocator();  // outlives every tensor
  c10::SetCPUAllocator(allocator, /*priority=*/1);
}

}  // namespace

}  // namespace ar

extern "C" int ar_host_memory(int64_t *live, int64_t *mapped, int64_t *peak, char **err) {
  return ar::guard(err, [&] { ar::cache().stats(live, mapped, peak); });
}
