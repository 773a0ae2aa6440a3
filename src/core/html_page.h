// Self-contained HTML pages: a template embedded in the binary whose slots take a JSON
// document (in a <script type="application/json"> element) and inline scripts.
#ifndef TIERSCOPE_CORE_HTML_PAGE_H_
#define TIERSCOPE_CORE_HTML_PAGE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tierscope {

// JSON text made safe inside a <script> element: every '<' written \u003c (JSON allows the
// escape in strings, and '<' occurs nowhere else), so no "</script>" or "<!--" ends or
// bends the element; the parsed document is unchanged.
std::string ScriptSafeJson(std::string_view json);

// `page` with each slot ("@NAME@") replaced by its text, each slot's first occurrence only,
// in one pass: a replacement's own text is never searched for slots.
std::string FillSlots(std::string_view page, const std::vector<std::pair<std::string_view, std::string_view>>& slots);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_HTML_PAGE_H_
