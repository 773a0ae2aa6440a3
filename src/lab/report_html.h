// report.html: the lab's summary rendered into one self-contained page (the template is
// embedded in the binary; the summary is embedded in the page, and the page's script
// draws every number and plot from it).
#ifndef TIERSCOPE_LAB_REPORT_HTML_H_
#define TIERSCOPE_LAB_REPORT_HTML_H_

#include <string>

#include <nlohmann/json.hpp>

namespace tierscope {

std::string RenderReportHtml(const nlohmann::json& summary);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_REPORT_HTML_H_
