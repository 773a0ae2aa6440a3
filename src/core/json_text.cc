// JSON excerpts for error messages and whole-number reads (core/json_text.h).
#include "core/json_text.h"

#include <cmath>
#include <limits>

namespace tierscope {
namespace {

constexpr size_t kBudget = 64;   // characters of an excerpt, before its closing marks
constexpr int kMaxDepth = 3;     // levels of nesting shown
constexpr size_t kMaxString = 40;

using nlohmann::json;

std::string Dump(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// A string's JSON text, cut to kMaxString characters at a UTF-8 boundary.
std::string StringExcerpt(const json& v) {
  std::string s = Dump(v);
  if (s.size() <= kMaxString) return s;
  size_t cut = kMaxString - 4;
  while (cut > 1 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not mid-character
  return s.substr(0, cut) + "...\"";
}

// Appends `v` to `out`, iterating each container and recursing at most kMaxDepth levels.
void Append(const json& v, int depth, std::string* out) {
  if (!v.is_structured()) {
    *out += v.is_string() ? StringExcerpt(v) : Dump(v);
    return;
  }
  const bool array = v.is_array();
  if (depth == kMaxDepth && !v.empty()) {
    *out += array ? "[...]" : "{...}";
    return;
  }
  *out += array ? '[' : '{';
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) *out += ',';
    if (out->size() >= kBudget) {
      *out += "...";
      break;
    }
    first = false;
    if (!array) *out += StringExcerpt(json(it.key())) + ":";
    Append(it.value(), depth + 1, out);
  }
  *out += array ? ']' : '}';
}

}  // namespace

std::string JsonExcerpt(const json& v) {
  std::string out;
  Append(v, 0, &out);
  return out;
}

bool JsonWholeNumber(const json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) >= 9007199254740992.0) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

std::string NotWholeBecause(const json& v) {
  if (!v.is_number()) return "is not a number";
  if (v.is_number_integer()) return "is beyond 64 bits";
  const double d = v.get<double>();
  if (std::isfinite(d) && d != std::floor(d)) return "has a fraction";
  return "is beyond 2^53, where a JSON float stops holding every integer";
}

}  // namespace tierscope
