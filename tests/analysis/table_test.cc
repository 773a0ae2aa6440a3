// Tables written a part at a time (WriteTableJson, JsonAt, WriteText, WriteCsv) read
// exactly as the whole-table renderers and nlohmann's dump of the whole document.
#include "analysis/table.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace tierscope {
namespace {

Table Sample() {
  Table t;
  t.name = "sample";
  t.title = "A table with \"quotes\" and bytes that are not UTF-8: \xff\xfe";
  t.columns = {"Name", "Count", "Share (%)", "Name"};  // a repeated column: the last value wins in JSON
  t.AddRow({std::string("a,b"), int64_t{3}, 12.5, std::string("x")});
  t.AddRow({std::string("line\none"), int64_t{-7}, 1e300, std::string("\xc3\xa9t\xc3\xa9")});
  t.AddRow({std::string("short row")});
  t.notes = {"first note", "second \"note\""};
  return t;
}

std::string WrittenJson(const Table& t, int depth) {
  std::ostringstream out;
  WriteTableJson(out, t, depth);
  return out.str();
}

TEST(TableTest, WrittenJsonIsTheWholeTablesDump) {
  Table t = Sample();
  EXPECT_EQ(WrittenJson(t, 0) + "\n", ReportJsonText(TableToJson(t)));
  t.notes.clear();
  EXPECT_EQ(WrittenJson(t, 0) + "\n", ReportJsonText(TableToJson(t)));
  t.rows.clear();
  EXPECT_EQ(WrittenJson(t, 0) + "\n", ReportJsonText(TableToJson(t)));
}

TEST(TableTest, WrittenJsonNestsAsInALargerDocument) {
  const Table t = Sample();
  nlohmann::json doc;
  doc["reports"] = nlohmann::json::array({TableToJson(t), TableToJson(t)});
  doc["z"] = 1;
  const std::string expected = ReportJsonText(doc);
  const std::string written = "{\n  \"reports\": [\n    " + WrittenJson(t, 2) + ",\n    " + WrittenJson(t, 2) +
                              "\n  ],\n  \"z\": " + JsonAt(1, 1) + "\n}\n";
  EXPECT_EQ(written, expected);
  EXPECT_EQ(JsonAt(nlohmann::json::array(), 3), "[]");
  EXPECT_EQ(JsonAt(nlohmann::json::array({1, 2}), 1), "[\n    1,\n    2\n  ]");
}

TEST(TableTest, WrittenTextAndCsvAreTheRenderedOnes) {
  const Table t = Sample();
  for (bool wide : {false, true}) {
    std::ostringstream out;
    WriteText(out, t, wide);
    EXPECT_EQ(out.str(), RenderText(t, wide));
  }
  std::ostringstream csv;
  WriteCsv(csv, t);
  EXPECT_EQ(csv.str(), RenderCsv(t));
  EXPECT_NE(csv.str().find("\"a,b\""), std::string::npos) << csv.str();
  EXPECT_EQ(RenderText(t).find("line\none"), std::string::npos);  // AddRow made it one line
}

}  // namespace
}  // namespace tierscope
