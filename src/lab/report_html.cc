// Fills the embedded report template with summary.json.
#include "lab/report_html.h"

#include <string_view>

namespace tierscope {
namespace {

constexpr std::string_view kTemplate =
#include "report_template.inc"
    ;

}  // namespace

std::string RenderReportHtml(const nlohmann::json& summary) {
  // JSON inside <script>: "</" would end the element early, so it is written "<\/".
  std::string json = summary.dump(-1, ' ', /*ensure_ascii=*/false,
                                  nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else {
      safe += json[i];
    }
  }
  constexpr std::string_view kSlot = "@SUMMARY_JSON@";
  std::string out(kTemplate);
  const size_t at = out.find(kSlot);
  if (at != std::string::npos) out.replace(at, kSlot.size(), safe);
  return out;
}

}  // namespace tierscope
