// Memory that lives in a file: blocks carved from a temporary file (no name, gone when
// the last user is) and mapped shared, so once Release-d their pages are the kernel's
// page cache, not this process's memory: written back to disk under pressure and paged
// in again on the next read. A streamed trace's args go here (kineto_stream.h).
// Linux only (mmap, fallocate, O_TMPFILE), as the rest of tierscope.
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

  // A spill file in `dir`, holding at most `max_bytes` (<= 0: what the disk holds);
  // FailedPrecondition naming the directory and the reason when none can be made there
  // (missing, read-only, not a directory).
  static StatusOr<std::shared_ptr<SpillFile>> Create(const std::string& dir, size_t region_bytes = kRegionBytes,
                                                     int64_t max_bytes = 0);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;

  // A new writable block of `bytes` (at most a region), its disk space allocated first
  // (on ext4 and xfs a store into it then needs no more; see WhyNotSpillIn), valid for the
  // file's life; nullptr once the file cannot grow (the disk or max_bytes is full: error()
  // says why, and no later block is tried): the caller keeps its data in memory.
  // Thread-safe.
  char* Block(size_t bytes);
  // Writes `bytes` of `data` into the file at block address `at` (within a block this file
  // gave), through the file, not the mapping: no page of it is faulted in, zeroed first or
  // made resident here, and the mapping reads the bytes back. False once a write fails
  // (error() says why; no later block is given). Thread-safe.
  bool Write(char* at, const char* data, size_t bytes);
  // The pages of [p, p + bytes) leave this process's resident memory; their contents stay
  // in the file (the next read pages them in).
  static void Release(const char* p, size_t bytes);
  // Every block's pages leave resident memory (after reports have read some back).
  void ReleaseAll();

  int64_t bytes() const;      // the file's size: what was spilled
  std::string error() const;  // why the file stopped growing ("" while it grows)
  const std::string& dir() const { return dir_; }

  // "" when spilling to `dir` both saves memory and cannot end the process: its file
  // system is on a disk and reserves a block's space when asked (ext4, xfs); else why not
  // ("is in memory (tmpfs)", or names the file system: on btrfs, zfs, NFS or an overlay a
  // write can still fail when it is written back, after Write said yes, and reading that
  // page through the mapping, or a store into it, is then a SIGBUS).
  static std::string WhyNotSpillIn(const std::string& dir);

 private:
  SpillFile(int fd, std::string dir, size_t region_bytes, int64_t max_bytes)
      : fd_(fd), dir_(std::move(dir)), region_bytes_(region_bytes), max_bytes_(max_bytes) {}

  const int fd_;
  const std::string dir_;
  const size_t region_bytes_;
  const int64_t max_bytes_;
  mutable std::mutex mu_;
  std::vector<char*> regions_;  // mapped, region_bytes_ each, in file order
  size_t region_used_ = 0;                         // bytes carved from the last region
  int64_t file_bytes_ = 0;
  std::string error_;
};

// Where spill files go: --spill-dir (SetSpillDirectory; "" for the default), else
// TIERSCOPE_SPILL_DIR, else TMPDIR, else /tmp.
void SetSpillDirectory(const std::string& dir);
std::string SpillDirectory();

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_SPILL_FILE_H_
