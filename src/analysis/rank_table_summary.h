// A job's per-rank tables in text, for jobs of many ranks: the rows of the highest and the
// lowest ranks by the table's headline measure and that measure's distribution over every
// row, instead of one row per rank (JSON and CSV keep every row).
#ifndef TIERSCOPE_ANALYSIS_RANK_TABLE_SUMMARY_H_
#define TIERSCOPE_ANALYSIS_RANK_TABLE_SUMMARY_H_

#include <cstddef>
#include <optional>

#include "analysis/table.h"

namespace tierscope {

// Ranks a per-rank table may show whole in text.
inline constexpr size_t kTextRanks = 16;

// The table summarised when its first column is "Rank" and it has more than `max_ranks`
// ranks: the `shown` rows with the highest and as many with the lowest headline value (in
// the table's order of value), and a note with the value's minimum, P25, median, P75 and
// maximum over every row (naming the ranks at the ends). nullopt when the table is shown
// whole.
std::optional<Table> SummarizeRankTable(const Table& table, size_t max_ranks = kTextRanks, size_t shown = 5);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_RANK_TABLE_SUMMARY_H_
