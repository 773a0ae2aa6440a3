// Kineto Chrome trace importer. The whole (gunzipped) file is read into one padded
// buffer; a light scan finds traceEvents and cuts it into ~1 MiB runs of whole events,
// each parsed in place with simdjson On-Demand by one reused parser, so the structural
// index stays small (a whole-file index alone would cost ~0.8x the input), and the pages
// of input already parsed go back to the system. Strings are viewed in place (unescaped
// only when they have escapes), timestamps are parsed from their decimal text so ns are
// exact, and a bad event is counted, never fatal.
#include "trace/kineto_import.h"

#include "trace/json_input.h"

#include <simdjson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tierscope {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr size_t kNpos = static_cast<size_t>(-1);

// ---------------------------------------------------------------------------------------
// Scalars.

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if ((a[i] >= 'A' && a[i] <= 'Z' ? a[i] - 'A' + 'a' : a[i]) != lower[i]) return false;
  }
  return true;
}

bool EndsWithIgnoreCase(std::string_view s, std::string_view lower) {
  return s.size() >= lower.size() && EqualsIgnoreCase(s.substr(s.size() - lower.size()), lower);
}

// Parses a JSON number of microseconds ("12", "-3.5", "4203669604595.407", "1e3") into
// ns, rounded to the nearest (halves away from zero). False if it is not a number or does
// not fit in int64 ns.
bool MicrosToNs(std::string_view tok, int64_t* ns) {
  const bool neg = !tok.empty() && tok[0] == '-';
  size_t i = neg ? 1 : 0;
  const size_t int_begin = i;
  constexpr uint64_t kMaxMicros = static_cast<uint64_t>(INT64_MAX) / 1000 - 1;
  uint64_t whole = 0, frac = 0;  // µs, ns
  for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i) {
    whole = whole * 10 + static_cast<uint64_t>(tok[i] - '0');
    if (whole > kMaxMicros) return false;
  }
  if (i == int_begin) return false;
  bool round_up = false;
  if (i < tok.size() && tok[i] == '.') {
    const size_t frac_begin = ++i;
    for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i) {
      if (i - frac_begin < 3) frac = frac * 10 + static_cast<uint64_t>(tok[i] - '0');
      if (i - frac_begin == 3) round_up = tok[i] >= '5';
    }
    if (i == frac_begin) return false;
    for (size_t k = i - frac_begin; k < 3; ++k) frac *= 10;
  }
  if (i < tok.size() && (tok[i] == 'e' || tok[i] == 'E')) {  // rare: via a double
    const std::string copy(tok);
    char* end = nullptr;
    const double v = std::strtod(copy.c_str(), &end) * 1000.0;
    if (end != copy.c_str() + copy.size() || !std::isfinite(v) || std::fabs(v) >= 9.2e18) {
      return false;
    }
    *ns = std::llround(v);
    return true;
  }
  if (i != tok.size()) return false;
  const int64_t mag = static_cast<int64_t>(whole * 1000 + frac + (round_up ? 1 : 0));
  *ns = neg ? -mag : mag;
  return true;
}

// The key of a field as written, not unescaped; a key with escapes comes back as "\\",
// which matches none of the keys looked for.
std::string_view KeyOf(od::field& field, const char* end) {
  const char* k = field.key().raw();
  const char* q = k;
  while (q < end && *q != '"' && *q != '\\') ++q;
  if (q >= end || *q == '\\') return "\\";
  return std::string_view(k, static_cast<size_t>(q - k));
}

// A string value: a view into the input when it has no escapes, else unescaped into the
// parser's buffer (valid while its document is). False if the value is not a string.
bool GetString(od::value& v, std::string_view* out) {
  const std::string_view tok = Trim(v.raw_json_token());  // the string, then whitespace
  if (tok.size() < 2 || tok.front() != '"' || tok.back() != '"') return false;
  const std::string_view inner = tok.substr(1, tok.size() - 2);
  if (inner.find('\\') == std::string_view::npos) {
    *out = inner;
    return true;
  }
  return v.get_string().get(*out) == SUCCESS;
}

// The text of a number value, or false.
bool GetNumberText(od::value& v, std::string_view* out) {
  const std::string_view tok = Trim(v.raw_json_token());
  if (tok.empty() || (tok[0] != '-' && (tok[0] < '0' || tok[0] > '9'))) return false;
  *out = tok;
  return true;
}

