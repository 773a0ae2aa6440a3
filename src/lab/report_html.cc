// Fills the embedded report template with summary.json.
#include "lab/report_html.h"

#include <string_view>

#include "core/html_page.h"

namespace tierscope {
namespace {

constexpr std::string_view kTemplate =
#include "report_template.inc"
    ;

}  // namespace

std::string RenderReportHtml(const nlohmann::json& summary) {
  const std::string json = ScriptSafeJson(
      summary.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace));
  return FillSlots(kTemplate, {{"@SUMMARY_JSON@", json}});
}

}  // namespace tierscope
