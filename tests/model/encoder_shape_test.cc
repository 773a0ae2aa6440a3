// Any encoder's config.json: each family's field names, usable positions, whether the
// layers are BERT's (and so their FLOPs counted), and clear errors.
#include "model/encoder_shape.h"

#include <gtest/gtest.h>

#include "model/bert.h"
#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

TEST(EncoderShape, ReadsDistilBertsOwnFieldNames) {
  auto s = ParseEncoderShape(R"({"model_type": "distilbert", "vocab_size": 1000, "dim": 64, "n_layers": 2,
      "n_heads": 2, "hidden_dim": 128, "max_position_embeddings": 128, "activation": "gelu"})", "d.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->hidden_size, 64);
  EXPECT_EQ(s->layers, 2);
  EXPECT_EQ(s->heads, 2);
  EXPECT_EQ(s->intermediate_size, 128);
  EXPECT_EQ(s->positions, 128);
  EXPECT_TRUE(s->bert_layers);
}

TEST(EncoderShape, DistilBertCountsBertsFlopsLessTheTokenTypeAdd) {
  // Same layers as a BERT of the same sizes; its embedding sums two lookups, not three.
  auto d = ParseEncoderShape(R"({"model_type": "distilbert", "vocab_size": 1000, "dim": 64, "n_layers": 2,
      "n_heads": 2, "hidden_dim": 128})", "d.json");
  auto b = ParseBertConfig(R"({"model_type": "bert", "vocab_size": 1000, "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128})", "b.json");
  ASSERT_TRUE(d.ok() && b.ok());
  const double bert = BertFlopsPerSample(*b, 32, DType::kF32);
  EXPECT_GT(bert, 0);
  EXPECT_DOUBLE_EQ(EncoderFlopsPerSample(*d, 32, DType::kF32), bert - 32.0 * 64);
}

TEST(EncoderShape, BertUsesBertsParserAndItsCountExactly) {
  const std::string text = R"({"model_type": "bert", "hidden_size": 128, "num_hidden_layers": 2,
      "num_attention_heads": 2, "intermediate_size": 512})";
  auto s = ParseEncoderShape(text, "b.json");
  auto b = ParseBertConfig(text, "b.json");
  ASSERT_TRUE(s.ok() && b.ok());
  EXPECT_EQ(s->vocab_size, 30522);  // Hugging Face's default, as the native engine reads it
  EXPECT_EQ(s->positions, 512);
  EXPECT_DOUBLE_EQ(EncoderFlopsPerSample(*s, 128, DType::kBF16), BertFlopsPerSample(*b, 128, DType::kBF16));
}

TEST(EncoderShape, RobertaLosesThePositionsBeforeItsFirst) {
  auto s = ParseEncoderShape(R"({"model_type": "roberta", "vocab_size": 1000, "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128,
      "max_position_embeddings": 514, "pad_token_id": 1})", "r.json");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->positions, 512);
  EXPECT_TRUE(s->bert_layers);
  // pad_token_id 0 leaves one more; absent, Hugging Face's default (1) holds.
  auto zero = ParseEncoderShape(R"({"model_type": "roberta", "vocab_size": 1000, "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 2, "max_position_embeddings": 514, "pad_token_id": 0})", "r.json");
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_EQ(zero->positions, 513);
  auto absent = ParseEncoderShape(R"({"model_type": "xlm-roberta", "vocab_size": 1000, "hidden_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 2, "max_position_embeddings": 514})", "r.json");
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->positions, 512);
}

TEST(EncoderShape, OtherLayersAreNotCounted) {
  // ELECTRA (another family), and a BERT with relative positions or another activation:
  // their work is not BERT's formula, so no FLOPs are claimed.
  for (const char* text :
       {R"({"model_type": "electra", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "intermediate_size": 128})",
        R"({"model_type": "roberta", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "intermediate_size": 128, "position_embedding_type": "relative_key"})",
        R"({"model_type": "distilbert", "vocab_size": 1000, "dim": 64, "n_layers": 2, "n_heads": 2,
            "hidden_dim": 128, "activation": "relu"})"}) {
    auto s = ParseEncoderShape(text, "x.json");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_FALSE(s->bert_layers) << text;
    EXPECT_EQ(EncoderFlopsPerSample(*s, 32, DType::kF32), 0) << text;
  }
}

TEST(EncoderShape, MissingOrBadFieldsAreNamed) {
  auto none = ParseEncoderShape(R"({"model_type": "mystery", "vocab_size": 1000, "n_layers": 2, "n_heads": 2})",
                                "m/config.json");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Contains(none.status().message(), "m/config.json: states no a hidden size")) << none.status().ToString();
  auto text = ParseEncoderShape(R"({"vocab_size": 1000, "dim": "64", "n_layers": 2, "n_heads": 2})", "c.json");
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), "field 'dim' must be an integer")) << text.status().ToString();
  auto huge = ParseEncoderShape(R"({"vocab_size": 1000, "d_model": 1e300, "n_layers": 2, "n_heads": 2})", "c.json");
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(Contains(huge.status().message(), "field 'd_model'")) << huge.status().ToString();
  auto odd = ParseEncoderShape(R"({"vocab_size": 1000, "d_model": 65, "num_layers": 2, "num_heads": 2})", "c.json");
  ASSERT_FALSE(odd.ok());
  EXPECT_TRUE(Contains(odd.status().message(), "not a multiple of 2 heads")) << odd.status().ToString();
  EXPECT_FALSE(ParseEncoderShape("[1, 2]", "c.json").ok());
  EXPECT_FALSE(ParseEncoderShape("{", "c.json").ok());
  EXPECT_FALSE(LoadEncoderShape("/nonexistent/config.json").ok());
}

}  // namespace
}  // namespace tierscope
