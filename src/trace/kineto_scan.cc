// The Kineto importer's first pass (the top-level scan) and scalar parsing.
#include "trace/kineto_scan.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace tierscope::kineto {
namespace {

// The bytes the scanner stops at outside strings; the zero padding after the input too.
constexpr auto kSpecial = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {'"', '{', '}', '[', ']', ',', '\0'}) t[c] = true;
  return t;
}();


}  // namespace

#ifdef __AVX2__
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
#ifdef __PCLMUL__
  // A carry-less multiply by all ones is the prefix XOR, in one instruction.
  inside = static_cast<uint64_t>(_mm_cvtsi128_si64(
      _mm_clmulepi64_si128(_mm_cvtsi64_si128(static_cast<int64_t>(inside)), _mm_set1_epi8(-1), 0)));
#else
  for (int shift = 1; shift < 64; shift *= 2) inside ^= inside << shift;
#endif
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


int64_t RepairUtf8(std::string_view in, std::string* out) {
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  int64_t replaced = 0;
  size_t copied = 0;  // in[copied, i) is valid and not yet appended
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The well-formed sequences (Unicode Table 3-7): the lead byte fixes the length and
    // the range of the second byte; later bytes are 80..BF.
    const size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                       : c >= 0xf0 && c <= 0xf4                 ? 4
                                                                : 0;
    const unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    size_t k = 1;  // the valid prefix: lead byte and fitting continuation bytes
    while (len > 0 && k < len && i + k < n && s[i + k] >= (k == 1 ? lo : 0x80) &&
           s[i + k] <= (k == 1 ? hi : 0xbf)) {
      ++k;
    }
    if (len > 0 && k == len) {
      i += len;
      continue;
    }
    // Ill-formed: its maximal subpart (the valid prefix, or the one byte) becomes U+FFFD.
    out->append(in.data() + copied, i - copied);
    out->append("\xEF\xBF\xBD");
    ++replaced;
    i += k;
    copied = i;
  }
  out->append(in.data() + copied, n - copied);
  return replaced;
}

size_t LocateStage1Error(const char* data, size_t n, simdjson::error_code error) {
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

}  // namespace tierscope::kineto
