// StringTable and event-kind names.
#include "trace/trace.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/allocator.h"
#include "core/spill_file.h"

namespace tierscope {

const char* EventKindName(EventKind k) {
  switch (k) {
    case EventKind::kOp: return "cpu_op";
    case EventKind::kAnnotation: return "user_annotation";
    case EventKind::kRuntime: return "cuda_runtime";
    case EventKind::kKernel: return "kernel";
    case EventKind::kTask: return "kernel_task";
    case EventKind::kMemcpy: return "gpu_memcpy";
    case EventKind::kMemset: return "gpu_memset";
    case EventKind::kSync: return "cuda_sync";
    case EventKind::kMemory: return "cpu_instant_event";
    case EventKind::kGpuAnnotation: return "gpu_user_annotation";
    case EventKind::kOther: return "other";
  }
  return "unknown";
}

namespace {

// A fast 64-bit string hash (8 bytes at a time, multiply-xorshift mixing); the index
// uses the low bits for the slot and the high 32 as a tag.
uint64_t HashBytes(std::string_view s) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t h = 0x243f6a8885a308d3ULL ^ (s.size() * kMul);
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * kMul;
  }
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  h ^= h >> 32;
  return h;
}

constexpr size_t kBlockBytes = size_t{1} << 20;
constexpr size_t kBigBlockBytes = size_t{8} << 20;
// Spilled blocks are small: each reader of a streamed trace leaves its last one part-used.
constexpr size_t kSpillBlockBytes = kBlockBytes;

}  // namespace

StringTable& StringTable::operator=(StringTable&& other) noexcept {
  if (this == &other) return *this;
  blocks_ = std::move(other.blocks_);
  views_ = std::move(other.views_);
  slots_ = std::move(other.slots_);
  free_ = std::exchange(other.free_, nullptr);  // the other may not write into our block
  free_size_ = std::exchange(other.free_size_, 0);
  indexed_ = std::exchange(other.indexed_, 0);
  spill_to_ = std::move(other.spill_to_);
  spill_block_ = std::exchange(other.spill_block_, nullptr);
  for (int i = 0; i < 2; ++i) spill_stages_[i] = std::move(other.spill_stages_[i]);
  stage_ = std::exchange(other.stage_, 0);
  spill_free_ = std::exchange(other.spill_free_, nullptr);
  spill_free_size_ = std::exchange(other.spill_free_size_, 0);
  spill_first_id_ = std::exchange(other.spill_first_id_, 0);
  spills_ = std::move(other.spills_);
  other.spills_.clear();
  other.blocks_.clear();
  other.views_.clear();
  other.slots_.clear();
  return *this;
}

StringTable& StringTable::operator=(const StringTable& other) {
  if (this == &other) return *this;
  *this = StringTable();
  for (std::string_view v : other.views_) Append(v);
  slots_ = other.slots_;  // same ids, same hashes
  indexed_ = other.indexed_;
  return *this;
}

std::string_view StringTable::Store(std::string_view s, bool spill) {
  if (s.empty()) return std::string_view();
  if (spill && spill_to_ != nullptr && s.size() < kSpillBlockBytes / 4) {
    if (s.size() <= spill_free_size_) return StoreIn(&spill_free_, &spill_free_size_, s);
    FlushSpill();  // the full stage to its block
    if (spill_to_ != nullptr) {
      if (char* block = spill_to_->Block(kSpillBlockBytes)) {
        stage_ ^= 1;
        if (spill_stages_[stage_] == nullptr) spill_stages_[stage_] = std::make_unique_for_overwrite<char[]>(kSpillBlockBytes);
        spill_block_ = block;
        spill_free_ = spill_stages_[stage_].get();
        spill_free_size_ = kSpillBlockBytes;
        spill_first_id_ = views_.size();
        return StoreIn(&spill_free_, &spill_free_size_, s);
      }
      spill_to_ = nullptr;  // the file cannot grow (its error() says why): memory from now on
    }
  }
  if (s.size() > free_size_) {
    if (s.size() >= kBlockBytes / 4) {  // a big string gets a block of its own
      blocks_.push_back(std::make_unique_for_overwrite<char[]>(s.size()));
      std::memcpy(blocks_.back().get(), s.data(), s.size());
      return std::string_view(blocks_.back().get(), s.size());
    }
    // Small tables start small (but big enough for this string); later blocks are 1 MiB,
    // and from the 8th on 8 MiB in huge pages (a big trace's args take gigabytes).
    const size_t bytes = blocks_.empty() ? std::max<size_t>(4096, s.size())
                         : blocks_.size() < 8 ? kBlockBytes
                                              : kBigBlockBytes;
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
    if (bytes == kBigBlockBytes) AdviseHugePages(blocks_.back().get(), bytes);
    free_ = blocks_.back().get();
    free_size_ = bytes;
  }
  return StoreIn(&free_, &free_size_, s);
}

