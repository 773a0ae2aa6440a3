// Small text helpers shared by the command-line parsers and the report writers.
#ifndef TIERSCOPE_CORE_TEXT_H_
#define TIERSCOPE_CORE_TEXT_H_

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

// `v` with `digits` digits after the point ("%.*f": 0.953 at 2 -> "0.95").
inline std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// Whether `s` is one of `options` ("aten::add", "aten::mul", ...).
inline bool OneOf(std::string_view s, std::initializer_list<std::string_view> options) {
  for (std::string_view o : options) {
    if (s == o) return true;
  }
  return false;
}

// `s` in ASCII lower case.
inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether `s` contains `word`, ignoring the case of `s` (`word` is lower case).
inline bool ContainsIgnoreCase(std::string_view s, std::string_view word) {
  for (size_t i = 0; i + word.size() <= s.size(); ++i) {
    size_t j = 0;
    while (j < word.size() && std::tolower(static_cast<unsigned char>(s[i + j])) == word[j]) ++j;
    if (j == word.size()) return true;
  }
  return false;
}

// `s` with every control character (a terminal's escapes, a newline) as a space: text
// from a trace, shown on one line of a terminal.
inline std::string Printable(std::string_view s) {
  std::string out(s);
  for (char& ch : out) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  }
  return out;
}

// `text` of several lines with every other control character as a space: a report that
// quotes a trace's names, written to a terminal.
inline std::string TerminalSafe(std::string_view text) {
  std::string out(text);
  for (char& ch : out) {
    if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\n') || ch == 0x7f) ch = ' ';
  }
  return out;
}

// "a, b,,c " -> {"a", "b", "c"}: split at commas, spaces trimmed, empty items dropped.
inline std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    begin = end + 1;
  }
  return out;
}

// The current UTC time as ISO 8601 ("2026-11-30T03:09:47Z").
inline std::string UtcNowIso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Seconds since the epoch of an ISO 8601 UTC time as UtcNowIso8601 writes it; -1 if it
// is not one.
inline int64_t ParseUtcIso8601(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return -1;
  return static_cast<int64_t>(timegm(&tm));
}

// "1,4,16" -> {1, 4, 16}: sorted, without repeats, each in [1, 1e6]; `flag` names the
// option in errors.
StatusOr<std::vector<int64_t>> ParseSizeList(const std::string& list, const std::string& flag);

// A finite decimal number written whole ("0.5", "-2", "1e-3"): no hex ("0x10"), no inf or
// nan, no leading blank or trailing text; nullopt otherwise.
std::optional<double> ParseDecimal(std::string_view text);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_TEXT_H_
