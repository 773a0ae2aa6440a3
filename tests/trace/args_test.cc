// The one reader of event args (trace/args.h): values found whatever the whitespace, only
// at the top level, strings respected; compact JSON and one-line shapes.
#include "trace/args.h"

#include <gtest/gtest.h>

namespace tierscope {
namespace {

TEST(Args, ValuesAreFoundWhateverTheWhitespace) {
  const std::string pretty = "\"External id\": 7,\n  \"grid\": [\n    30,\n    4,\n    1\n  ],\n  \"block\": [128, 1, 1]";
  EXPECT_EQ(ArgValue(pretty, "grid"), "[\n    30,\n    4,\n    1\n  ]");
  EXPECT_EQ(ArgValue(pretty, "block"), "[128, 1, 1]");
  EXPECT_EQ(ArgValue(pretty, "External id"), "7");
  EXPECT_EQ(ArgValue("\"grid\":[1,2,3],\"block\":[4]", "block"), "[4]");
  EXPECT_EQ(ArgValue(pretty, "missing"), "");
  EXPECT_EQ(ArgValue("", "grid"), "");
}

TEST(Args, OnlyTopLevelKeysMatchAndStringsAreRespected) {
  // "grid" inside a string value and inside a nested object are not the member.
  const std::string args = R"("name": "a \"grid\": [9], b", "inner": {"grid": [8]}, "grid": [1, 2])";
  EXPECT_EQ(ArgValue(args, "grid"), "[1, 2]");
  EXPECT_EQ(ArgValue(args, "name"), R"("a \"grid\": [9], b")");
  EXPECT_EQ(ArgValue(R"("s": "x, y", "n": 3)", "n"), "3");
  // Malformed text: nothing, never a crash.
  EXPECT_EQ(ArgValue("\"grid\" [1]", "grid"), "");
  EXPECT_EQ(ArgValue("\"unterminated", "grid"), "");
  EXPECT_EQ(ArgValue("grid: 1", "grid"), "");
}

TEST(Args, CompactJsonDropsWhitespaceOutsideStringsOnly) {
  EXPECT_EQ(CompactJson("[\n 30,\n 4 , 1 ]"), "[30,4,1]");
  EXPECT_EQ(CompactJson(R"("Input Dims": [[2, 3], []], "Name": "a b\tc")"), R"("Input Dims":[[2,3],[]],"Name":"a b\tc")");
  EXPECT_EQ(CompactJson(""), "");
}

TEST(Args, ShapesAreOneShortLine) {
  EXPECT_EQ(ShapesText("[[8944, 1024], [1024, 2816]]"), "[8944,1024]x[1024,2816]");
  EXPECT_EQ(ShapesText("[\n  [\n    888,\n    3072\n  ],\n  [],\n  []\n]"), "[888,3072]x[]x[]");
  EXPECT_EQ(ShapesText("[[2, 3]]"), "[2,3]");
  EXPECT_EQ(ShapesText("[]"), "");
  EXPECT_EQ(ShapesText("not a list"), "notalist");
}

TEST(Args, TextNumbersAndSizesReadTheSameHoweverWritten) {
  const std::string_view args = R"("Process Group Name": "0", "In msg nelems": 6637568, "bytes": "64",)"
                                "\"grid\": [\n 30,\n 4,\n 1\n ], \"block\": [128], \"bad\": [1, x]";
  EXPECT_EQ(ArgText(args, "Process Group Name"), "0");
  EXPECT_EQ(ArgText(args, "missing"), "");
  EXPECT_EQ(ArgNumber(args, "In msg nelems"), 6637568.0);
  EXPECT_EQ(ArgNumber(args, "bytes"), 64.0);  // a quoted number
  EXPECT_FALSE(ArgNumber(args, "grid").has_value());
  EXPECT_EQ(ArgDims(args, "grid"), (std::vector<int64_t>{30, 4, 1}));
  EXPECT_EQ(ArgDims(args, "block"), (std::vector<int64_t>{128}));
  EXPECT_TRUE(ArgDims(args, "bad").empty());
  EXPECT_TRUE(ArgDims(args, "missing").empty());
}

}  // namespace
}  // namespace tierscope
