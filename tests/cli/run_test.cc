// `tierscope run` input parsing: shapes and types validated with clear messages.
#include "cli/run_command.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

TEST(RunInputsTest, ParsesIdsMaskAndTypes) {
  auto in = ParseInputsJson(R"({"input_ids": [[101, 7, 102], [101, 8, 0]],
      "attention_mask": [[1, 1, 1], [1, 1, 0]], "token_type_ids": [[0, 0, 1], [0, 1, 1]]})", "in.json");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->batch, 2);
  EXPECT_EQ(in->seq_len, 3);
  EXPECT_EQ(in->input_ids[4], 8);
  EXPECT_EQ(in->attention_mask[5], 0);
  EXPECT_EQ(in->token_type_ids[2], 1);
}

TEST(RunInputsTest, MaskAndTypesAreOptional) {
  auto in = ParseInputsJson(R"({"input_ids": [[1, 2]]})", "in.json");
  ASSERT_TRUE(in.ok());
  EXPECT_TRUE(in->attention_mask.empty());
  EXPECT_TRUE(in->token_type_ids.empty());
}

TEST(RunInputsTest, MalformedInputsNameTheFieldAndPosition) {
  auto msg = [](const std::string& text) {
    auto r = ParseInputsJson(text, "in.json");
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_TRUE(Contains(msg(R"({"attention_mask": [[1]]})"), "missing 'input_ids'"));
  EXPECT_TRUE(Contains(msg(R"({"input_ids": [[1, 2], [3]]})"), "'input_ids'[1] has length 1, expected 2"));
  EXPECT_TRUE(Contains(msg(R"({"input_ids": [[1, 2.5]]})"), "'input_ids'[0][1] is not an integer"));
  EXPECT_TRUE(Contains(msg(R"({"input_ids": [[1, 2]], "attention_mask": [[1, 1], [1, 1]]})"),
                       "'attention_mask' has 2 rows"));
  EXPECT_TRUE(Contains(msg(R"({"input_ids": [[1, 2]], "token_type_ids": [[0]]})"), "'token_type_ids'[0]"));
  EXPECT_TRUE(Contains(msg(R"({"input_ids": []})"), "non-empty"));
  EXPECT_TRUE(Contains(msg("[1, 2"), "not valid JSON"));
  // A misspelt key was ignored: the batch ran unmasked.
  EXPECT_EQ(msg(R"({"input_ids": [[1, 2]], "attention_masks": [[1, 0]]})"),
            "in.json: unknown key \"attention_masks\" (the keys are input_ids, attention_mask and token_type_ids)");
}

}  // namespace
}  // namespace tierscope
