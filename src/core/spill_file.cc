// Blocks of a temporary file mapped shared (spill_file.h).
#include "core/spill_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tierscope {
namespace {

std::mutex g_dir_mu;
// The most bytes one write gives the page cache (SpillFile::Write).
constexpr size_t kWriteBytes = size_t{64} << 10;
std::string g_dir;

size_t PageBytes() {
  static const size_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t{4096};
  }();
  return page;
}

// A file in `dir` with no name: O_TMPFILE where the file system has it, else a named one
// removed at once.
int OpenUnnamed(const std::string& dir, int* err) {
#ifdef O_TMPFILE
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == EROFS) {
    *err = errno;
    return -1;
  }
#endif
  std::string name = dir + "/tierscope-spill-XXXXXX";
  int fd2 = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd2 < 0) {
    *err = errno;
    return -1;
  }
  ::unlink(name.c_str());
  return fd2;
}

}  // namespace

StatusOr<std::shared_ptr<SpillFile>> SpillFile::Create(const std::string& dir, size_t region_bytes,
                                                      int64_t max_bytes) {
  int err = 0;
  const int fd = OpenUnnamed(dir, &err);
  if (fd < 0) {
    return FailedPrecondition("cannot make a spill file in " + dir + ": " + std::strerror(err));
  }
  const size_t page = PageBytes();
  region_bytes = std::max(page, (region_bytes + page - 1) / page * page);
  return std::shared_ptr<SpillFile>(new SpillFile(fd, dir, region_bytes, max_bytes));
}

SpillFile::~SpillFile() {
  for (char* p : regions_) ::munmap(p, region_bytes_);
  ::close(fd_);
}

char* SpillFile::Block(size_t bytes) {
  const size_t page = PageBytes();
  bytes = (bytes + page - 1) / page * page;
  if (bytes == 0 || bytes > region_bytes_) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) return nullptr;
  const bool new_region = regions_.empty() || region_used_ + bytes > region_bytes_;
  const size_t index = new_region ? regions_.size() : regions_.size() - 1;
  const size_t at = new_region ? 0 : region_used_;
  const off_t offset = static_cast<off_t>(index) * static_cast<off_t>(region_bytes_) + static_cast<off_t>(at);
  if (max_bytes_ > 0 && static_cast<int64_t>(offset) + static_cast<int64_t>(bytes) > max_bytes_) {
    error_ = "the spill file in " + dir_ + " reached its limit of " + std::to_string(max_bytes_) + " bytes";
    return nullptr;
  }
  // Space on disk first: a store into a mapped page the file system cannot back would be
  // a SIGBUS later, not an error.
  if (const int err = ::posix_fallocate(fd_, offset, static_cast<off_t>(bytes)); err != 0) {
    error_ = "the spill file in " + dir_ + " could not grow: " + std::strerror(err);
    return nullptr;
  }
  if (new_region) {
    void* p = ::mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                     static_cast<off_t>(index) * static_cast<off_t>(region_bytes_));
    if (p == MAP_FAILED) {
      error_ = "the spill file in " + dir_ + " could not be mapped: " + std::strerror(errno);
      return nullptr;
    }
    regions_.push_back(static_cast<char*>(p));
    region_used_ = 0;
  }
  char* block = regions_.back() + region_used_;
  region_used_ += bytes;
  file_bytes_ = static_cast<int64_t>(offset) + static_cast<int64_t>(bytes);
  return block;
}

bool SpillFile::Write(char* at, const char* data, size_t bytes) {
  off_t offset = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.empty()) return false;
    for (size_t i = 0; i < regions_.size(); ++i) {
      const auto p = reinterpret_cast<uintptr_t>(at), region = reinterpret_cast<uintptr_t>(regions_[i]);
      if (p >= region && p + bytes <= region + region_bytes_) {
        offset = static_cast<off_t>(i) * static_cast<off_t>(region_bytes_) + static_cast<off_t>(p - region);
        break;
      }
    }
    if (offset < 0 || offset + static_cast<off_t>(bytes) > file_bytes_) {
      error_ = "a write outside the spill file's blocks";
      return false;
    }
  }
  while (bytes > 0) {
    // 64 KiB at a time: the page cache holds a write's bytes in folios as large as it, and
    // a read through the mapping maps a whole folio: with 1 MiB writes, the reports that
    // read a few strings each made a megabyte resident (a 1 GB rank's job peaked 110 MB
    // higher); 64 KiB costs no more time than that, 4 KiB twice the system time.
    const ssize_t n = ::pwrite(fd_, data, std::min(bytes, kWriteBytes), offset);
    const int err = n < 0 ? errno : EIO;  // before anything else can change errno
    if (n < 0 && err == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(err);
      std::lock_guard<std::mutex> lock(mu_);
      error_ = "the spill file in " + dir_ + " could not be written: " + why;
      return false;
    }
    data += n;
    offset += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

void SpillFile::Release(const char* p, size_t bytes) {
  if (bytes == 0) return;
  const uintptr_t page = PageBytes();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) & ~(page - 1);
  // Shared file pages: dropping them from this process keeps their (dirty) contents in the
  // page cache and the file.
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void SpillFile::ReleaseAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < regions_.size(); ++i) {
    Release(regions_[i], i + 1 == regions_.size() ? region_used_ : region_bytes_);
  }
}

int64_t SpillFile::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_bytes_;
}

std::string SpillFile::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

std::string SpillFile::WhyNotSpillIn(const std::string& dir) {
  struct statfs fs;
  if (::statfs(dir.c_str(), &fs) != 0) return std::string("cannot be read: ") + std::strerror(errno);
  std::string where;
  switch (static_cast<uint64_t>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:  // ext2, ext3 and ext4 share it
    case XFS_SUPER_MAGIC:
      return "";
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
      return "is in memory (tmpfs)";
    case BTRFS_SUPER_MAGIC:
      where = "btrfs";
      break;
    case NFS_SUPER_MAGIC:
      where = "NFS";
      break;
    case OVERLAYFS_SUPER_MAGIC:
      where = "an overlay";
      break;
    default: {
      char type[48];
      std::snprintf(type, sizeof(type), "a file system (type 0x%llx)", static_cast<unsigned long long>(fs.f_type));
      where = type;
    }
  }
  return "is on " + where + ", where a full disk could end the process (ext4 and xfs reserve a spill's space)";
}

void SetSpillDirectory(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_dir_mu);
  g_dir = dir;
}

std::string SpillDirectory() {
  {
    std::lock_guard<std::mutex> lock(g_dir_mu);
    if (!g_dir.empty()) return g_dir;
  }
  for (const char* var : {"TIERSCOPE_SPILL_DIR", "TMPDIR"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return v;
  }
  return "/tmp";
}

}  // namespace tierscope
