// Embedding a JSON document and scripts in a page template.
#include "core/html_page.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tierscope {
namespace {

TEST(ScriptSafeJson, NoTagCanCloseTheScriptAndTheDocumentReadsTheSame) {
  const nlohmann::json doc = {{"name", "</script><script>alert(1)</script>"}, {"note", "<!-- x -->"}, {"n", 3}};
  const std::string safe = ScriptSafeJson(doc.dump());
  EXPECT_EQ(safe.find('<'), std::string::npos) << safe;
  EXPECT_EQ(nlohmann::json::parse(safe), doc);
}

TEST(FillSlots, EachSlotOnceAndNeverInsideAReplacement) {
  // The document holds the other slot's name: it must stay as it is.
  const std::string page = FillSlots("<a>@JS@</a><b>@DOC@</b><c>@DOC@</c>", {{"@DOC@", "x@JS@y"}, {"@JS@", "code"}});
  EXPECT_EQ(page, "<a>code</a><b>x@JS@y</b><c>@DOC@</c>");
  EXPECT_EQ(FillSlots("none here", {{"@DOC@", "x"}}), "none here");
}

}  // namespace
}  // namespace tierscope
