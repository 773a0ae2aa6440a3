// Checkpoint key layouts: BertModel, BertForPreTraining (`bert.` + `cls.*`), legacy
// gamma/beta, buffers; and errors that name the tensor.
#include "model/checkpoint.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

TensorMap MapWith(const std::vector<std::pair<std::string, std::vector<int64_t>>>& entries) {
  static const float kZeros[64] = {};
  TensorMap m;
  m.source = "ck.safetensors";
  for (const auto& [name, shape] : entries) {
    HostTensor t;
    t.dtype = DType::kF32;
    t.shape = shape;
    t.data = reinterpret_cast<const std::byte*>(kZeros);
    t.bytes = static_cast<size_t>(t.numel()) * 4;
    m.tensors[name] = t;
  }
  return m;
}

TEST(CheckpointTest, CanonicalKeysCoverTheLayoutsRealCheckpointsUse) {
  EXPECT_EQ(CanonicalBertKey("embeddings.word_embeddings.weight"), "embeddings.word_embeddings.weight");
  EXPECT_EQ(CanonicalBertKey("bert.encoder.layer.0.output.dense.bias"), "encoder.layer.0.output.dense.bias");
  EXPECT_EQ(CanonicalBertKey("bert.embeddings.LayerNorm.gamma"), "embeddings.LayerNorm.weight");
  EXPECT_EQ(CanonicalBertKey("encoder.layer.1.attention.output.LayerNorm.beta"),
            "encoder.layer.1.attention.output.LayerNorm.bias");
  EXPECT_EQ(CanonicalBertKey("cls.predictions.decoder.weight"), "");
  EXPECT_EQ(CanonicalBertKey("bert.embeddings.position_ids"), "");
}

TEST(CheckpointTest, PretrainingLayoutResolvesAndIgnoresHeads) {
  auto c = Checkpoint::FromTensorMap(MapWith({{"bert.embeddings.LayerNorm.gamma", {4}},
                                              {"cls.predictions.bias", {4}},
                                              {"bert.embeddings.position_ids", {1, 4}}}));
  ASSERT_TRUE(c.ok());
  auto t = c->Get("embeddings.LayerNorm.weight", {4});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(c->ignored().size(), 2u);
}

TEST(CheckpointTest, TwoKeysForOneWeightIsAnError) {
  auto c = Checkpoint::FromTensorMap(MapWith({{"bert.pooler.dense.bias", {4}}, {"pooler.dense.bias", {4}}}));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "pooler.dense.bias"));
}

TEST(CheckpointTest, MissingTensorIsNamed) {
  auto c = Checkpoint::FromTensorMap(MapWith({}));
  ASSERT_TRUE(c.ok());
  auto t = c->Get("encoder.layer.0.output.dense.weight", {4, 4});
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(t.status().message(), "ck.safetensors"));
  EXPECT_TRUE(Contains(t.status().message(), "missing tensor 'encoder.layer.0.output.dense.weight'"));
}

TEST(CheckpointTest, WrongShapeNamesTheStoredKeyAndBothShapes) {
  auto c = Checkpoint::FromTensorMap(MapWith({{"bert.pooler.dense.weight", {4, 2}}}));
  ASSERT_TRUE(c.ok());
  auto t = c->Get("pooler.dense.weight", {4, 4});
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(t.status().message(), "'bert.pooler.dense.weight'"));
  EXPECT_TRUE(Contains(t.status().message(), "[4, 2]"));
  EXPECT_TRUE(Contains(t.status().message(), "expected [4, 4]"));
}

TEST(CheckpointTest, EncoderWeightsNoOneAskedForAreListedAsStored) {
  // A config of one layer over a two-layer checkpoint: layer 1 is left out, and said.
  auto c = Checkpoint::FromTensorMap(MapWith({{"bert.encoder.layer.0.output.dense.bias", {4}},
                                              {"bert.encoder.layer.1.output.dense.bias", {4}},
                                              {"bert.encoder.layer.1.output.LayerNorm.gamma", {4}},
                                              {"cls.predictions.bias", {4}}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->Unused().size(), 3u);  // nothing asked for yet; the head is ignored, not unused
  ASSERT_TRUE(c->Get("encoder.layer.0.output.dense.bias", {4}).ok());
  EXPECT_EQ(c->Unused(), (std::vector<std::string>{"bert.encoder.layer.1.output.LayerNorm.gamma",
                                                   "bert.encoder.layer.1.output.dense.bias"}));
  ASSERT_TRUE(c->Get("encoder.layer.1.output.dense.bias", {4}).ok());
  ASSERT_TRUE(c->Get("encoder.layer.1.output.LayerNorm.weight", {4}).ok());
  EXPECT_TRUE(c->Unused().empty());
}

TEST(CheckpointTest, DirectoryWithoutWeightsIsNotFound) {
  testing::TempDir dir;
  auto c = Checkpoint::Open(dir.path());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(c.status().message(), "model.safetensors"));
}

}  // namespace
}  // namespace tierscope