bool GetDouble(od::value& v, double* out) { return v.get_double().get(*out) == SUCCESS; }

bool GetInt(od::value& v, int64_t* out) {
  uint64_t u;
  double d;
  if (v.get_int64().get(*out) == SUCCESS) return true;
  if (v.get_uint64().get(u) == SUCCESS) {  // addresses above 2^63
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.get_double().get(d) != SUCCESS || !std::isfinite(d) || std::fabs(d) >= 9.2e18) {
    return false;
  }
  *out = std::llround(d);
  return true;
}

// Where simdjson's first stage failed (it gives no position): the first invalid UTF-8
// sequence, raw control character in a string, or unclosed string.
size_t LocateStage1Error(const char* data, size_t n, error_code error) {
  const auto* s = reinterpret_cast<const unsigned char*>(data);
  bool in_string = false;
  size_t string_start = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = s[i];
    if (c >= 0x80 && error == simdjson::UTF8_ERROR) {
      const size_t len = (c & 0xe0) == 0xc0   ? 2
                         : (c & 0xf0) == 0xe0 ? 3
                         : (c & 0xf8) == 0xf0 ? 4
                                              : 0;
      if (len == 0 || i + len > n) return i;
      uint32_t cp = c & (0x7f >> len);
      for (size_t k = 1; k < len; ++k) {
        if ((s[i + k] & 0xc0) != 0x80) return i;
        cp = (cp << 6) | (s[i + k] & 0x3f);
      }
      if (cp < (len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u) || cp > 0x10ffff ||
          (cp >= 0xd800 && cp <= 0xdfff)) {
        return i;
      }
      i += len - 1;
    } else if (!in_string) {
      in_string = c == '"';
      string_start = i;
    } else if (c == '\\') {
      ++i;
    } else if (c == '"') {
      in_string = false;
    } else if (c < 0x20 && error == simdjson::UNESCAPED_CHARS) {
      return i;
    }
  }
  return in_string && error == simdjson::UNCLOSED_STRING ? string_start : n;
}

// ---------------------------------------------------------------------------------------
// The top-level scan: where traceEvents is, cut into runs of whole events. Only strings
// and bracket depth are tracked here; simdjson validates each run as it parses it.

struct Layout {
  bool has_events = false, events_not_array = false;
  std::vector<std::pair<size_t, size_t>> chunks;  // [begin, end) of event runs
  struct Field {
    std::string_view key;
    size_t begin, end;
  };
  std::vector<Field> fields;  // the other top-level members
};

// The bytes the scanner stops at outside strings; the zero padding after the input too.
constexpr auto kSpecial = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {'"', '{', '}', '[', ']', ',', '\0'}) t[c] = true;
  return t;
}();

#ifdef __AVX2__
// One 64-byte block of the scanner's fast path: false if it has a backslash or if the
// depth could reach 0 in it; else moves `depth` and `in_string` past it.
bool FastBlock(const char* p, uint64_t* depth, bool* in_string) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  const auto eq = [](__m256i a, __m256i b, char c) {
    const __m256i v = _mm256_set1_epi8(c);
    const auto mask = [&](__m256i x) {
      return uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, v)))};
    };
    return mask(a) | mask(b) << 32;
  };
  if (eq(lo, hi, '\\') != 0) return false;
  uint64_t inside = eq(lo, hi, '"');  // prefix XOR of the quotes: the bytes in strings
  for (int shift = 1; shift < 64; shift *= 2) inside ^= inside << shift;
  if (*in_string) inside = ~inside;
  // '[' and '{' (and ']' and '}') differ only in bit 5.
  const __m256i bit5 = _mm256_set1_epi8(0x20);
  const __m256i lo5 = _mm256_or_si256(lo, bit5), hi5 = _mm256_or_si256(hi, bit5);
  const uint64_t open = eq(lo5, hi5, '{') & ~inside, close = eq(lo5, hi5, '}') & ~inside;
  uint64_t d = *depth;
  if (static_cast<uint64_t>(std::popcount(close)) < d) {
    d = d + std::popcount(open) - std::popcount(close);
  } else {  // walk the brackets in order
    for (uint64_t b = open | close; b != 0; b &= b - 1) {
      if (((close >> std::countr_zero(b)) & 1) == 0) ++d;
      else if (--d == 0) return false;
    }
  }
  *depth = d;
  *in_string = (inside >> 63) != 0;
  return true;
}
#endif

