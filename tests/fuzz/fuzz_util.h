// Helpers shared by the libFuzzer targets: the input as a file the loaders can open by
// path (an anonymous memory file, no disk), and the rule every target enforces — any
// input ends in a value or a Status, never a crash, a hang or a read out of bounds.
#ifndef TIERSCOPE_TESTS_FUZZ_FUZZ_UTIL_H_
#define TIERSCOPE_TESTS_FUZZ_FUZZ_UTIL_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace tierscope::fuzz {

// An in-memory file (memfd) holding the fuzzer's bytes, opened through /proc/self/fd.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = memfd_create("tierscope-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace tierscope::fuzz

#endif  // TIERSCOPE_TESTS_FUZZ_FUZZ_UTIL_H_
