// Row blocks: a batch split into runs of consecutive samples (padded) or sequences
// (packed) of at most a given number of token rows, which the forward runs one after
// another, each through every layer, while its activations stay in the CPU's caches.
#ifndef TIERSCOPE_MODEL_ROW_BLOCKS_H_
#define TIERSCOPE_MODEL_ROW_BLOCKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

// Samples (padded) or sequences (packed) [first, first + count) of a batch.
struct RowBlock {
  int64_t first = 0, count = 0;
};

// The blocks of `in`, in order, each of at most `rows` token rows: whole samples of
// seq_len rows, as few blocks as hold them with the samples shared out evenly (one a block
// where a sample is longer: 64 samples in blocks of at most 54 make two of 32, not 54 and
// 10), or whole packed sequences, as many as fit (one a block where a sequence is longer).
// One block of everything where rows <= 0.
std::vector<RowBlock> SplitRowBlocks(const BatchInput& in, int64_t rows);

// The blocks a padded batch of `batch` samples of seq_len rows makes within `rows` rows
// each (SplitRowBlocks): as few as hold it, one where rows <= 0; its largest block holds
// ceil(batch / blocks) samples.
int64_t PaddedBlockCount(int64_t batch, int64_t seq_len, int64_t rows);

// The sub-batch `block` of `in` (a validated batch): its samples or sequences, with their
// ids, mask and token types.
BatchInput SliceBatch(const BatchInput& in, const RowBlock& block);

// The row-block setting `what` (TIERSCOPE_ROW_BLOCK, --row-block) spells `value`: "auto"
// (-1: the backend's choice; also empty), "off" (0) or a count of token rows; anything
// else is an error naming the setting and the value.
StatusOr<int64_t> ParseRowBlockSetting(const std::string& value, const std::string& what);

}  // namespace tierscope

#endif  // TIERSCOPE_MODEL_ROW_BLOCKS_H_
