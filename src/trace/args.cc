// Reading and compacting an event's args (the members of Kineto's "args" object).
#include "trace/args.h"

#include <simdjson.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace tierscope {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// i at an opening quote: the index just past the closing one (s.size() if unclosed).
size_t SkipString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

// i at a value: the index of the ',' (or end, or unmatched closer) that ends it.
size_t SkipValue(std::string_view s, size_t i) {
  int depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"') {
      i = SkipString(s, i);
      continue;
    }
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') {
      if (depth == 0) return i;
      --depth;
    }
    if (c == ',' && depth == 0) return i;
    ++i;
  }
  return i;
}

}  // namespace

std::string_view ArgValue(std::string_view args, std::string_view key) {
  size_t i = 0;
  while (true) {
    i = SkipSpace(args, i);
    if (i >= args.size() || args[i] != '"') return {};
    const size_t key_end = SkipString(args, i);
    if (key_end > args.size() || key_end < i + 2) return {};
    const std::string_view k = args.substr(i + 1, key_end - i - 2);
    i = SkipSpace(args, key_end);
    if (i >= args.size() || args[i] != ':') return {};
    const size_t v = SkipSpace(args, i + 1);
    const size_t end = SkipValue(args, v);
    if (k == key) {
      size_t e = end;
      while (e > v && IsSpace(args[e - 1])) --e;
      return args.substr(v, e - v);
    }
    if (end >= args.size() || args[end] != ',') return {};
    i = end + 1;
  }
}

void CompactJsonInto(std::string_view json, std::string* out) {
  // simdjson's minifier: whitespace outside strings is dropped, strings kept byte for byte.
  const size_t at = out->size();
  out->resize(at + json.size() + simdjson::SIMDJSON_PADDING);
  size_t n = 0;
  if (simdjson::minify(json.data(), json.size(), out->data() + at, n) != simdjson::SUCCESS) {
    out->resize(at);
    out->append(json);  // unbalanced quotes: kept as written
    return;
  }
  out->resize(at + n);
}

std::string CompactJson(std::string_view json) {
  std::string out;
  CompactJsonInto(json, &out);
  return out;
}

std::string ShapesText(std::string_view input_dims) {
  const std::string c = CompactJson(input_dims);
  if (c.size() < 2 || c.front() != '[' || c.back() != ']') return c;
  // Split the outer list's elements at top-level commas.
  const std::string_view inner = std::string_view(c).substr(1, c.size() - 2);
  std::string out;
  for (size_t i = 0; i < inner.size();) {
    const size_t e = SkipValue(inner, i);
    if (!out.empty() || i > 0) out += 'x';
    out.append(inner.substr(i, e - i));
    if (e >= inner.size()) break;
    i = e + 1;
  }
  return out;
}

std::string_view ArgText(std::string_view args, std::string_view key) {
  std::string_view v = ArgValue(args, key);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

std::optional<double> ArgNumber(std::string_view args, std::string_view key) {
  const std::string v(ArgText(args, key));
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end != v.c_str() + v.size() || !std::isfinite(x)) return std::nullopt;
  return x;
}

std::vector<int64_t> ArgDims(std::string_view args, std::string_view key) {
  std::vector<int64_t> dims;
  int64_t cur = -1;
  for (const char c : ArgValue(args, key)) {
    if (c >= '0' && c <= '9') {
      if (cur > (int64_t{1} << 40)) return {};
      cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
    } else if (c == ',' || c == '[' || c == ']' || std::isspace(static_cast<unsigned char>(c))) {
      if (cur >= 0) dims.push_back(cur);
      cur = -1;
    } else {
      return {};
    }
  }
  if (cur >= 0) dims.push_back(cur);
  if (dims.size() > 3) return {};
  return dims;
}

}  // namespace tierscope
