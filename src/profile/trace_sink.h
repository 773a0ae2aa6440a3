// A trace file being written: text gathered in a buffer and flushed to a temporary file
// (gzip-compressed when the path ends in ".gz"), renamed into place once whole, so a
// failed write never leaves a truncated trace where the path says.
#ifndef TIERSCOPE_PROFILE_TRACE_SINK_H_
#define TIERSCOPE_PROFILE_TRACE_SINK_H_

#include <cstdio>
#include <memory>
#include <string>

#include "tierscope/status.h"

typedef struct gzFile_s* gzFile;  // zlib's

namespace tierscope {

class TraceSink {
 public:
  static StatusOr<std::unique_ptr<TraceSink>> Open(const std::string& path);
  TraceSink(const TraceSink&) = delete;
  TraceSink& operator=(const TraceSink&) = delete;
  ~TraceSink();

  std::string& buf() { return buf_; }
  void MaybeFlush() {
    if (buf_.size() >= (1 << 20)) Flush();
  }
  void Flush();
  // Flushes, closes and renames the file into place; DataLoss when a write failed.
  Status Close(const std::string& path);

 private:
  TraceSink() = default;
  std::string buf_;
  std::string tmp_;
  gzFile gz_ = nullptr;
  FILE* file_ = nullptr;
  bool ok_ = true;
};

}  // namespace tierscope

#endif  // TIERSCOPE_PROFILE_TRACE_SINK_H_
