// Kineto Chrome trace importer. The whole (gunzipped) file is read into one padded
// buffer; a light scan finds traceEvents and cuts it into ~1 MiB runs of whole events,
// each parsed in place with simdjson On-Demand by one reused parser, so the structural
// index stays small (a whole-file index alone would cost ~0.8x the input). Strings are
// viewed in place (unescaped only when they have escapes), timestamps are parsed from
// their decimal text so ns are exact, and a bad event is counted, never fatal.
#include "trace/kineto_import.h"

#include <simdjson.h>
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

constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;
constexpr size_t kMaxJsonBytes = simdjson::SIMDJSON_MAXSIZE_BYTES;  // 4 GiB
constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr size_t kNpos = static_cast<size_t>(-1);

// ---------------------------------------------------------------------------------------
// Input.

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};

// `size` bytes of JSON followed by at least kPadding zero bytes.
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
  std::unique_ptr<char, FreeDeleter> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

Status OutOfMemory(const std::string& path, size_t bytes) {
  return ResourceExhausted(path + ": out of memory for " + std::to_string(bytes) +
                           " bytes of JSON");
}

// Makes room for another read, growing by half; JSON beyond 4 GiB is refused.
Status EnsureRoom(PaddedBuffer& buf, const std::string& path) {
  if (buf.size() > kMaxJsonBytes) {
    return ResourceExhausted(path + ": the JSON is larger than 4 GiB, simdjson's limit");
  }
  if (buf.room() >= 4096) return OkStatus();
  const size_t want = std::max(buf.size() + buf.size() / 2, buf.size() + (size_t{1} << 20));
  if (!buf.Reserve(want)) return OutOfMemory(path, want);
  return OkStatus();
}

Status ReadPlain(FILE* f, const std::string& path, size_t file_size, PaddedBuffer& buf) {
  // One byte more than the size, so the end of file is seen without growing.
  if (!buf.Reserve(std::min(file_size, kMaxJsonBytes) + 1)) return OutOfMemory(path, file_size);
  for (;;) {
    TS_RETURN_IF_ERROR(EnsureRoom(buf, path));
    const size_t n = std::fread(buf.data() + buf.size(), 1, buf.room(), f);
    buf.Grow(n);
    if (n == 0) break;
  }
  if (std::ferror(f)) return DataLoss(path + ": read failed: " + std::strerror(errno));
  return EnsureRoom(buf, path);
}

Status ReadGzip(FILE* f, const std::string& path, size_t file_size, PaddedBuffer& buf) {
  // The gzip trailer holds the uncompressed size mod 2^32: the first allocation, unless
  // it is implausible (a truncated or multi-member file).
  size_t hint = file_size * 8;
  unsigned char t[4];
  if (file_size >= 18 && std::fseek(f, -4, SEEK_END) == 0 && std::fread(t, 1, 4, f) == 4) {
    const size_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<size_t>(t[3]) << 24);
    if (isize >= file_size / 2 && isize <= file_size * 256 + 65536) hint = isize;
  }
  if (std::fseek(f, 0, SEEK_SET) != 0) return DataLoss(path + ": cannot seek");
  if (!buf.Reserve(std::min(hint, kMaxJsonBytes) + 1)) return OutOfMemory(path, hint);

  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Internal(path + ": inflateInit failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  std::vector<unsigned char> in(size_t{1} << 18);
  bool eof = false;
  size_t compressed = 0;
  auto refill = [&]() {
    if (zs.avail_in > 0 || eof) return;
    const size_t n = std::fread(in.data(), 1, in.size(), f);
    eof = n == 0;
    zs.next_in = in.data();
    zs.avail_in = static_cast<uInt>(n);
    compressed += n;
  };
  for (;;) {
    refill();
    if (std::ferror(f)) return DataLoss(path + ": read failed: " + std::strerror(errno));
    TS_RETURN_IF_ERROR(EnsureRoom(buf, path));
    const size_t room = std::min<size_t>(buf.room(), size_t{1} << 30);
    zs.next_out = reinterpret_cast<Bytef*>(buf.data() + buf.size());
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    buf.Grow(room - zs.avail_out);
    if (rc == Z_OK) continue;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (concatenated .gz); anything else is ignored.
      refill();
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) break;
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_BUF_ERROR && !(zs.avail_in == 0 && eof)) continue;  // needs more input
    if (rc == Z_BUF_ERROR) {
      return DataLoss(path + ": truncated gzip stream: it ends after " +
                      std::to_string(compressed) + " compressed bytes (" +
                      std::to_string(buf.size()) + " bytes of JSON)");
    }
    if (rc == Z_MEM_ERROR) return OutOfMemory(path, buf.size());
    return DataLoss(path + ": corrupt gzip stream near compressed byte " +
                    std::to_string(compressed - zs.avail_in) + ": " +
                    (zs.msg != nullptr ? zs.msg : "inflate error"));
  }
  return EnsureRoom(buf, path);
}