void StringTable::FlushSpill() {
  if (spill_block_ == nullptr) return;
  char* const stage = spill_stages_[stage_].get();
  const size_t used = static_cast<size_t>(spill_free_ - stage);
  if (used > 0 && spill_to_ != nullptr && spill_to_->Write(spill_block_, stage, used)) {
    for (size_t id = spill_first_id_; id < views_.size(); ++id) {
      const std::string_view v = views_[id];
      const auto at = reinterpret_cast<uintptr_t>(v.data()), from = reinterpret_cast<uintptr_t>(stage);
      if (at >= from && at < from + used) {
        views_[id] = std::string_view(spill_block_ + (v.data() - stage), v.size());
      }
    }
  } else if (used > 0) {  // the file failed (its error() says why): these strings stay where they are
    blocks_.push_back(std::move(spill_stages_[stage_]));
    spill_to_ = nullptr;
  }
  spill_block_ = nullptr;
  spill_free_ = nullptr;
  spill_free_size_ = 0;
}

std::string_view StringTable::StoreIn(char** free, size_t* free_size, std::string_view s) {
  std::memcpy(*free, s.data(), s.size());
  const std::string_view out(*free, s.size());
  *free += s.size();
  *free_size -= s.size();
  return out;
}

void StringTable::Rehash(size_t capacity) {
  std::vector<uint64_t> slots(capacity, 0);
  const size_t mask = capacity - 1;
  for (uint64_t slot : slots_) {
    if (slot == 0) continue;
    const uint32_t id = static_cast<uint32_t>(slot) - 1;
    size_t i = HashBytes(views_[id]) & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = slot;
  }
  slots_.swap(slots);
}

int32_t StringTable::Intern(std::string_view s) {
  if ((indexed_ + 1) * 4 > slots_.size() * 3) Rehash(slots_.empty() ? 64 : slots_.size() * 2);
  const uint64_t h = HashBytes(s);
  const uint64_t tag = h & 0xffffffff00000000ULL;
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  for (; slots_[i] != 0; i = (i + 1) & mask) {
    const uint64_t slot = slots_[i];
    if ((slot & 0xffffffff00000000ULL) != tag) continue;
    const std::string_view v = views_[static_cast<uint32_t>(slot) - 1];
    if (v == s) {
      return static_cast<int32_t>(static_cast<uint32_t>(slot) - 1);
    }
  }
  const int32_t id = Add(s, /*spill=*/false);
  slots_[i] = tag | (static_cast<uint64_t>(id) + 1);
  ++indexed_;
  return id;
}

namespace {

// `file` among `files`, once.
void AddOnce(std::vector<std::shared_ptr<SpillFile>>* files, const std::shared_ptr<SpillFile>& file) {
  if (file != nullptr && std::find(files->begin(), files->end(), file) == files->end()) files->push_back(file);
}

}  // namespace

void StringTable::SpillTo(std::shared_ptr<SpillFile> file) {
  AddOnce(&spills_, file);
  spill_to_ = std::move(file);
}

void StringTable::FinishSpilling() {
  FlushSpill();
  for (auto& stage : spill_stages_) {
    // A stage that failed to reach the file is a block of blocks_ now, not a stage.
    stage.reset();
  }
}

void StringTable::ReleaseSpilled() const {
  for (const std::shared_ptr<SpillFile>& f : spills_) f->ReleaseAll();
}

int64_t StringTable::spilled_bytes() const {
  int64_t bytes = 0;
  for (const std::shared_ptr<SpillFile>& f : spills_) bytes += f->bytes();
  return bytes;
}

int32_t StringTable::Adopt(StringTable&& other) {
  other.FlushSpill();  // its strings read from the file, not from a stage it takes along
  const int32_t offset = static_cast<int32_t>(views_.size());
  views_.insert(views_.end(), other.views_.begin(), other.views_.end());
  for (auto& block : other.blocks_) blocks_.push_back(std::move(block));
  for (const auto& f : other.spills_) AddOnce(&spills_, f);
  other = StringTable();
  return offset;
}

int32_t StringTable::Append(std::string_view s) { return Add(s, /*spill=*/true); }

int32_t StringTable::Add(std::string_view s, bool spill) {
  views_.push_back(Store(s, spill));
  return static_cast<int32_t>(views_.size() - 1);
}

}  // namespace tierscope
