// Fills the embedded analysis page template: the document, and Chart.js inline.
#include "analysis/analysis_html.h"

#include "core/html_page.h"

namespace tierscope {
namespace {

constexpr std::string_view kTemplate =
#include "analysis_page_page_html.inc"
    ;
// The page's script, in the order its parts run (page/*.js).
constexpr std::string_view kScripts[] = {
#include "analysis_page_common_js.inc"
    ,
#include "analysis_page_timeline_js.inc"
    ,
#include "analysis_page_analysis_js.inc"
    ,
#include "analysis_page_compare_js.inc"
    ,
#include "analysis_page_main_js.inc"
};
constexpr std::string_view kChartJs =
#include "chart_js.inc"
    ;

}  // namespace

std::string RenderAnalysisPage(std::string_view analysis_json) {
  const std::string json = ScriptSafeJson(analysis_json);
  // A script's text must not hold "</script" either; Chart.js's minified build has none,
  // and a test keeps it so.
  std::string script;
  for (std::string_view part : kScripts) (script += part) += "\n";
  return FillSlots(kTemplate, {{"@CHART_JS@", kChartJs}, {"@ANALYSIS_JSON@", json}, {"@PAGE_JS@", script}});
}

}  // namespace tierscope
