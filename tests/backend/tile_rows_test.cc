// How a GEMM's rows are cut into its tasks' row blocks (backend/cpu/tile_rows.h).
#include "backend/cpu/tile_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tierscope {
namespace {

// The rows each worker gets when the pool hands worker w the blocks
// [blocks * w / workers, blocks * (w + 1) / workers).
std::vector<int64_t> Shares(const TileRows& t, int workers) {
  std::vector<int64_t> s(static_cast<size_t>(workers), 0);
  for (int w = 0; w < workers; ++w) {
    for (int64_t b = t.blocks * w / workers; b < t.blocks * (w + 1) / workers; ++b) s[w] += t.rows(b);
  }
  return s;
}

TEST(TileRowsTest, BlocksCoverEveryRowOnceInWholeGranulesOfAtMostTheMostRows) {
  for (int workers : {1, 2, 3, 16}) {
    for (int64_t granule : {8, 16}) {
      for (int64_t m = 1; m <= 700; ++m) {
        const TileRows t = SplitTileRows(m, 48, granule, workers);
        const std::string what = std::to_string(m) + " rows, granule " + std::to_string(granule) + ", " +
                                 std::to_string(workers) + " workers";
        ASSERT_GE(t.blocks, 1) << what;
        ASSERT_EQ(t.begin(0), 0) << what;
        ASSERT_EQ(t.begin(t.blocks), m) << what;
        for (int64_t b = 0; b < t.blocks; ++b) {
          ASSERT_GT(t.rows(b), 0) << what << " block " << b;
          ASSERT_LE(t.rows(b), 48) << what << " block " << b;
          ASSERT_EQ(t.begin(b) % granule, 0) << what << " block " << b;
        }
      }
    }
  }
}

TEST(TileRowsTest, FewRowsAreSharedEquallyAmongTheWorkers) {
  // A serial run's sample (128 rows) on 2 workers: four blocks of 32, where blocks of 48
  // gave one worker 96 rows and the other 32.
  const TileRows serial = SplitTileRows(128, 48, 8, 2);
  EXPECT_EQ(serial.blocks, 4);
  EXPECT_EQ(Shares(serial, 2), (std::vector<int64_t>{64, 64}));
  // Within two granules of each other (one shared out, one the last block's part) wherever
  // there are fewer than 4 blocks a worker.
  for (int workers : {2, 3, 4}) {
    for (int64_t m = 8 * workers; m <= 48 * 4 * workers; ++m) {
      const TileRows t = SplitTileRows(m, 48, 8, workers);
      if (t.blocks >= 4 * workers) continue;
      const std::vector<int64_t> s = Shares(t, workers);
      const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
      EXPECT_LT(*hi - *lo, 2 * 8) << m << " rows, " << workers << " workers";
    }
  }
}

TEST(TileRowsTest, ManyRowsKeepBlocksOfTheMostRowsAndNoRowsNone) {
  const TileRows big = SplitTileRows(1024, 48, 8, 2);
  EXPECT_EQ(big.blocks, 22);
  for (int64_t b = 0; b + 1 < big.blocks; ++b) EXPECT_EQ(big.rows(b), 48);
  EXPECT_EQ(big.rows(21), 16);
  EXPECT_EQ(big.most_rows(), 48);
  EXPECT_EQ(SplitTileRows(0, 48, 8, 2).blocks, 0);
  EXPECT_EQ(SplitTileRows(0, 48, 8, 2).begin(0), 0);
  EXPECT_EQ(SplitTileRows(40, 48, 8, 2).most_rows(), 24);  // blocks of 16 and 24
  EXPECT_EQ(SplitTileRows(128, 48, 8, 1).blocks, 3);  // one worker: nothing to balance
}

TEST(TileRowsTest, WholeRowTasksGiveEveryWorkerAsManyRowsWithinAGranule) {
  // MiniLM's INT8 FFN-up in a 1,024-row block on 2 workers: 22 blocks of 48 or 32 rows,
  // 512 a worker (uniform 48-row blocks gave 528 and 496).
  const TileRows block = SplitRowTasks(1024, 48, 16, 2);
  EXPECT_EQ(block.blocks, 22);
  EXPECT_EQ(block.most_rows(), 48);
  EXPECT_EQ(Shares(block, 2), (std::vector<int64_t>{512, 512}));
  // Few rows: blocks of 32 or 16 as the codes path had them (at least 4 a worker where the
  // granules allow).
  EXPECT_EQ(SplitRowTasks(128, 48, 16, 2).blocks, 8);
  EXPECT_EQ(SplitRowTasks(0, 48, 16, 2).blocks, 0);
  for (int workers : {1, 2, 3, 4}) {
    for (int64_t m = 1; m <= 2048; ++m) {
      const TileRows t = SplitRowTasks(m, 48, 16, workers);
      const std::string what = std::to_string(m) + " rows, " + std::to_string(workers) + " workers";
      ASSERT_EQ(t.begin(0), 0) << what;
      ASSERT_EQ(t.begin(t.blocks), m) << what;
      for (int64_t b = 0; b < t.blocks; ++b) {
        ASSERT_GT(t.rows(b), 0) << what << " block " << b;
        ASSERT_LE(t.rows(b), 48) << what << " block " << b;
        ASSERT_EQ(t.begin(b) % 16, 0) << what << " block " << b;
      }
      if (t.blocks < t.granules) ASSERT_EQ(t.blocks % workers, 0) << what;
      const std::vector<int64_t> s = Shares(t, workers);
      const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
      // Within a granule, but for the last block's part (m need not fill its granule).
      ASSERT_LE(*hi - *lo, 16 + (16 - m % 16) % 16) << what;
    }
  }
}

}  // namespace
}  // namespace tierscope
