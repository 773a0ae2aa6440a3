// A flat hash map from int64 keys (correlation ids, external ids) to small values: open
// addressing with linear probing in one array, no allocation per entry. The analyses build
// several such maps over millions of events; std::unordered_map's node per entry made them
// the largest cost of a big trace's analysis after parsing. Any int64 is a valid key.
#ifndef TIERSCOPE_CORE_INT_MAP_H_
#define TIERSCOPE_CORE_INT_MAP_H_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/allocator.h"

namespace tierscope {

template <typename V>
class IntMap {
 public:
  struct Slot {
    int64_t first = kEmpty;
    [[no_unique_address]] V second{};  // an empty V (IntSet) takes no room: 8-byte slots
  };
  using const_iterator = const Slot*;

  IntMap() = default;
  explicit IntMap(size_t expected) { reserve(expected); }

  // Room for `n` entries without rehashing (load at most 1/2).
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (cap > slots_.size()) Rehash(cap);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Inserts (key, value) when `key` is absent; the entry and whether it was inserted.
  std::pair<Slot*, bool> emplace(int64_t key, V value) {
    if (key == kEmpty) {
      const bool inserted = !has_empty_key_;
      if (inserted) {
        has_empty_key_ = true;
        empty_key_slot_ = Slot{key, std::move(value)};
        ++size_;
      }
      return {&empty_key_slot_, inserted};
    }
    if (2 * (size_ + 1) > slots_.size()) Rehash(slots_.empty() ? 16 : 2 * slots_.size());
    Slot* s = Probe(key);
    if (s->first == key) return {s, false};
    s->first = key;
    s->second = std::move(value);
    ++size_;
    return {s, true};
  }
  V& operator[](int64_t key) { return emplace(key, V{}).first->second; }

  // The entry for `key`, or end() (nullptr) when there is none.
  const Slot* find(int64_t key) const {
    if (key == kEmpty) return has_empty_key_ ? &empty_key_slot_ : nullptr;
    if (slots_.empty()) return nullptr;
    const Slot* s = Probe(key);
    return s->first == key ? s : nullptr;
  }
  Slot* find(int64_t key) { return const_cast<Slot*>(std::as_const(*this).find(key)); }
  const Slot* end() const { return nullptr; }
  size_t count(int64_t key) const { return find(key) != nullptr ? 1 : 0; }
  const V& at(int64_t key) const {
    const Slot* s = find(key);
    if (s == nullptr) throw std::out_of_range("IntMap::at: no such key");
    return s->second;
  }

  // Asks the cache for `key`'s slot (a lookup or insert soon after is then not a miss):
  // loops over events look keys up at random in tables far larger than the caches.
  void Prefetch(int64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Index(key)], 1);
  }

  // Calls f(key, value) for every entry, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    if (has_empty_key_) f(empty_key_slot_.first, empty_key_slot_.second);
    for (const Slot& s : slots_) {
      if (s.first != kEmpty) f(s.first, s.second);
    }
  }

 private:
  static constexpr int64_t kEmpty = INT64_MIN;

  size_t Index(int64_t key) const {
    // Fibonacci hashing: consecutive ids (the common case) spread over the table.
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  Slot* Probe(int64_t key) const {
    const size_t mask = slots_.size() - 1;
    size_t i = Index(key);
    while (true) {
      const Slot* s = &slots_[i];
      if (s->first == key || s->first == kEmpty) return const_cast<Slot*>(s);
      i = (i + 1) & mask;
    }
  }
  void Rehash(size_t cap) {
    // A big table in huge pages: its first touch and its random lookups (one TLB entry per
    // 2 MiB, not 4 KiB) cost less.
    std::vector<Slot> old = HugePageVector<Slot>(cap);
    old.swap(slots_);
    shift_ = 64;
    for (size_t c = cap; c > 1; c >>= 1) --shift_;
    for (Slot& s : old) {
      if (s.first == kEmpty) continue;
      Slot* d = Probe(s.first);
      *d = std::move(s);
    }
  }

  std::vector<Slot> slots_;  // power-of-two size, or empty
  int shift_ = 64;
  size_t size_ = 0;
  bool has_empty_key_ = false;  // INT64_MIN itself, kept apart from the table
  Slot empty_key_slot_;
};

// A set of int64 keys, as IntMap.
class IntSet {
 public:
  IntSet() = default;
  explicit IntSet(size_t expected) : map_(expected) {}
  void reserve(size_t n) { map_.reserve(n); }
  bool insert(int64_t key) { return map_.emplace(key, Unit{}).second; }
  size_t count(int64_t key) const { return map_.count(key); }
  bool contains(int64_t key) const { return map_.find(key) != nullptr; }
  void Prefetch(int64_t key) const { map_.Prefetch(key); }
  size_t size() const { return map_.size(); }

 private:
  struct Unit {};
  static_assert(sizeof(IntMap<Unit>::Slot) == sizeof(int64_t), "an IntSet slot is its key alone");
  IntMap<Unit> map_;
};

// for i in [0, n): ahead(i + d) (prefetches, for a lookup d steps on), then f(i). The
// distance covers a miss to memory at a few ns of work a step.
template <typename Ahead, typename F>
void ForEachPrefetched(size_t n, Ahead&& ahead, F&& f) {
  constexpr size_t kDistance = 16;
  for (size_t i = 0; i < n; ++i) {
    if (i + kDistance < n) ahead(i + kDistance);
    f(i);
  }
}

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_INT_MAP_H_