class Scanner {
 public:
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

// One past the value that starts at i, or kNpos. For the events array (`events` set),
// also cuts it into runs at top-level commas.
size_t Scanner::ValueEnd(size_t i, Layout* events) {
  if (p_[i] == '"') {
    const size_t e = StringEnd(i);
    return e == kNpos ? (Fail(n_, "unclosed string"), kNpos) : e;
  }
  if (p_[i] != '{' && p_[i] != '[') {
    size_t e = i;
    while (e < n_ && !IsSpace(p_[e]) && std::strchr(",:]}", p_[e]) == nullptr) ++e;
    return e == i ? (Fail(i, "expected a value"), kNpos) : e;
  }
  size_t depth = 0, run_begin = i + 1, scalar_until = 0;
  for (size_t k = i; k < n_; ++k) {
#ifdef __AVX2__
    // Fast path over 64-byte blocks (outside a string at k) that only move the depth.
    if (k >= scalar_until) {
      size_t f = k;
      bool in_string = false;
      for (; f + 64 <= n_ && (events == nullptr || f - run_begin < kChunkBytes); f += 64) {
        uint64_t d = depth;
        if (!FastBlock(p_ + f, &d, &in_string)) break;
        depth = d;
      }
      scalar_until = f + 64;  // the block that stopped it goes the slow way
      if (f != k) {
        k = in_string ? StringEnd(f - 1) : f;  // finish the string the last block ended in
        if (k == kNpos) return Fail(n_, "unclosed string"), kNpos;
        if (k >= n_) break;
      }
    }
#endif
    while (!kSpecial[static_cast<unsigned char>(p_[k])]) ++k;  // the padding stops it
    if (k >= n_) break;
    switch (p_[k]) {
      case '"':
        k = StringEnd(k);
        if (k == kNpos) return Fail(n_, "unclosed string"), kNpos;
        --k;
        break;
      case '{':
      case '[':
        ++depth;
        break;
      case '}':
      case ']':
        if (--depth > 0) break;
        if (events != nullptr && SkipSpace(run_begin) < k) {
          events->chunks.emplace_back(run_begin, k);
        }
        return k + 1;
      case ',':
        if (events != nullptr && depth == 1 && k - run_begin >= kChunkBytes) {
          events->chunks.emplace_back(run_begin, k);
          run_begin = k + 1;
        }
        break;
      default:  // a NUL byte
        break;
    }
  }
  return Fail(n_, "unclosed array or object"), kNpos;
}

bool Scanner::Scan(Layout* out) {
  size_t i = SkipSpace(0);
  if (i == n_) return Fail(0, "no JSON value (empty input)");
  if (p_[i] == '[') {  // the legacy bare list of events
    out->has_events = true;
    if ((i = ValueEnd(i, out)) == kNpos) return false;
  } else if (p_[i] == '{') {
    for (++i;; ++i) {
      i = SkipSpace(i);
      if (i >= n_) return Fail(n_, "unclosed object");
      if (p_[i] == '}' && out->fields.empty() && !out->has_events) break;  // {}
      if (p_[i] != '"') return Fail(i, "expected a member name");
      const size_t key_end = StringEnd(i);
      if (key_end == kNpos) return Fail(n_, "unclosed string");
      const std::string_view key(p_ + i + 1, key_end - i - 2);
      i = SkipSpace(key_end);
      if (i >= n_ || p_[i] != ':') return Fail(i, "expected ':'");
      if ((i = SkipSpace(i + 1)) >= n_) return Fail(n_, "expected a value");
      const bool events = key == "traceEvents";
      if (events && p_[i] != '[') out->events_not_array = true;
      const size_t end = ValueEnd(i, events && p_[i] == '[' ? out : nullptr);
      if (end == kNpos) return false;
      if (events) out->has_events = true;
      else out->fields.push_back({key, i, end});
      i = SkipSpace(end);
      if (i < n_ && p_[i] == '}') break;
      if (i >= n_) return Fail(n_, "unclosed object");
      if (p_[i] != ',') return Fail(i, "expected ',' or '}'");
    }
    ++i;
  } else {
    return Fail(i, "expected '{' or '[' (this is not a JSON trace)");
  }
  i = SkipSpace(i);
  return i < n_ ? Fail(i, "unexpected content after the top-level value") : true;
}

// ---------------------------------------------------------------------------------------
// The importer.

EventKind KindOfCategory(std::string_view cat) {
  static constexpr std::pair<const char*, EventKind> kKinds[] = {
      {"cpu_op", EventKind::kOp},         {"operator", EventKind::kOp},
      {"kernel", EventKind::kKernel},     {"user_annotation", EventKind::kAnnotation},
      {"gpu_memcpy", EventKind::kMemcpy}, {"gpu_user_annotation", EventKind::kGpuAnnotation},
      {"memcpy", EventKind::kMemcpy},     {"gpu_memset", EventKind::kMemset},
      {"memset", EventKind::kMemset},     {"cuda_sync", EventKind::kSync},
      {"runtime", EventKind::kRuntime},   {"kernel_task", EventKind::kTask},
  };
  for (const auto& [name, kind] : kKinds) {
    if (EqualsIgnoreCase(cat, name)) return kind;
  }
  // cuda_runtime, cuda_driver, hip_runtime, privateuse1_runtime, mtia_runtime, ...
  const bool runtime = EndsWithIgnoreCase(cat, "_runtime") || EndsWithIgnoreCase(cat, "_driver");
  return runtime ? EventKind::kRuntime : EventKind::kOther;
}

bool KeepsArgs(EventKind k) {
  return k == EventKind::kOp || k == EventKind::kKernel || k == EventKind::kMemcpy ||
         k == EventKind::kMemset || k == EventKind::kSync || k == EventKind::kTask;
}

// A field of an event: absent, present but mistyped, or read.
enum class Got : uint8_t { kAbsent, kBad, kOk };

// What one traceEvents entry said.
struct RawEvent {
  std::string_view ph, cat, name, ts, dur;
  Got got_ph = Got::kAbsent, got_name = Got::kAbsent, got_ts = Got::kAbsent;
  Got got_dur = Got::kAbsent;
  bool has_cat = false, pid_ok = true, tid_ok = true;
  int32_t pid = 0, tid = 0;
  std::string_view pid_string;  // when the pid was a string
  // From args.
  std::string_view args;  // its members, without the braces
  std::string_view arg_name, arg_labels;
  int64_t external_id = 0, correlation = 0, addr = 0;
  int64_t kernel_correlation = -1;  // -1: absent
  double bytes = 0, total_allocated = 0, flops = 0, tasks = 0, busy_ns = 0;
};

class Importer {
 public:
  // `data` is writable: a run's neighbouring bytes are briefly turned into brackets.
  Importer(char* data, size_t size, size_t capacity, const std::string& source)
      : data_(data), size_(size), capacity_(capacity), end_(data + size) {
    trace_.source = source;
    trace_.format = "kineto";
    trace_.stats.bytes = static_cast<int64_t>(size);
  }
  StatusOr<Trace> Run();

