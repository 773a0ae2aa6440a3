// Memory that lives in a file: blocks carved from a temporary file (no name, gone when
// the last user is) and mapped shared, so their pages are the kernel's page cache, not
// this process's memory, once Release-d: written back to disk under pressure and paged
// in again on the next read. A big trace's strings go here when its import would pass
// the memory budget (kineto_stream.h).
#ifndef TIERSCOPE_CORE_SPILL_FILE_H_
#define TIERSCOPE_CORE_SPILL_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

class SpillFile {
 public:
  // Blocks are carved from mappings of `region_bytes` (the file's address space grows by
  // one at a time; earlier blocks never move).
  static constexpr size_t kRegionBytes = size_t{1} << 30;

  // A spill file in `dir`; FailedPrecondition naming the directory and the reason when
  // none can be made there (missing, read-only, not a directory).
  static StatusOr<std::shared_ptr<SpillFile>> Create(const std::string& dir, size_t region_bytes = kRegionBytes);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // A new writable block of `bytes` (at most the region's), its disk space allocated
  // (a write to it can never fail for want of space), valid for the file's life; nullptr
  // when the file cannot grow (the disk is full): the caller keeps its data in memory.
  // Thread-safe.
  char* Block(size_t bytes);
  // The pages of [p, p + bytes) leave this process's resident memory; their contents stay
  // in the file (the next read pages them in).
  static void Release(const char* p, size_t bytes);
  // Every block's pages leave resident memory (after reports have read some back).
  void ReleaseAll();

  int64_t bytes() const;     // the file's size: what was spilled
  // Whether files in `dir` live in memory (tmpfs, ramfs): spilling there saves nothing.
  static bool InMemory(const std::string& dir);
  const std::string& dir() const { return dir_; }

 private:
  SpillFile(int fd, std::string dir, size_t region_bytes)
      : fd_(fd), dir_(std::move(dir)), region_bytes_(region_bytes) {}

  const int fd_;
  const std::string dir_;
  const size_t region_bytes_;
  mutable std::mutex mu_;
  std::vector<std::pair<char*, size_t>> regions_;  // mapped, in file order
  size_t region_used_ = 0;                         // bytes carved from the last region
  int64_t file_bytes_ = 0;
};

// Where spill files go: --spill-dir (SetSpillDirectory), else TIERSCOPE_SPILL_DIR, else
// TMPDIR, else /tmp.
void SetSpillDirectory(const std::string& dir);
std::string SpillDirectory();

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_SPILL_FILE_H_