StatusOr<PaddedBuffer> ReadFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(path + ": no such file");
    return FailedPrecondition(path + ": cannot open: " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": is a directory, not a trace");
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) return FailedPrecondition(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const bool gz = std::fread(magic, 1, 2, f.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (std::fseek(f.get(), 0, SEEK_SET) != 0) return DataLoss(path + ": cannot seek");
  const size_t file_size = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  PaddedBuffer buf;
  TS_RETURN_IF_ERROR(gz ? ReadGzip(f.get(), path, file_size, buf)
                        : ReadPlain(f.get(), path, file_size, buf));
  buf.Finish();
  return buf;
}

// ---------------------------------------------------------------------------------------
// Scalars.

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char c = (a[i] >= 'A' && a[i] <= 'Z') ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (c != lower[i]) return false;
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
  size_t i = 0;
  const bool neg = !tok.empty() && tok[0] == '-';
  if (neg) ++i;
  const size_t int_begin = i;
  constexpr uint64_t kMaxMicros = static_cast<uint64_t>(INT64_MAX) / 1000 - 1;
  uint64_t whole = 0;
  for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i) {
    whole = whole * 10 + static_cast<uint64_t>(tok[i] - '0');
    if (whole > kMaxMicros) return false;
  }
  if (i == int_begin) return false;
  uint64_t frac = 0;  // ns
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
  std::string_view tok = v.raw_json_token();  // the string and any whitespace after it
  if (tok.empty() || tok[0] != '"') return false;
  tok = TrimRight(tok);
  if (tok.size() < 2 || tok.back() != '"') return false;
  const std::string_view inner = tok.substr(1, tok.size() - 2);
  if (inner.find('\\') == std::string_view::npos) {
    *out = inner;
    return true;
  }
  return v.get_string().get(*out) == SUCCESS;
}

// The text of a number value, or false.
bool GetNumberText(od::value& v, std::string_view* out) {
  const std::string_view tok = v.raw_json_token();
  if (tok.empty() || (tok[0] != '-' && (tok[0] < '0' || tok[0] > '9'))) return false;
  *out = TrimRight(tok);
  return true;
}

bool GetInt(od::value& v, int64_t* out) {
  int64_t i;
  uint64_t u;
  double d;
  if (v.get_int64().get(i) == SUCCESS) {
    *out = i;
  } else if (v.get_uint64().get(u) == SUCCESS) {  // addresses above 2^63
    *out = static_cast<int64_t>(u);
  } else if (v.get_double().get(d) == SUCCESS && std::isfinite(d) && std::fabs(d) < 9.2e18) {
    *out = std::llround(d);
  } else {
    return false;
  }
  return true;
}

bool GetDouble(od::value& v, double* out) { return v.get_double().get(*out) == SUCCESS; }

