// Per-rank tables of many-rank jobs, summarised for text (rank_table_summary.h).
#include "analysis/rank_table_summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/stats.h"

namespace tierscope {
namespace {

// The measure each report is read by; other tables: their first numeric column.
const std::map<std::string, std::string>& HeadlineColumns() {
  static const auto* m = new std::map<std::string, std::string>{
      {"ranks", "Events"},
      {"temporal_breakdown", "Idle (%)"},
      {"kernel_type_breakdown", "Time (ns)"},
      {"comm_comp_overlap", "Overlap (%)"},
      {"idle_time_breakdown", "Host wait (ns)"},
      {"kernel_launch_stats", "Launches"},
      {"queue_length", "Max"},
      {"straggler_ranks", "Late total (ns)"},
      {"job_diff_ranks", "Span new (ns)"},
  };
  return *m;
}

std::optional<double> Number(const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&c)) return *d;
  return std::nullopt;
}

std::string Short(double v) { return CellText(Cell(v)); }

// A row's rank: a number, or a string of digits (kernel_type_breakdown writes ranks as
// text beside its "all" row); nullopt for a row of no rank.
std::optional<int64_t> RankOf(const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return *i;
  const auto* s = std::get_if<std::string>(&c);
  if (s == nullptr || s->empty() || s->size() > 9 || s->find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(*s);
}

}  // namespace

std::optional<Table> SummarizeRankTable(const Table& t, size_t max_ranks, size_t shown) {
  if (t.columns.empty() || t.columns.front() != "Rank") return std::nullopt;
  std::set<int64_t> ranks;
  for (const auto& row : t.rows) {
    if (const auto r = RankOf(row.front())) ranks.insert(*r);
  }
  if (ranks.size() <= max_ranks) return std::nullopt;
  size_t key = t.columns.size();
  if (auto it = HeadlineColumns().find(t.name); it != HeadlineColumns().end()) {
    key = static_cast<size_t>(std::find(t.columns.begin(), t.columns.end(), it->second) - t.columns.begin());
  }
  for (size_t c = 1; key >= t.columns.size() && c < t.columns.size(); ++c) {
    for (const auto& row : t.rows) {
      if (c < row.size() && Number(row[c])) {
        key = c;
        break;
      }
    }
  }
  if (key >= t.columns.size()) return std::nullopt;
  std::vector<size_t> order;  // the ranks' rows with a value, highest first (ties: table order)
  std::vector<size_t> no_rank;  // rows of no rank ("all"): always shown
  std::vector<std::string> no_value;  // ranks whose row has no value ('-')
  for (size_t i = 0; i < t.rows.size(); ++i) {
    if (!RankOf(t.rows[i].front())) {
      no_rank.push_back(i);
    } else if (key < t.rows[i].size() && Number(t.rows[i][key])) {
      order.push_back(i);
    } else {
      no_value.push_back(CellText(t.rows[i].front()));
    }
  }
  if (order.empty()) return std::nullopt;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return *Number(t.rows[a][key]) > *Number(t.rows[b][key]); });
  Table out;
  out.name = t.name;
  out.title = t.title;
  out.columns = t.columns;
  std::vector<size_t> pick;
  for (size_t i = 0; i < order.size() && i < shown; ++i) pick.push_back(order[i]);
  for (size_t i = std::max(order.size() > shown ? shown : order.size(), order.size() - std::min(order.size(), shown));
       i < order.size(); ++i) {
    pick.push_back(order[i]);
  }
  for (size_t i : pick) out.rows.push_back(t.rows[i]);
  for (size_t i : no_rank) out.rows.push_back(t.rows[i]);
  std::vector<double> values;
  for (size_t i : order) values.push_back(*Number(t.rows[i][key]));
  std::sort(values.begin(), values.end());
  const auto rank_of = [&](size_t row) { return CellText(t.rows[row].front()); };
  out.notes.push_back("Of " + std::to_string(ranks.size()) + " ranks (" + std::to_string(t.rows.size()) +
                      " rows), the " + std::to_string(std::min(shown, order.size())) + " highest and " +
                      std::to_string(pick.size() - std::min(shown, order.size())) + " lowest by " + t.columns[key] +
                      "; every row: --format json or csv.");
  out.notes.push_back(t.columns[key] + " over the rows: min " + Short(values.front()) + " (rank " +
                      rank_of(order.back()) + "), P25 " + Short(Percentile(values, 25)) + ", median " +
                      Short(Percentile(values, 50)) + ", P75 " + Short(Percentile(values, 75)) + ", max " +
                      Short(values.back()) + " (rank " + rank_of(order.front()) + ").");
  if (!no_value.empty()) {
    std::string list;
    for (size_t i = 0; i < no_value.size() && i < 8; ++i) list += (i ? ", " : "") + no_value[i];
    if (no_value.size() > 8) list += " and " + std::to_string(no_value.size() - 8) + " more";
    out.notes.push_back(std::to_string(no_value.size()) + " row(s) without " + t.columns[key] + " ('-'), not shown: rank " +
                        list + ".");
  }
  for (const std::string& n : t.notes) out.notes.push_back(n);
  return out;
}

}  // namespace tierscope
