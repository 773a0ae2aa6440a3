// The Kineto importer's first pass and scalar parsing: finds traceEvents in the raw
// JSON and cuts it into ~1 MiB runs of whole events (tracking only strings and bracket
// depth; simdjson validates each run as it parses it), parses µs timestamps into exact
// ns, repairs ill-formed UTF-8, and locates the byte where simdjson's first stage failed.
#ifndef TIERSCOPE_TRACE_KINETO_SCAN_H_
#define TIERSCOPE_TRACE_KINETO_SCAN_H_

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tierscope::kineto {

constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr size_t kNpos = static_cast<size_t>(-1);

inline bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

#ifdef __AVX2__
// One 64-byte block of the scanners' fast path: false if it has a backslash or if the
// depth could reach 0 in it; else moves `depth` and `in_string` past it.
bool FastBlock(const char* p, uint64_t* depth, bool* in_string);
#endif

bool EqualsIgnoreCase(std::string_view a, std::string_view lower);
bool EndsWithIgnoreCase(std::string_view s, std::string_view lower);

// Parses a JSON number of microseconds ("12", "-3.5", "4203669604595.407", "1e3") into
// ns, rounded to the nearest (halves away from zero). False if it is not a number or does
// not fit in int64 ns.
bool MicrosToNs(std::string_view tok, int64_t* ns);

// Appends `in` to `out` with each ill-formed UTF-8 sequence replaced by U+FFFD (one per
// maximal subpart, as Unicode recommends and browsers, Python and Perfetto do); returns how
// many were replaced.
int64_t RepairUtf8(std::string_view in, std::string* out);

// Where simdjson's first stage failed (it gives no position): the first invalid UTF-8
// sequence, raw control character in a string, or unclosed string.
size_t LocateStage1Error(const char* data, size_t n, simdjson::error_code error);

// Where traceEvents is, cut into runs of whole events.
struct Layout {
  bool has_events = false, events_not_array = false;
  std::vector<std::pair<size_t, size_t>> chunks;  // [begin, end) of event runs
  struct Field {
    std::string_view key;
    size_t begin, end;
  };
  std::vector<Field> fields;  // the other top-level members
};

class Scanner {
 public:
  // `data` is followed by zero padding.
  Scanner(const char* data, size_t size) : p_(data), n_(size) {}
  bool Scan(Layout* out);
  size_t error_offset = 0;
  const char* error = "";

 private:
  bool Fail(size_t at, const char* what) {
    error_offset = at;
    error = what;
    return false;
  }
  size_t SkipSpace(size_t i) const {
    while (i < n_ && IsSpace(p_[i])) ++i;
    return i;
  }
  // One past the closing quote of the string opening at i, or kNpos.
  size_t StringEnd(size_t i) const {
    for (size_t k = i + 1; k < n_; ++k) {
      if (p_[k] == '"') return k + 1;
      if (p_[k] == '\\') ++k;
    }
    return kNpos;
  }
  size_t ValueEnd(size_t i, Layout* events);

  const char* p_;
  size_t n_;
};

}  // namespace tierscope::kineto

#endif  // TIERSCOPE_TRACE_KINETO_SCAN_H_
