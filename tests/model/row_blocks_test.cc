// Row blocks: how a padded or packed batch splits into runs of whole samples or sequences
// within a count of token rows, the sub-batches cut from it, and the setting's spelling.
#include "model/row_blocks.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tierscope {
namespace {

std::vector<std::pair<int64_t, int64_t>> Pairs(const std::vector<RowBlock>& blocks) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const RowBlock& b : blocks) out.emplace_back(b.first, b.count);
  return out;
}

BatchInput Padded(int64_t batch, int64_t seq) {
  BatchInput in{batch, seq, {}, {}, {}};
  in.input_ids.resize(static_cast<size_t>(batch * seq));
  std::iota(in.input_ids.begin(), in.input_ids.end(), 0);
  return in;
}

BatchInput Packed(const std::vector<int64_t>& lens) {
  BatchInput in{static_cast<int64_t>(lens.size()), 0, {}, {}, {}, lens};
  for (int64_t len : lens) in.seq_len = std::max(in.seq_len, len);
  in.input_ids.resize(static_cast<size_t>(std::accumulate(lens.begin(), lens.end(), int64_t{0})));
  std::iota(in.input_ids.begin(), in.input_ids.end(), 0);
  return in;
}

// As few blocks as hold the samples, shared out evenly (sizes differ by at most one).
TEST(RowBlocksTest, PaddedBatchSplitsIntoWholeSamplesWithinTheRows) {
  using Blocks = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(5, 4), 8)), (Blocks{{0, 1}, {1, 2}, {3, 2}}));
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(5, 4), 11)), (Blocks{{0, 1}, {1, 2}, {3, 2}}));
  EXPECT_EQ(PaddedBlockCount(5, 4, 11), 3);
  EXPECT_EQ(PaddedBlockCount(5, 4, 0), 1);
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(64, 128), 54 * 128)),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 32}, {32, 32}}));
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(64, 128), 8 * 128)).size(), 8u);
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(4, 4), 16)), (std::vector<std::pair<int64_t, int64_t>>{{0, 4}}));
  // A sample longer than the block is a block of its own.
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(3, 100), 30)),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 1}, {2, 1}}));
}

TEST(RowBlocksTest, NoBlockSizeOrOneSampleIsOneBlockOfEverything) {
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(7, 4), 0)), (std::vector<std::pair<int64_t, int64_t>>{{0, 7}}));
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(7, 4), -1)), (std::vector<std::pair<int64_t, int64_t>>{{0, 7}}));
  EXPECT_EQ(Pairs(SplitRowBlocks(Padded(1, 400), 8)), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}}));
  EXPECT_EQ(Pairs(SplitRowBlocks(Packed({900}), 8)), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}}));
}

TEST(RowBlocksTest, PackedBatchSplitsIntoWholeSequencesThatFitTheRows) {
  EXPECT_EQ(Pairs(SplitRowBlocks(Packed({3, 5, 2, 7, 1}), 8)),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 1}, {3, 2}}));
  // A sequence longer than the block runs alone; the next one starts a new block.
  EXPECT_EQ(Pairs(SplitRowBlocks(Packed({2, 10, 1, 1}), 4)),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 1}, {2, 2}}));
}

TEST(RowBlocksTest, BlocksCoverEverySampleOnceInOrder) {
  for (int64_t rows : {1, 3, 64, 1000}) {
    for (const BatchInput& in : {Padded(9, 7), Packed({1, 2, 3, 50, 4, 4, 4, 9})}) {
      int64_t next = 0;
      for (const RowBlock& b : SplitRowBlocks(in, rows)) {
        EXPECT_EQ(b.first, next) << rows;
        EXPECT_GE(b.count, 1) << rows;
        next += b.count;
      }
      EXPECT_EQ(next, in.batch) << rows;
    }
  }
}

TEST(RowBlocksTest, SliceOfAPaddedBatchHoldsItsSamplesIdsMaskAndTypes) {
  BatchInput in = Padded(3, 2);
  in.attention_mask = {1, 1, 1, 0, 1, 1};
  BatchInput s = SliceBatch(in, RowBlock{1, 2});
  EXPECT_EQ(s.batch, 2);
  EXPECT_EQ(s.seq_len, 2);
  EXPECT_EQ(s.input_ids, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(s.attention_mask, (std::vector<int64_t>{1, 0, 1, 1}));
  EXPECT_TRUE(s.token_type_ids.empty());  // absent stays absent (types 0)
  EXPECT_TRUE(s.seq_lens.empty());
}

TEST(RowBlocksTest, SliceOfAPackedBatchHoldsItsSequencesAndTheirLongest) {
  BatchInput in = Packed({3, 5, 2});
  in.token_type_ids.assign(10, 0);
  in.token_type_ids[8] = 1;
  BatchInput s = SliceBatch(in, RowBlock{1, 2});
  EXPECT_EQ(s.batch, 2);
  EXPECT_EQ(s.seq_len, 5);
  EXPECT_EQ(s.seq_lens, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(s.input_ids, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(s.token_type_ids, (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 0}));
  BatchInput last = SliceBatch(in, RowBlock{2, 1});
  EXPECT_EQ(last.seq_len, 2);
  EXPECT_EQ(last.input_ids, (std::vector<int64_t>{8, 9}));
}

TEST(RowBlocksTest, SettingIsAutoOffOrAPositiveRowCountElseAOneLineError) {
  EXPECT_EQ(*ParseRowBlockSetting("", "TIERSCOPE_ROW_BLOCK"), -1);
  EXPECT_EQ(*ParseRowBlockSetting("auto", "TIERSCOPE_ROW_BLOCK"), -1);
  EXPECT_EQ(*ParseRowBlockSetting("off", "--row-block"), 0);
  EXPECT_EQ(*ParseRowBlockSetting("1024", "--row-block"), 1024);
  for (const char* bad : {"0", "-8", "12x", "x", "1e3", " 64", "99999999999999999999"}) {
    auto r = ParseRowBlockSetting(bad, "TIERSCOPE_ROW_BLOCK");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(std::string("TIERSCOPE_ROW_BLOCK=") + bad), std::string::npos);
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace tierscope
