// config.json parsing: Hugging Face defaults and clear errors.
#include <gtest/gtest.h>

#include <string>

#include "tierscope/engine.h"
#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

TEST(ConfigTest, AbsentFieldsTakeHuggingFaceDefaults) {
  auto c = ParseBertConfig(R"({"model_type": "bert", "hidden_size": 128,
      "num_attention_heads": 2, "num_hidden_layers": 2, "intermediate_size": 512})", "c.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->hidden_size, 128);
  EXPECT_DOUBLE_EQ(c->layer_norm_eps, 1e-12);
  EXPECT_EQ(c->hidden_act, "gelu");
  EXPECT_EQ(c->type_vocab_size, 2);
  EXPECT_EQ(c->vocab_size, 30522);
  EXPECT_EQ(c->max_position_embeddings, 512);
}

TEST(ConfigTest, ReadsEveryField) {
  auto c = ParseBertConfig(R"({"model_type": "bert", "vocab_size": 1000, "hidden_size": 256,
      "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024,
      "max_position_embeddings": 128, "type_vocab_size": 3, "layer_norm_eps": 1e-7,
      "hidden_act": "gelu", "pad_token_id": 1})", "c.json");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->vocab_size, 1000);
  EXPECT_EQ(c->num_hidden_layers, 4);
  EXPECT_EQ(c->type_vocab_size, 3);
  EXPECT_DOUBLE_EQ(c->layer_norm_eps, 1e-7);
}

TEST(ConfigTest, UnsupportedModelTypeIsAClearError) {
  auto c = ParseBertConfig(R"({"model_type": "roberta"})", "dir/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "dir/config.json"));
  EXPECT_TRUE(Contains(c.status().message(), "model_type 'roberta'"));
}

TEST(ConfigTest, UnsupportedHiddenActIsAClearError) {
  auto c = ParseBertConfig(R"({"model_type": "bert", "hidden_act": "relu"})", "c.json");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "hidden_act 'relu'"));
}

TEST(ConfigTest, WrongTypesAndValuesNameTheField) {
  auto a = ParseBertConfig(R"({"model_type": "bert", "hidden_size": "big"})", "c.json");
  EXPECT_TRUE(Contains(a.status().message(), "'hidden_size'"));
  auto b = ParseBertConfig(R"({"model_type": "bert", "num_attention_heads": 0})", "c.json");
  EXPECT_TRUE(Contains(b.status().message(), "'num_attention_heads'"));
  auto c = ParseBertConfig(R"({"model_type": "bert", "hidden_size": 100, "num_attention_heads": 3})", "c.json");
  EXPECT_TRUE(Contains(c.status().message(), "not a multiple"));
  auto d = ParseBertConfig("{not json", "c.json");
  EXPECT_TRUE(Contains(d.status().message(), "not valid JSON"));
  // A whole float past int64 once read as INT64_MIN ("must be >= 1, got -9223372036854775808").
  auto e = ParseBertConfig(R"({"model_type": "bert", "hidden_size": 1e300})", "c.json");
  EXPECT_EQ(e.status().message(), "c.json: field 'hidden_size' must be a whole number, got 1e+300, which is beyond "
                                  "2^53, where a JSON float stops holding every integer");
  auto g = ParseBertConfig(R"({"model_type": "bert", "hidden_size": 128.5})", "c.json");
  EXPECT_EQ(g.status().message(), "c.json: field 'hidden_size' must be a whole number, got 128.5, which has a fraction");
  // A value nested 200,000 deep is quoted short (its full text once overflowed the stack).
  auto f = ParseBertConfig(R"({"model_type": "bert", "hidden_act": )" + std::string(200000, '[') +
                               std::string(200000, ']') + "}",
                           "c.json");
  EXPECT_EQ(f.status().message(), "c.json: field 'hidden_act' must be a string, got [[[[...]]]]");
}

TEST(ConfigTest, MissingFileIsNotFound) {
  auto c = LoadBertConfig("/nonexistent/config.json");
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tierscope