 private:
  Status JsonError(size_t offset, std::string_view what) const {
    std::string msg = trace_.source + ": invalid JSON at byte " + std::to_string(offset);
    if (offset >= size_) msg += " (the end of the input: truncated?)";
    return DataLoss(msg + ": " + std::string(what));
  }
  bool Fail(error_code e);  // records a fatal error at the parser's position
  // Hands the pages of the input before `offset`, never read again, back to the system,
  // so the input shrinks while the trace grows (peak memory ~1x the input, not ~2x).
  void ReleaseInput(size_t offset) {
#ifdef MADV_DONTNEED
    const uintptr_t page = 4096, base = reinterpret_cast<uintptr_t>(data_);
    const uintptr_t from = (base + released_ + page - 1) & ~(page - 1);
    const uintptr_t to = (base + offset) & ~(page - 1);
    if (to < from + (uintptr_t{1} << 20)) return;
    madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
    released_ = to - base;
#endif
  }
  bool ReadChunk(size_t begin, size_t end);
  void ReadField(const Layout::Field& field);
  bool ReadEvent(od::value v);
  bool ReadArgs(od::value v, RawEvent& ev);
  bool ReadId(od::value& v, int32_t* id, std::string_view* as_string);
  int32_t IdForString(std::string_view s);
  bool Malformed(const char* reason) {  // counts it; true: go on
    ++trace_.stats.malformed;
    ++trace_.stats.malformed_reasons[reason];
    return true;
  }
  void AddThreadName(int32_t tid, std::string_view name) {
    auto key = std::make_pair(tid, std::string(name));
    if (named_threads_.insert(key).second) trace_.thread_names.push_back(std::move(key));
  }
  void Finish();

