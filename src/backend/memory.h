// The bookkeeping every backend's allocator shares: live and peak bytes, and a cache of
// freed blocks handed out again.
#ifndef TIERSCOPE_BACKEND_MEMORY_H_
#define TIERSCOPE_BACKEND_MEMORY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"

namespace tierscope {

// Live/peak bytes and allocation counts, the bookkeeping every backend's allocator
// shares (thread-safe).
class MemoryAccounting {
 public:
  // Both return the live bytes after the event.
  int64_t OnAllocate(size_t bytes) {
    const int64_t live = live_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
    int64_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
    allocations_.fetch_add(1);
    return live;
  }
  int64_t OnFree(size_t bytes) {
    frees_.fetch_add(1);
    return live_.fetch_sub(static_cast<int64_t>(bytes)) - static_cast<int64_t>(bytes);
  }
  MemoryStats stats() const {
    return MemoryStats{live_.load(), peak_.load(), allocations_.load(), frees_.load()};
  }
  void ResetPeak() { peak_.store(live_.load()); }

 private:
  std::atomic<int64_t> live_{0}, peak_{0}, allocations_{0}, frees_{0};
};

// `bytes` rounded up to a multiple of `align` (a power of two), at least one.
inline size_t AlignUp(size_t bytes, size_t align) {
  const size_t r = (bytes + align - 1) / align * align;
  return r == 0 ? align : r;
}

// The size class a block of `bytes` is allocated and cached under: `bytes` rounded up to
// `align`, and from 64 KiB on first up to the next of four steps a doubling (1, 1.25, 1.5 or
// 1.75 x 2^k). Buffers whose sizes change from call to call (a server's batches of varying
// tokens) then find cached blocks of their class, where exact sizes would each take fresh
// memory (and its page faults): at most a quarter more bytes a block, plus what `align`
// itself adds (a huge page's 2 MiB can add more).
inline size_t SizeClass(size_t bytes, size_t align) {
  if (bytes >= (size_t{64} << 10) && bytes <= SIZE_MAX / 4) {
    const int k = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes));  // 2^k <= bytes
    const size_t step = size_t{1} << (k - 2);
    bytes = (bytes + step - 1) / step * step;
  }
  return AlignUp(bytes, align);
}

// Freed blocks kept by (rounded) size and handed out again, as a caching allocator does,
// at most max_bytes in all (thread-safe). Shared by the CPU and CUDA backends.
class BlockCache {
 public:
  explicit BlockCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  // A cached block of exactly `bytes`, or null.
  void* Take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(bytes);
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= bytes;
    return p;
  }
  // Keeps `p`; false when that would pass max_bytes (the caller frees it then).
  bool Put(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + bytes > max_bytes_) return false;
    blocks_[bytes].push_back(p);
    cached_bytes_ += bytes;
    return true;
  }
  // Bytes held for reuse.
  size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_bytes_;
  }
  // Frees every cached block with `free_block`.
  template <typename F>
  void ReleaseAll(F&& free_block) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : blocks_) {
      for (void* p : blocks) free_block(p);
    }
    blocks_.clear();
    cached_bytes_ = 0;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> blocks_;
  size_t cached_bytes_ = 0;
  const size_t max_bytes_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_MEMORY_H_