// Where simdjson's first stage failed (it reports no position): the first invalid UTF-8
// sequence, raw control character in a string, or unclosed string.
size_t LocateStage1Error(const char* data, size_t n, error_code error) {
  const auto* s = reinterpret_cast<const unsigned char*>(data);
  bool in_string = false;
  size_t string_start = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = s[i];
    if (c >= 0x80 && error == simdjson::UTF8_ERROR) {
      size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
      if (len == 0 || i + len > n) return i;
      uint32_t cp = c & (0x7f >> len);
      for (size_t k = 1; k < len; ++k) {
        if ((s[i + k] & 0xc0) != 0x80) return i;
        cp = (cp << 6) | (s[i + k] & 0x3f);
      }
      if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
          cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return i;
      }
      i += len - 1;
    } else if (!in_string) {
      if (c == '"') {
        in_string = true;
        string_start = i;
      }
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
// and bracket depth are tracked here; simdjson validates each run as it is parsed.

struct Layout {
  bool has_events = false;
  bool events_not_array = false;
  std::vector<std::pair<size_t, size_t>> chunks;  // [begin, end) of event runs
  struct Field {
    std::string_view key;
    size_t begin, end;
  };
  std::vector<Field> fields;  // other top-level members
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
    return static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, v))) |
           static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, v)))) << 32;
  };
  if (eq(lo, hi, '\\') != 0) return false;
  // '[' and '{' (and ']' and '}') differ only in bit 5.
  const __m256i bit5 = _mm256_set1_epi8(0x20);
  const __m256i lo5 = _mm256_or_si256(lo, bit5), hi5 = _mm256_or_si256(hi, bit5);
  uint64_t inside = eq(lo, hi, '"');  // prefix XOR: the bytes inside strings
  for (int shift = 1; shift < 64; shift *= 2) inside ^= inside << shift;
  if (*in_string) inside = ~inside;
  const uint64_t open = eq(lo5, hi5, '{') & ~inside, close = eq(lo5, hi5, '}') & ~inside;
  uint64_t d = *depth;
  if (static_cast<uint64_t>(std::popcount(close)) >= d) {  // walk the brackets in order
    for (uint64_t b = open | close; b != 0; b &= b - 1) {
      if ((close >> std::countr_zero(b)) & 1) {
        if (--d == 0) return false;
      } else {
        ++d;
      }
    }
  } else {
    d = d + std::popcount(open) - std::popcount(close);
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
  // One past the closing quote of the string opening at i, or kNpos. A byte loop: Kineto
  // strings are short, so it beats memchr and needs no look back for escapes.
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
  const char c = p_[i];
  if (c == '"') {
    const size_t e = StringEnd(i);
    if (e == kNpos) Fail(i, "unclosed string");
    return e;
  }
  if (c != '{' && c != '[') {
    size_t e = i;
    while (e < n_ && !IsSpace(p_[e]) && std::strchr(",:]}", p_[e]) == nullptr) ++e;
    if (e == i) Fail(i, "expected a value");
    return e == i ? kNpos : e;
  }
  size_t depth = 0;
  size_t run_begin = i + 1;
  size_t scalar_until = 0;
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
        if (events != nullptr && SkipSpace(run_begin) < k) events->chunks.emplace_back(run_begin, k);
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
    i = ValueEnd(i, out);
    if (i == kNpos) return false;
  } else if (p_[i] == '{') {
    for (++i;;) {
      i = SkipSpace(i);
      if (i >= n_) return Fail(n_, "unclosed object");
      if (p_[i] == '}' && out->fields.empty() && !out->has_events) break;
      if (p_[i] != '"') return Fail(i, "expected a member name");
      const size_t key_end = StringEnd(i);
      if (key_end == kNpos) return Fail(i, "unclosed string");
      const std::string_view key(p_ + i + 1, key_end - i - 2);
      i = SkipSpace(key_end);
      if (i >= n_ || p_[i] != ':') return Fail(i, "expected ':'");
      i = SkipSpace(i + 1);
      if (i >= n_) return Fail(n_, "expected a value");
      const bool events = key == "traceEvents";
      if (events && p_[i] != '[') out->events_not_array = true;
      const size_t end = ValueEnd(i, events && p_[i] == '[' ? out : nullptr);
      if (end == kNpos) return false;
      if (events) out->has_events = true;
      else out->fields.push_back({key, i, end});
      i = SkipSpace(end);
      if (i < n_ && p_[i] == ',') {
        ++i;
        continue;
      }
      if (i < n_ && p_[i] == '}') break;
      return Fail(i, i < n_ ? "expected ',' or '}'" : "unclosed object");
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

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

// What one traceEvents entry said.
struct RawEvent {
  std::string_view ph, cat, name, ts, dur;
  bool has_ph = false, ph_ok = false, has_cat = false, has_name = false, name_ok = false;
  bool has_ts = false, ts_ok = false, has_dur = false, dur_ok = false;
  bool pid_ok = true, tid_ok = true;
  int32_t pid = 0, tid = 0;
  std::string_view pid_string;  // when the pid was a string
  // From args.
  std::string_view args;  // its members, without the braces
  std::string_view arg_name, arg_labels;
  int64_t external_id = 0, correlation = 0, kernel_correlation = 0, addr = 0;
  double bytes = 0, total_allocated = 0, flops = 0, tasks = 0, busy_ns = 0;
  bool has_kernel_correlation = false;
};

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
  if (EndsWithIgnoreCase(cat, "_runtime") || EndsWithIgnoreCase(cat, "_driver")) {
    return EventKind::kRuntime;
  }
  return EventKind::kOther;
}

// A direct-mapped cache in front of StringTable::Intern for strings that repeat (names,
// categories), so most lookups stay in a small table instead of the big one.
class InternCache {
 public:
  int32_t Intern(StringTable& table, std::string_view s) {
    uint64_t h = s.size() * 0x9e3779b97f4a7c15ull;
    if (s.size() >= 8) {
      uint64_t a, b, c;
      std::memcpy(&a, s.data(), 8);
      std::memcpy(&b, s.data() + s.size() / 2 - 4 + (s.size() < 16 ? 4 : 0), 8);
      std::memcpy(&c, s.data() + s.size() - 8, 8);
      h ^= (a * 0xff51afd7ed558ccdull) ^ (b * 0xc4ceb9fe1a85ec53ull) ^ c;
    } else {
      for (char ch : s) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
    }
    Slot& slot = slots_[(h ^ (h >> 29)) & (kSlots - 1)];
    if (slot.id >= 0 && slot.text == s) return slot.id;
    slot.id = table.Intern(s);
    slot.text = table.Get(slot.id);  // stable: the table never moves its strings
    return slot.id;
  }

 private:
  static constexpr size_t kSlots = 4096;
  struct Slot {
    std::string_view text;
    int32_t id = -1;
  };
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
};

bool KeepsArgs(EventKind k) {
  return k == EventKind::kOp || k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset || k == EventKind::kSync ||
         k == EventKind::kTask;
}

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
  Status JsonError(size_t offset, std::string_view what) const;
  bool Fail(error_code e);  // records a fatal error at the parser's position
  bool ReadChunk(size_t begin, size_t end);
  void ReadField(const Layout::Field& field);
  void ReadDeviceProperties(od::array devices);
  bool ReadEvent(od::value v);
  bool ReadArgs(od::value v, RawEvent& ev);
  bool ReadId(od::value& v, int32_t* id, std::string_view* as_string);
  int32_t IdForString(std::string_view s);
  bool Malformed(const char* reason);  // counts it; true: go on
  void Metadata(const RawEvent& ev);
  void AddThreadName(int32_t tid, std::string_view name);
  void Finish();

  char* data_;
  size_t size_, capacity_;
  const char* end_;
  od::parser parser_;
  od::document doc_;
  error_code error_ = SUCCESS;
  size_t error_offset_ = 0;

  Trace trace_;
  std::string trace_name_;
  std::unordered_map<int32_t, std::pair<EventKind, int64_t>> categories_;  // kind, count
  int64_t no_category_ = 0;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> string_ids_;
  int32_t next_string_id_ = -2;
  std::set<std::pair<int32_t, std::string>> named_threads_;
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> malformed_;
  int64_t hip_ = 0, musa_ = 0, cuda_ = 0;  // runtime call names by prefix
  bool host_pid_set_ = false, saw_op_ = false;
  int32_t first_op_pid_ = 0;
  int32_t memory_name_ = -1;
  InternCache cache_;
};

