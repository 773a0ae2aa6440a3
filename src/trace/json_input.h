// Reads a JSON file, gunzipping it when it starts with gzip's magic bytes, into one
// buffer followed by simdjson's zero padding, so it can be parsed in place.
#ifndef TIERSCOPE_TRACE_JSON_INPUT_H_
#define TIERSCOPE_TRACE_JSON_INPUT_H_

#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "tierscope/status.h"

namespace tierscope {

constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;
constexpr size_t kMaxJsonBytes = simdjson::SIMDJSON_MAXSIZE_BYTES;  // 4 GiB

// Input: `size` bytes of JSON followed by at least kPadding zero bytes.
class PaddedBuffer {
 public:
  char* data() { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  size_t room() const { return capacity_ - kPadding - size_; }
  // Room for `n` bytes of content plus padding, keeping the content; false if no memory.
  bool Reserve(size_t n) {
    if (n + kPadding <= capacity_) return true;
    char* p = static_cast<char*>(std::realloc(data_.get(), n + kPadding));
    if (p == nullptr) return false;
    (void)data_.release();
    data_.reset(p);
    capacity_ = n + kPadding;
    return true;
  }
  void Grow(size_t n) { size_ += n; }
  void Finish() { std::memset(data_.get() + size_, 0, kPadding); }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0, capacity_ = 0;
};

// The whole file (gunzipped when it is gzip) in a padded buffer. NotFound for a missing
// file; DataLoss for a truncated or corrupt gzip stream; ResourceExhausted past 4 GiB.
StatusOr<PaddedBuffer> ReadJsonInput(const std::string& path);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_JSON_INPUT_H_