  char* data_;
  size_t size_, capacity_;
  const char* end_;
  od::parser parser_;
  od::document doc_;
  error_code error_ = SUCCESS;
  size_t error_offset_ = 0, released_ = 0;

  Trace trace_;
  std::string trace_name_;
  std::unordered_map<int32_t, std::pair<EventKind, int64_t>> categories_;  // kind, count
  int64_t no_category_ = 0;
  std::map<std::string, int32_t, std::less<>> string_ids_;
  int32_t next_string_id_ = -2;
  std::set<std::pair<int32_t, std::string>> named_threads_;
  int64_t hip_ = 0, musa_ = 0, cuda_ = 0;  // runtime call names by prefix
  bool host_pid_set_ = false, saw_op_ = false;
  int32_t first_op_pid_ = 0, memory_name_ = -1;
};

bool Importer::Fail(error_code e) {
  if (error_ != SUCCESS) return false;
  error_ = e;
  const char* loc = nullptr;
  error_offset_ = size_;
  if (doc_.current_location().get(loc) == SUCCESS && loc >= data_ && loc < end_) {
    error_offset_ = static_cast<size_t>(loc - data_);
  }
  return false;
}

StatusOr<Trace> Importer::Run() {
  Layout layout;
  Scanner scanner(data_, size_);
  if (!scanner.Scan(&layout)) return JsonError(scanner.error_offset, scanner.error);
  if (layout.events_not_array) {
    return InvalidArgument(trace_.source + ": \"traceEvents\" is not an array");
  }
  if (!layout.has_events) {
    return InvalidArgument(trace_.source + ": not a Kineto trace: no \"traceEvents\" array");
  }
  for (const Layout::Field& field : layout.fields) ReadField(field);
  size_t biggest = 0, total = 0;
  for (const auto& [b, e] : layout.chunks) {
    biggest = std::max(biggest, e - b + 2);
    total += e - b;
  }
  if (biggest > 0 && parser_.allocate(biggest) != SUCCESS) {
    return ResourceExhausted(trace_.source + ": out of memory for the parser");
  }
  for (size_t c = 0; c < layout.chunks.size(); ++c) {
    const auto [b, e] = layout.chunks[c];
    if (!ReadChunk(b, e)) {
      if (error_ == simdjson::MEMALLOC) return ResourceExhausted(trace_.source + ": out of memory");
      return JsonError(error_offset_, simdjson::error_message(error_));
    }
    ReleaseInput(e);
    if (c == 0 && layout.chunks.size() > 1) {  // size the rest by the first run's density
      const double per_byte = static_cast<double>(trace_.events.size()) / double(e - b);
      trace_.events.reserve(static_cast<size_t>(per_byte * 1.1 * double(total)) + 64);
    }
  }
  Finish();
  return std::move(trace_);
}

// Parses the events in [begin, end) (after '[' or ',', up to ',' or ']') in place as an
// array: the bytes just before and at `end` become brackets for the while.
bool Importer::ReadChunk(size_t begin, size_t end) {
  char* open = data_ + begin - 1;
  char* close = data_ + end;
  const char saved_open = *open, saved_close = *close;
  *open = '[';
  *close = ']';
  const size_t len = end - begin + 2;
  bool ok = false;
  od::array events;
  if (const error_code e = parser_.iterate(open, len, capacity_ - (begin - 1)).get(doc_)) {
    error_ = e;
    error_offset_ = begin - 1 + LocateStage1Error(open, len, e);
  } else if (const error_code e2 = doc_.get_array().get(events)) {
    Fail(e2);
  } else {
    ok = true;
    for (auto v_or : events) {
      od::value v;
      if (const error_code e3 = v_or.get(v)) ok = Fail(e3);
      if (!ok || !(ok = ReadEvent(v))) break;
    }
    const char* rest = nullptr;  // anything after the array is an error
    if (ok && doc_.current_location().get(rest) == SUCCESS) ok = Fail(simdjson::TRAILING_CONTENT);
  }
  *open = saved_open;
  *close = saved_close;
  return ok;
}

// A top-level member other than traceEvents; unreadable ones are ignored.
void Importer::ReadField(const Layout::Field& field) {
  od::document doc;
  if (field.key != "deviceProperties" && field.key != "baseTimeNanoseconds" &&
      field.key != "traceName") {
    return;
  }
  if (parser_.iterate(data_ + field.begin, field.end - field.begin, capacity_ - field.begin)
          .get(doc) != SUCCESS) {
    return;
  }
  std::string_view s;
  int64_t n;
  od::array devices;
  if (field.key == "baseTimeNanoseconds" && doc.get_int64().get(n) == SUCCESS) {
    trace_.base_time_ns = n;
  } else if (field.key == "traceName" && doc.get_string().get(s) == SUCCESS) {
    trace_name_ = std::string(s);
  } else if (field.key == "deviceProperties" && doc.get_array().get(devices) == SUCCESS) {
    for (auto dev_or : devices) {  // the first device describes the trace
      od::object obj;
      if (dev_or.get_object().get(obj) != SUCCESS) return;
      for (auto field_or : obj) {
        od::field f;
        if (std::move(field_or).get(f) != SUCCESS) return;
        const std::string_view key = KeyOf(f, end_);
        od::value v = f.value();
        if (key == "name" && GetString(v, &s)) {
          trace_.device_name = std::string(s);
        } else if (key == "numSms" && GetInt(v, &n)) {
          trace_.device_units = static_cast<int32_t>(std::clamp<int64_t>(n, 0, INT32_MAX));
        } else if (key == "totalGlobalMem" && GetInt(v, &n)) {
          trace_.device_memory = n;
        }
      }
      return;
    }
  }
}

int32_t Importer::IdForString(std::string_view s) {
  auto it = string_ids_.find(s);
  if (it != string_ids_.end()) return it->second;
  // A trailing number names the id ("stream 7" -> 7, "25738" -> 25738).
  size_t digits = 0;
  while (digits < s.size() && s[s.size() - 1 - digits] >= '0' && s[s.size() - 1 - digits] <= '9') {
    ++digits;
  }
  int32_t id = 0;
  if (digits > 0 && digits <= 9) {
    for (size_t i = s.size() - digits; i < s.size(); ++i) id = id * 10 + (s[i] - '0');
  } else {
    id = next_string_id_ > INT32_MIN ? next_string_id_-- : INT32_MIN;
  }
  string_ids_.emplace(std::string(s), id);
  if (digits != s.size()) AddThreadName(id, s);  // a bare number names nothing
  return id;
}

bool Importer::ReadId(od::value& v, int32_t* id, std::string_view* as_string) {
  od::json_type t;
  std::string_view text;
  int64_t n;
  if (v.type().get(t) != SUCCESS) return false;
  if (t == od::json_type::number) {
    if (v.get_int64().get(n) == SUCCESS && n >= INT32_MIN && n <= INT32_MAX) {
      *id = static_cast<int32_t>(n);
      return true;
    }
    if (!GetNumberText(v, &text)) return false;  // huge or fractional: named by its text
  } else if (t != od::json_type::string || !GetString(v, &text)) {
    return false;
  } else {
    *as_string = text;
  }
  *id = IdForString(text);
  return true;
}

bool Importer::ReadArgs(od::value v, RawEvent& ev) {
  od::json_type t;
  if (v.type().get(t) != SUCCESS || t != od::json_type::object) return true;  // ignored
  const char* begin = v.raw_json_token().data();  // the '{'
  od::object obj;
  if (const error_code e = v.get_object().get(obj)) return Fail(e);
  for (auto field_or : obj) {
    od::field field;
    if (const error_code e = std::move(field_or).get(field)) return Fail(e);
    const std::string_view key = KeyOf(field, end_);
    od::value fv = field.value();
    if (key == "External id" || key == "external id") GetInt(fv, &ev.external_id);
    else if (key == "correlation") GetInt(fv, &ev.correlation);
    else if (key == "Bytes" || key == "bytes") GetDouble(fv, &ev.bytes);
    else if (key == "Total Allocated") GetDouble(fv, &ev.total_allocated);
    else if (key == "Addr") GetInt(fv, &ev.addr);
    else if (key == "flops") GetDouble(fv, &ev.flops);
    else if (key == "kernel correlation") GetInt(fv, &ev.kernel_correlation);
    else if (key == "tasks") GetDouble(fv, &ev.tasks);
    else if (key == "busy ns") GetDouble(fv, &ev.busy_ns);
    else if (key == "name") GetString(fv, &ev.arg_name);
    else if (key == "labels") GetString(fv, &ev.arg_labels);
  }
  // The object's text runs from its '{' to the next structural character.
  const char* loc = nullptr;
  if (doc_.current_location().get(loc) != SUCCESS || loc <= begin || loc > end_) return true;
  const std::string_view text = Trim(std::string_view(begin, static_cast<size_t>(loc - begin)));
  if (text.size() >= 2 && text.front() == '{' && text.back() == '}') {
    ev.args = Trim(text.substr(1, text.size() - 2));
  }
  return true;
}

bool Importer::ReadEvent(od::value v) {
  ++trace_.stats.events_read;
  od::json_type type;
  od::object obj;
  if (v.type().get(type) != SUCCESS || type != od::json_type::object) {
    return Malformed("not an object");
  }
  if (const error_code e = v.get_object().get(obj)) return Fail(e);
  RawEvent ev;
  std::string_view tid_string;
  const auto got = [](bool ok) { return ok ? Got::kOk : Got::kBad; };
  for (auto field_or : obj) {
    od::field field;
    if (const error_code e = std::move(field_or).get(field)) return Fail(e);
    const std::string_view key = KeyOf(field, end_);
    od::value fv = field.value();
    if (key == "ph") ev.got_ph = got(GetString(fv, &ev.ph));
    else if (key == "ts") ev.got_ts = got(GetNumberText(fv, &ev.ts));
    else if (key == "dur") ev.got_dur = got(GetNumberText(fv, &ev.dur));
    else if (key == "cat") ev.has_cat = GetString(fv, &ev.cat);
    else if (key == "name") ev.got_name = got(GetString(fv, &ev.name));
    else if (key == "pid") ev.pid_ok = ReadId(fv, &ev.pid, &ev.pid_string);
    else if (key == "tid") ev.tid_ok = ReadId(fv, &ev.tid, &tid_string);
    else if (key == "args" && !ReadArgs(fv, ev)) return false;
  }

  // Every entry's category is counted, kept or not.
  int32_t cat_id = -1;
  EventKind kind = EventKind::kOther;
  if (ev.has_cat) {
    cat_id = trace_.strings.Intern(ev.cat);
    auto it = categories_.find(cat_id);
    if (it == categories_.end()) {
      it = categories_.emplace(cat_id, std::make_pair(KindOfCategory(ev.cat), 0)).first;
    }
    kind = it->second.first;
    ++it->second.second;
  } else {
    ++no_category_;
    if (ev.pid_string == "CPU functions") kind = EventKind::kOp;  // legacy autograd profiler
    if (ev.pid_string == "CUDA functions") kind = EventKind::kKernel;
  }

  if (ev.got_ph == Got::kAbsent) return Malformed("missing ph");
  if (ev.got_ph == Got::kBad || ev.ph.empty()) return Malformed("ph not a string");
  const char ph = ev.ph.size() == 1 ? ev.ph[0] : '?';
  const bool memory = (ph == 'i' || ph == 'I') && ev.got_name == Got::kOk && ev.name == "[memory]";
  if (ph != 'X' && !memory) {
    ++trace_.stats.metadata;  // metadata, flows, B/E, other instants, unknown phases
    if (ph != 'M' || ev.got_name != Got::kOk || !ev.tid_ok || !ev.pid_ok) return true;
    if (ev.name == "thread_name" && !ev.arg_name.empty()) AddThreadName(ev.tid, ev.arg_name);
    if (ev.name == "process_labels" && ev.arg_labels == "CPU" && !host_pid_set_) {
      trace_.host_pid = ev.pid;
      host_pid_set_ = true;
    }
    return true;
  }
  if (ev.got_name == Got::kAbsent) return Malformed("missing name");
  if (ev.got_name == Got::kBad) return Malformed("name not a string");
  if (ev.got_ts == Got::kAbsent) return Malformed("missing ts");
  if (!ev.pid_ok) return Malformed("pid not a number or string");
  if (!ev.tid_ok) return Malformed("tid not a number or string");
  Event e;
  if (ev.got_ts == Got::kBad || !MicrosToNs(ev.ts, &e.ts_ns)) return Malformed("ts not a number");
  if (ph == 'X') {
    if (ev.got_dur == Got::kAbsent) return Malformed("missing dur");
    if (ev.got_dur == Got::kBad || !MicrosToNs(ev.dur, &e.dur_ns)) {
      return Malformed("dur not a number");
    }
    if (e.dur_ns < 0) return Malformed("negative dur");
  }

  e.cat = cat_id;
  e.pid = ev.pid;
  e.tid = ev.tid;
  e.kind = memory ? EventKind::kMemory : kind;
  e.external_id = ev.external_id;
  e.correlation = ev.correlation;
  switch (e.kind) {
    case EventKind::kMemory:
      e.v0 = ev.bytes;
      e.v1 = ev.total_allocated;
      e.external_id = ev.addr;
      if (memory_name_ < 0) memory_name_ = trace_.strings.Intern("[memory]");
      break;
    case EventKind::kKernel:
      e.v0 = ev.flops;
      e.v1 = ev.bytes;
      break;
    case EventKind::kTask:
      if (ev.kernel_correlation >= 0) e.correlation = ev.kernel_correlation;
      e.v0 = ev.tasks;
      e.v1 = ev.busy_ns;
      break;
    case EventKind::kRuntime:  // the launch API family
      if (ev.name.substr(0, 3) == "hip") ++hip_;
      else if (ev.name.substr(0, 4) == "musa") ++musa_;
      else if (ev.name.substr(0, 2) == "cu") ++cuda_;
      break;
    case EventKind::kOp:
      if (!saw_op_) first_op_pid_ = e.pid;
      saw_op_ = true;
      break;
    default:
      break;
  }
  e.name = memory ? memory_name_ : trace_.strings.Intern(ev.name);
  if (!ev.args.empty() && KeepsArgs(e.kind)) {
    // Device events' args name their own correlation, so they are unique: no dedup.
    const bool unique = e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy ||
                        e.kind == EventKind::kMemset || e.kind == EventKind::kSync;
    e.args = unique ? trace_.strings.Append(ev.args) : trace_.strings.Intern(ev.args);
  }
  trace_.events.push_back(e);
  ++trace_.stats.events_kept;
  return true;
}

void Importer::Finish() {
  ImportStats& stats = trace_.stats;
  for (const auto& [id, info] : categories_) {
    stats.by_category[std::string(trace_.strings.Get(id))] += info.second;
  }
  if (no_category_ > 0) stats.by_category[""] += no_category_;
  if (!host_pid_set_ && saw_op_) trace_.host_pid = first_op_pid_;
  if (trace_name_.find("tierscope") != std::string::npos) {
    trace_.runtime = "cpu";
  } else if (hip_ > 0 && hip_ >= musa_ && hip_ >= cuda_) {
    trace_.runtime = "hip";
  } else if (musa_ > 0 && musa_ >= cuda_) {
    trace_.runtime = "musa";
  } else if (cuda_ > 0) {
    trace_.runtime = "cuda";
  }
}

}  // namespace

StatusOr<Trace> ImportKinetoJson(std::string_view json, const std::string& source) {
  if (json.size() > kMaxJsonBytes) return ResourceExhausted(source + ": larger than 4 GiB");
  PaddedBuffer buf;
  if (!buf.Reserve(json.size())) return ResourceExhausted(source + ": out of memory");
  if (!json.empty()) std::memcpy(buf.data(), json.data(), json.size());
  buf.Grow(json.size());
  buf.Finish();
  return Importer(buf.data(), buf.size(), buf.capacity(), source).Run();
}

StatusOr<Trace> ImportKinetoTrace(const std::string& path) {
  TS_ASSIGN_OR_RETURN(PaddedBuffer buf, ReadJsonInput(path));
  return Importer(buf.data(), buf.size(), buf.capacity(), path).Run();
}

}  // namespace tierscope
