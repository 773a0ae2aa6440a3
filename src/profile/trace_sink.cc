// Buffered, optionally gzip-compressed trace output through a temporary file.
#include "profile/trace_sink.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tierscope {

StatusOr<std::unique_ptr<TraceSink>> TraceSink::Open(const std::string& path) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::unique_ptr<TraceSink> s(new TraceSink());
  s->tmp_ = path + ".tmp." + std::to_string(getpid());  // two writers of one path never share it
  if (gz) {
    s->gz_ = gzopen(s->tmp_.c_str(), "wb6");
    if (s->gz_ == nullptr) return FailedPrecondition(path + ": cannot create: " + std::strerror(errno));
  } else {
    s->file_ = std::fopen(s->tmp_.c_str(), "wb");
    if (s->file_ == nullptr) return FailedPrecondition(path + ": cannot create: " + std::strerror(errno));
  }
  return s;
}

void TraceSink::Flush() {
  if (buf_.empty()) return;
  if (gz_ != nullptr) {
    if (gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size())) != static_cast<int>(buf_.size())) ok_ = false;
  } else if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    ok_ = false;
  }
  buf_.clear();
}

Status TraceSink::Close(const std::string& path) {
  Flush();
  if (gz_ != nullptr && gzclose(gz_) != Z_OK) ok_ = false;
  if (file_ != nullptr && std::fclose(file_) != 0) ok_ = false;
  gz_ = nullptr;
  file_ = nullptr;
  if (!ok_) {
    std::remove(tmp_.c_str());
    return DataLoss(path + ": write failed");
  }
  if (std::rename(tmp_.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp_.c_str());
    return FailedPrecondition(path + ": cannot put the finished trace in place: " + why);
  }
  return OkStatus();
}

TraceSink::~TraceSink() {
  const bool open = gz_ != nullptr || file_ != nullptr;
  if (gz_ != nullptr) gzclose(gz_);
  if (file_ != nullptr) std::fclose(file_);
  if (open) std::remove(tmp_.c_str());  // never finished: no temporary left behind
}

}  // namespace tierscope
