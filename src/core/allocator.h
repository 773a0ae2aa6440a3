// Hints to the C library's allocator (glibc): large blocks straight from the system, and
// freed pages handed back. No-ops under sanitizers, whose allocator replaces glibc's (its
// malloc_trim would walk an arena that was never set up) and elsewhere.
#ifndef TIERSCOPE_CORE_ALLOCATOR_H_
#define TIERSCOPE_CORE_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tierscope {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
inline constexpr bool kSanitizedAllocator = true;
#else
inline constexpr bool kSanitizedAllocator = false;
#endif
#else
inline constexpr bool kSanitizedAllocator = false;
#endif

// Blocks of at least `bytes` are mapped from the system and unmapped when freed, so one
// rank's buffers do not stay in an arena after it is gone.
inline void MapBlocksFrom(size_t bytes) {
#if defined(__GLIBC__)
  if constexpr (!kSanitizedAllocator) mallopt(M_MMAP_THRESHOLD, static_cast<int>(bytes));
#else
  (void)bytes;
#endif
}

// Pages freed at the top of the heap and inside arenas go back to the system now.
inline void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  if constexpr (!kSanitizedAllocator) malloc_trim(0);
#endif
}

// Freed memory below `bytes` at the top of the heap is kept for reuse (a server's steady
// state), and blocks from `mmap_bytes` are mapped.
inline void KeepFreedMemoryUpTo(size_t bytes, size_t mmap_bytes) {
#if defined(__GLIBC__)
  if constexpr (!kSanitizedAllocator) {
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(bytes));
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(mmap_bytes));
  }
#else
  (void)bytes;
  (void)mmap_bytes;
#endif
}

// Asks for transparent huge pages over the 2 MiB-aligned part of [p, p + bytes): a store
// that grows to gigabytes (a trace's events and strings) then takes one page fault per
// 2 MiB instead of one per 4 KiB. Only untouched memory benefits; a no-op where the
// system has no THP or keeps it off, and below 2 MiB.
inline void AdviseHugePages(void* p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

// `n` copies of `value` in huge pages where the system has them (AdviseHugePages): for
// big tables read at random (hash tables over a trace's events), whose first touch and
// TLB misses then cost a fraction.
template <typename T>
std::vector<T> HugePageVector(size_t n, const T& value = T{}) {
  std::vector<T> v;
  v.reserve(n);
  AdviseHugePages(v.data(), n * sizeof(T));
  v.resize(n, value);
  return v;
}

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_ALLOCATOR_H_
