// The analysis page: one self-contained HTML file (no network: its script, Chart.js and
// styles inline) drawn from the analysis JSON alone — `analyze --format json --timeline
// --critical-path` of a trace, or a job's `analyze --format json` — embedded in it.
#ifndef TIERSCOPE_ANALYSIS_ANALYSIS_HTML_H_
#define TIERSCOPE_ANALYSIS_ANALYSIS_HTML_H_

#include <string>
#include <string_view>

namespace tierscope {

// `analysis_json`: the JSON document, byte for byte as the command printed it.
std::string RenderAnalysisPage(std::string_view analysis_json);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_ANALYSIS_HTML_H_
