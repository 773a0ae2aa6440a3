// Reading one value of a Kineto trace with simdjson's On Demand API, as the importer does
// millions of times: keys as written, strings without a copy when they have no escapes,
// integers that may be written as doubles.
#ifndef TIERSCOPE_TRACE_KINETO_VALUES_H_
#define TIERSCOPE_TRACE_KINETO_VALUES_H_

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "trace/kineto_scan.h"

namespace tierscope::kineto {

namespace od = simdjson::ondemand;

// `k == lit` with a compile-time length, so the compare is inlined, not a memcmp call.
template <size_t N>
bool Is(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
}

// The key of a field as written, not unescaped: from after its opening quote to its
// closing one, found back from the value (simdjson has checked the ':' between). A key
// with escapes keeps them, so it matches none of the keys looked for (none has a '\\').
inline std::string_view KeyOf(od::field& field) {
  const char* k = field.key().raw();
  const char* q = field.value().raw_json_token().data() - 1;
  while (q > k && IsSpace(*q)) --q;  // at the ':'
  if (q > k) --q;
  while (q > k && IsSpace(*q)) --q;  // at the closing quote
  if (q < k || *q != '"') return "\\";
  return std::string_view(k, static_cast<size_t>(q - k));
}

// A string value: a view into the input when it has no escapes, else unescaped into the
// parser's buffer (valid while its document is). False if the value is not a string.
inline bool GetString(od::value& v, std::string_view* out) {
  const std::string_view tok = Trim(v.raw_json_token());  // the string, then whitespace
  if (tok.size() < 2 || tok.front() != '"' || tok.back() != '"') return false;
  const std::string_view inner = tok.substr(1, tok.size() - 2);
  if (inner.find('\\') == std::string_view::npos) {
    *out = inner;
    return true;
  }
  return v.get_string().get(*out) == simdjson::SUCCESS;
}

// The text of a number value, or false.
inline bool GetNumberText(od::value& v, std::string_view* out) {
  const std::string_view tok = Trim(v.raw_json_token());
  if (tok.empty() || (tok[0] != '-' && (tok[0] < '0' || tok[0] > '9'))) return false;
  *out = tok;
  return true;
}

inline bool GetDouble(od::value& v, double* out) { return v.get_double().get(*out) == simdjson::SUCCESS; }

inline bool GetInt(od::value& v, int64_t* out) {
  uint64_t u;
  double d;
  if (v.get_int64().get(*out) == simdjson::SUCCESS) return true;
  if (v.get_uint64().get(u) == simdjson::SUCCESS) {  // addresses above 2^63
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d) || std::fabs(d) >= 9.2e18) {
    return false;
  }
  *out = std::llround(d);
  return true;
}

}  // namespace tierscope::kineto

#endif  // TIERSCOPE_TRACE_KINETO_VALUES_H_
