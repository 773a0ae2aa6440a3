// Fills the embedded analysis page template: the document, and Chart.js inline.
#include "analysis/analysis_html.h"

#include "core/html_page.h"

namespace tierscope {
namespace {

constexpr std::string_view kTemplate =
#include "analysis_template.inc"
    ;
constexpr std::string_view kChartJs =
#include "chart_js.inc"
    ;

}  // namespace

std::string RenderAnalysisPage(std::string_view analysis_json) {
  const std::string json = ScriptSafeJson(analysis_json);
  // A script's text must not hold "</script" either; Chart.js's minified build has none,
  // and a test keeps it so.
  return FillSlots(kTemplate, {{"@CHART_JS@", kChartJs}, {"@ANALYSIS_JSON@", json}});
}

}  // namespace tierscope