Status Importer::JsonError(size_t offset, std::string_view what) const {
  std::string msg = trace_.source + ": invalid JSON at byte " + std::to_string(offset);
  if (offset >= size_) msg += " (the end of the input: truncated?)";
  return DataLoss(msg + ": " + std::string(what));
}

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
  size_t biggest = 0;
  for (const auto& [b, e] : layout.chunks) biggest = std::max(biggest, e - b + 2);
  if (biggest > 0 && parser_.allocate(biggest) != SUCCESS) {
    return ResourceExhausted(trace_.source + ": out of memory for the parser");
  }
  // Room for more events than any real trace has per byte: never copied while growing,
  // and pages never written are never resident.
  trace_.events.reserve(size_ / 96 + 16);
  for (const auto& [b, e] : layout.chunks) {
    if (ReadChunk(b, e)) continue;
    if (error_ == simdjson::MEMALLOC) return ResourceExhausted(trace_.source + ": out of memory");
    return JsonError(error_offset_, simdjson::error_message(error_));
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
  const error_code e = parser_.iterate(open, len, capacity_ - (begin - 1)).get(doc_);
  if (e != SUCCESS) {
    error_ = e;
    error_offset_ = begin - 1 + LocateStage1Error(open, len, e);
  } else {
    od::array events;
    if (auto err = doc_.get_array().get(events)) {
      Fail(err);
    } else {
      ok = true;
      for (auto v_or : events) {
        od::value v;
        if (auto err2 = v_or.get(v)) ok = Fail(err2);
        else ok = ReadEvent(v);
        if (!ok) break;
      }
      const char* rest = nullptr;  // anything after the array is an error
      if (ok && doc_.current_location().get(rest) == SUCCESS) {
        ok = Fail(simdjson::TRAILING_CONTENT);
      }
    }
  }
  *open = saved_open;
  *close = saved_close;
  return ok;
}

