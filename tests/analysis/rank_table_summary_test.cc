// Per-rank tables of many-rank jobs in text: the highest and lowest rows by the table's
// headline measure and its distribution over every row; small jobs and other tables whole.
#include "analysis/rank_table_summary.h"

#include <gtest/gtest.h>

#include <string>

namespace tierscope {
namespace {

Table Ranks(int n) {
  Table t;
  t.name = "temporal_breakdown";
  t.columns = {"Rank", "Span (ns)", "Idle (%)"};
  for (int r = 0; r < n; ++r) t.AddRow({int64_t{r}, int64_t{1000}, double(r % 10) + (r == 7 ? 50 : 0)});
  t.notes.push_back("a note of the report");
  return t;
}

TEST(RankTableSummary, ManyRanksShowTheEndsAndTheSpread) {
  const auto s = SummarizeRankTable(Ranks(100));
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->rows.size(), 10u);
  EXPECT_EQ(std::get<int64_t>(s->rows.front()[0]), 7);  // the headline column: Idle (%), highest first
  EXPECT_EQ(std::get<double>(s->rows.front()[2]), 57.0);
  EXPECT_EQ(std::get<double>(s->rows.back()[2]), 0.0);
  ASSERT_GE(s->notes.size(), 3u);
  EXPECT_NE(s->notes[0].find("Of 100 ranks (100 rows), the 5 highest and 5 lowest by Idle (%)"), std::string::npos)
      << s->notes[0];
  EXPECT_NE(s->notes[1].find("min 0 ("), std::string::npos) << s->notes[1];
  EXPECT_NE(s->notes[1].find("median 4.500"), std::string::npos) << s->notes[1];
  EXPECT_NE(s->notes[1].find("max 57 (rank 7)"), std::string::npos) << s->notes[1];
  EXPECT_EQ(s->notes.back(), "a note of the report");
}

// kernel_type_breakdown writes ranks as text beside an "all" row; a rank without device
// events has '-' for its value: counted and named, not dropped in silence.
TEST(RankTableSummary, TextRanksAllRowsAndMissingValuesAreKept) {
  Table t;
  t.name = "kernel_type_breakdown";
  t.columns = {"Rank", "Time (ns)", "Share (%)", "Types"};
  for (int r = 0; r < 40; ++r) {
    t.AddRow({std::to_string(r), r == 5 ? Cell(std::string("-")) : Cell(int64_t{100 + r}), 1.0, std::string("comp")});
  }
  t.AddRow({std::string("all"), int64_t{99999}, 100.0, std::string("comp")});
  const auto s = SummarizeRankTable(t);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->rows.size(), 11u);  // 5 highest, 5 lowest, the "all" row
  EXPECT_EQ(std::get<std::string>(s->rows.front()[0]), "39");
  EXPECT_EQ(std::get<std::string>(s->rows.back()[0]), "all");
  bool named = false;
  for (const std::string& n : s->notes) named |= n.find("1 row(s) without Time (ns) ('-'), not shown: rank 5") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(RankTableSummary, SmallJobsAndOtherTablesAreShownWhole) {
  EXPECT_FALSE(SummarizeRankTable(Ranks(16)).has_value());
  Table other = Ranks(100);
  other.columns[0] = "Kernel";
  EXPECT_FALSE(SummarizeRankTable(other).has_value());
  // Fewer value rows than twice the shown count: each row once.
  const auto s = SummarizeRankTable(Ranks(17), 16, 10);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->rows.size(), 17u);
}

}  // namespace
}  // namespace tierscope
