// Filling an embedded page template.
#include "core/html_page.h"

#include <algorithm>

namespace tierscope {

std::string ScriptSafeJson(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

std::string FillSlots(std::string_view page, const std::vector<std::pair<std::string_view, std::string_view>>& slots) {
  // Where each slot is in the template, in order.
  std::vector<std::pair<size_t, size_t>> at;  // (position, slot)
  for (size_t s = 0; s < slots.size(); ++s) {
    const size_t p = page.find(slots[s].first);
    if (p != std::string_view::npos) at.emplace_back(p, s);
  }
  std::sort(at.begin(), at.end());
  std::string out;
  size_t from = 0, size = page.size();
  for (const auto& [p, s] : at) size += slots[s].second.size();
  out.reserve(size);
  for (const auto& [p, s] : at) {
    if (p < from) continue;  // overlaps the slot before
    out.append(page.substr(from, p - from));
    out.append(slots[s].second);
    from = p + slots[s].first.size();
  }
  out.append(page.substr(from));
  return out;
}

}  // namespace tierscope
