// The analysis page: its three script elements (Chart.js, the document, the page's script)
// stay three, whatever the document holds.
#include "analysis/analysis_html.h"

#include <gtest/gtest.h>

#include <string>

namespace tierscope {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(AnalysisPage, ThreeScriptElementsAndTheDocumentInOne) {
  const std::string doc = R"({"name": "</script><script>alert(1)</script>", "rows": []})";
  const std::string page = RenderAnalysisPage(doc);
  // Neither Chart.js, nor the page's script, nor the document closes an element early.
  EXPECT_EQ(Count(page, "<script"), 3u);
  EXPECT_EQ(Count(page, "</script"), 3u);
  EXPECT_EQ(Count(page, "<!--"), 1u);  // the template's own comment, before any script
  EXPECT_EQ(Count(page, "@CHART_JS@") + Count(page, "@PAGE_JS@") + Count(page, "@ANALYSIS_JSON@"), 0u);
  EXPECT_NE(page.find(R"(\u003c/script>\u003cscript>alert(1)\u003c/script>)"), std::string::npos);
}

}  // namespace
}  // namespace tierscope
