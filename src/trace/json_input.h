// Reads a JSON file, gunzipping it when it starts with gzip's magic bytes, into one
// buffer followed by simdjson's zero padding, so it can be parsed in place.
#ifndef TIERSCOPE_TRACE_JSON_INPUT_H_
#define TIERSCOPE_TRACE_JSON_INPUT_H_

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "tierscope/status.h"

struct z_stream_s;  // zlib's

namespace tierscope {

constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;
constexpr size_t kMaxJsonBytes = simdjson::SIMDJSON_MAXSIZE_BYTES;  // 4 GiB

// Input: `size` bytes of JSON followed by at least kPadding zero bytes, in heap memory or
// in a private (copy-on-write) mapping of the file itself.
class PaddedBuffer {
 public:
  PaddedBuffer() = default;
  PaddedBuffer(PaddedBuffer&& o) noexcept { *this = std::move(o); }
  PaddedBuffer& operator=(PaddedBuffer&& o) noexcept;
  ~PaddedBuffer() { Reset(); }

  char* data() { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  size_t room() const { return capacity_ - kPadding - size_; }
  // Room for `n` bytes of content plus padding, keeping the content; false if no memory
  // or if the buffer maps a file. With `populate` (the size is known to be needed), a
  // large buffer's pages are allocated up front, in one system call rather than one
  // fault per page.
  bool Reserve(size_t n, bool populate = false);
  void Grow(size_t n) { size_ += n; }
  void Truncate(size_t n) { size_ = std::min(size_, n); }  // keeps the allocation
  void Finish() { std::memset(data_ + size_, 0, kPadding); }
  // Maps `size` bytes of the open file `fd` privately, followed by zero pages for the
  // padding; false if the system refuses (the caller then reads the file instead).
  bool Map(int fd, size_t size);
  // Gives back the pages of a mapped file wholly before byte `offset` (they are read
  // again from the file if touched): a file read once front to back then holds only the
  // pages still in use. Nothing for heap memory.
  void DropPagesBefore(size_t offset);

 private:
  void Reset();
  char* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
  size_t mapped_ = 0;  // bytes mapped at data_, or 0 for heap memory
  size_t dropped_ = 0;  // pages given back: the first dropped_ bytes
  bool anonymous_ = false;  // the mapping is memory, not a file
};

// The whole file (gunzipped when it is gzip) in a padded buffer. NotFound for a missing
// file; DataLoss for a truncated or corrupt gzip stream; ResourceExhausted past 4 GiB: a
// plain file from its size, before anything is read or allocated; gzip as soon as the
// output passes the limit. Gzip is decompressed once, into a buffer sized by its trailer
// (mod 2^32, so only a hint) and grown while zlib streams when that was short. Bytes after
// the last gzip member that are neither another member nor zero padding are ignored, as
// gzip ignores them, and said in `*ignored` (set for gzip: "" when nothing was ignored).
StatusOr<PaddedBuffer> ReadJsonInput(const std::string& path, std::string* ignored = nullptr);

// Whether `status` is ReadJsonInput's refusal of JSON past 4 GiB (the streaming importer
// reads such files).
bool IsOverJsonLimit(const Status& status);

// The bytes `path` holds once read: its size, or for gzip what its trailer claims (when
// plausible; else 8x the compressed size). -1 when it cannot be read. What a caller budgets
// memory by before importing it.
int64_t EstimatedInputBytes(const std::string& path);

// The simdjson kernel the trace readers' On-Demand parsing was compiled with ("haswell"
// for AVX2, "fallback" for scalar code): fixed at build time, unlike the DOM parser's,
// which simdjson chooses at run time. `tierscope device` shows it.
const char* OnDemandKernel();

// A JSON file read front to back in pieces, gunzipped on the fly (gzip detected by its
// magic bytes; concatenated members read in turn): what a trace of any size is streamed
// through. Errors as ReadJsonInput's, without its size limit.
class JsonStream {
 public:
  static StatusOr<std::unique_ptr<JsonStream>> Open(const std::string& path);
  ~JsonStream();
  // Up to `n` bytes into `out`; 0 only at the end of the input.
  StatusOr<size_t> Read(char* out, size_t n);
  bool gzip() const { return zs_ != nullptr; }
  // At the end of a gzip input: the note of bytes after its last member that were ignored
  // (ReadJsonInput's), or "".
  const std::string& ignored() const { return ignored_; }
  int fd() const { return file_ != nullptr ? fileno(file_) : -1; }  // the open file's

 private:
  JsonStream() = default;
  std::string path_;
  std::FILE* file_ = nullptr;
  ::z_stream_s* zs_ = nullptr;
  std::unique_ptr<unsigned char[]> in_;
  std::string ignored_;
  bool eof_ = false, ended_ = false;
  size_t compressed_ = 0, produced_ = 0;
  int64_t advised_ = 0;  // the file offset up to which read-ahead was asked for, halfway
};

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_JSON_INPUT_H_