// A top-level member other than traceEvents; unreadable ones are ignored.
void Importer::ReadField(const Layout::Field& field) {
  if (field.key != "deviceProperties" && field.key != "baseTimeNanoseconds" &&
      field.key != "traceName") {
    return;
  }
  od::document doc;
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
    ReadDeviceProperties(devices);
  }
}

void Importer::ReadDeviceProperties(od::array devices) {
  for (auto dev_or : devices) {
    od::object obj;
    if (dev_or.get_object().get(obj) != SUCCESS) return;
    for (auto field_or : obj) {
      od::field field;
      if (std::move(field_or).get(field) != SUCCESS) return;
      const std::string_view key = KeyOf(field, end_);
      od::value v = field.value();
      std::string_view s;
      int64_t n;
      if (key == "name" && GetString(v, &s)) {
        trace_.device_name = std::string(s);
      } else if (key == "numSms" && GetInt(v, &n)) {
        trace_.device_units = static_cast<int32_t>(std::clamp<int64_t>(n, 0, INT32_MAX));
      } else if (key == "totalGlobalMem" && GetInt(v, &n)) {
        trace_.device_memory = n;
      }
    }
    return;  // the first device describes the trace
  }
}

bool Importer::Malformed(const char* reason) {
  ++trace_.stats.malformed;
  auto it = malformed_.find(std::string_view(reason));
  if (it == malformed_.end()) it = malformed_.emplace(reason, 0).first;
  ++it->second;
  return true;
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
  if (v.type().get(t) != SUCCESS) return false;
  std::string_view text;
  if (t == od::json_type::number) {
    int64_t n;
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
  if (auto e = v.get_object().get(obj)) return Fail(e);
  for (auto field_or : obj) {
    od::field field;
    if (auto e = std::move(field_or).get(field)) return Fail(e);
    const std::string_view key = KeyOf(field, end_);
    od::value fv = field.value();
    switch (key.size()) {
      case 4:
        if (key == "name") GetString(fv, &ev.arg_name);
        else if (key == "Addr") GetInt(fv, &ev.addr);
        break;
      case 5:
        if (key == "Bytes" || key == "bytes") GetDouble(fv, &ev.bytes);
        else if (key == "flops") GetDouble(fv, &ev.flops);
        else if (key == "tasks") GetDouble(fv, &ev.tasks);
        break;
      case 6:
        if (key == "labels") GetString(fv, &ev.arg_labels);
        break;
      case 7:
        if (key == "busy ns") GetDouble(fv, &ev.busy_ns);
        break;
      case 11:
        if (key == "External id" || key == "external id") GetInt(fv, &ev.external_id);
        else if (key == "correlation") GetInt(fv, &ev.correlation);
        break;
      case 15:
        if (key == "Total Allocated") GetDouble(fv, &ev.total_allocated);
        break;
      case 18:
        if (key == "kernel correlation") {
          ev.has_kernel_correlation = GetInt(fv, &ev.kernel_correlation);
        }
        break;
      default:
        break;
    }
  }
  // The object's text runs from its '{' to the next structural character.
  const char* loc = nullptr;
  if (doc_.current_location().get(loc) != SUCCESS || loc <= begin || loc > end_) return true;
  std::string_view text = TrimRight(std::string_view(begin, static_cast<size_t>(loc - begin)));
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return true;
  text = TrimRight(text.substr(1, text.size() - 2));
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  ev.args = text;
  return true;
}

bool Importer::ReadEvent(od::value v) {
  ++trace_.stats.events_read;
  od::json_type type;
  if (v.type().get(type) != SUCCESS || type != od::json_type::object) {
    return Malformed("not an object");
  }
  od::object obj;
  if (auto e = v.get_object().get(obj)) return Fail(e);
  RawEvent ev;
  for (auto field_or : obj) {
    od::field field;
    if (auto e = std::move(field_or).get(field)) return Fail(e);
    const std::string_view key = KeyOf(field, end_);
    od::value fv = field.value();
    if (key == "ph") {
      ev.has_ph = true;
      ev.ph_ok = GetString(fv, &ev.ph);
    } else if (key == "ts") {
      ev.has_ts = true;
      ev.ts_ok = GetNumberText(fv, &ev.ts);
    } else if (key == "cat") {
      ev.has_cat = GetString(fv, &ev.cat);
    } else if (key == "dur") {
      ev.has_dur = true;
      ev.dur_ok = GetNumberText(fv, &ev.dur);
    } else if (key == "pid") {
      ev.pid_ok = ReadId(fv, &ev.pid, &ev.pid_string);
    } else if (key == "tid") {
      std::string_view unused;
      ev.tid_ok = ReadId(fv, &ev.tid, &unused);
    } else if (key == "name") {
      ev.has_name = true;
      ev.name_ok = GetString(fv, &ev.name);
    } else if (key == "args") {
      if (!ReadArgs(fv, ev)) return false;
    }
  }

  // Every entry's category is counted, kept or not.
  int32_t cat_id = -1;
  EventKind cat_kind = EventKind::kOther;
  if (ev.has_cat) {
    cat_id = cache_.Intern(trace_.strings, ev.cat);
    auto it = categories_.find(cat_id);
    if (it == categories_.end()) {
      it = categories_.emplace(cat_id, std::make_pair(KindOfCategory(ev.cat), 0)).first;
    }
    cat_kind = it->second.first;
    ++it->second.second;
  } else {
    ++no_category_;
  }

  if (!ev.has_ph) return Malformed("missing ph");
  if (!ev.ph_ok || ev.ph.empty()) return Malformed("ph not a string");
  const char ph = ev.ph.size() == 1 ? ev.ph[0] : '?';
  const bool memory = (ph == 'i' || ph == 'I') && ev.name_ok && ev.name == "[memory]";
  if (ph != 'X' && !memory) {
    if (ph == 'M') Metadata(ev);
    ++trace_.stats.metadata;  // metadata, flows, B/E, other instants, unknown phases
    return true;
  }
  if (!ev.has_name) return Malformed("missing name");
  if (!ev.name_ok) return Malformed("name not a string");
  if (!ev.has_ts) return Malformed("missing ts");
  if (!ev.pid_ok) return Malformed("pid not a number or string");
  if (!ev.tid_ok) return Malformed("tid not a number or string");
  int64_t ts_ns = 0, dur_ns = 0;
  if (!ev.ts_ok || !MicrosToNs(ev.ts, &ts_ns)) return Malformed("ts not a number");
  if (ph == 'X') {
    if (!ev.has_dur) return Malformed("missing dur");
    if (!ev.dur_ok || !MicrosToNs(ev.dur, &dur_ns)) return Malformed("dur not a number");
    if (dur_ns < 0) return Malformed("negative dur");
  }

  Event e;
  e.ts_ns = ts_ns;
  e.dur_ns = dur_ns;
  e.cat = cat_id;
  e.pid = ev.pid;
  e.tid = ev.tid;
  if (memory) {
    e.kind = EventKind::kMemory;
    e.v0 = ev.bytes;
    e.v1 = ev.total_allocated;
    e.external_id = ev.addr;
    if (memory_name_ < 0) memory_name_ = trace_.strings.Intern("[memory]");
    e.name = memory_name_;
  } else {
    e.kind = cat_kind;
    if (!ev.has_cat && ev.pid_string == "CPU functions") e.kind = EventKind::kOp;  // legacy
    if (!ev.has_cat && ev.pid_string == "CUDA functions") e.kind = EventKind::kKernel;
    e.name = cache_.Intern(trace_.strings, ev.name);
    e.external_id = ev.external_id;
    e.correlation = ev.correlation;
    if (e.kind == EventKind::kKernel) {
      e.v0 = ev.flops;
      e.v1 = ev.bytes;
    } else if (e.kind == EventKind::kTask) {
      if (ev.has_kernel_correlation) e.correlation = ev.kernel_correlation;
      e.v0 = ev.tasks;
      e.v1 = ev.busy_ns;
    } else if (e.kind == EventKind::kRuntime) {  // the launch API family
      if (ev.name.substr(0, 3) == "hip") ++hip_;
      else if (ev.name.substr(0, 4) == "musa") ++musa_;
      else if (ev.name.substr(0, 2) == "cu") ++cuda_;
    } else if (e.kind == EventKind::kOp && !saw_op_) {
      saw_op_ = true;
      first_op_pid_ = e.pid;
    }
    if (!ev.args.empty() && KeepsArgs(e.kind)) e.args = trace_.strings.Intern(ev.args);
  }
  trace_.events.push_back(e);
  ++trace_.stats.events_kept;
  return true;
}

void Importer::Metadata(const RawEvent& ev) {
  if (!ev.name_ok || !ev.tid_ok || !ev.pid_ok) return;
  if (ev.name == "thread_name" && !ev.arg_name.empty()) {
    AddThreadName(ev.tid, ev.arg_name);
  } else if (ev.name == "process_labels" && ev.arg_labels == "CPU" && !host_pid_set_) {
    trace_.host_pid = ev.pid;
    host_pid_set_ = true;
  }
}

void Importer::AddThreadName(int32_t tid, std::string_view name) {
  auto key = std::make_pair(tid, std::string(name));
  if (named_threads_.insert(key).second) trace_.thread_names.push_back(std::move(key));
}

void Importer::Finish() {
  ImportStats& stats = trace_.stats;
  for (const auto& [id, info] : categories_) {
    stats.by_category[std::string(trace_.strings.Get(id))] += info.second;
  }
  if (no_category_ > 0) stats.by_category[""] += no_category_;
  for (const auto& [reason, n] : malformed_) stats.malformed_reasons[reason] += n;
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
  if (!buf.Reserve(json.size())) return OutOfMemory(source, json.size());
  if (!json.empty()) std::memcpy(buf.data(), json.data(), json.size());
  buf.Grow(json.size());
  buf.Finish();
  return Importer(buf.data(), buf.size(), buf.capacity(), source).Run();
}

StatusOr<Trace> ImportKinetoTrace(const std::string& path) {
  TS_ASSIGN_OR_RETURN(PaddedBuffer buf, ReadFile(path));
  return Importer(buf.data(), buf.size(), buf.capacity(), path).Run();
}

}  // namespace tierscope
