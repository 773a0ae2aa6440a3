// Each matched collective's arrivals, rank by rank, against the median rank's.
#include "analysis/straggler_arrivals.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "core/stats.h"

namespace tierscope {

nlohmann::json StragglerArrivals(const Stragglers& s, const std::vector<RankCollectivesOf>& ranks, size_t limit) {
  struct Row {
    const JoinedCalls* joined;
    std::vector<std::optional<double>> behind;  // per rank
    double spread = 0;
  };
  std::vector<Row> rows;
  for (const JoinedCalls& j : s.joined) {
    if (j.p2p || j.calls.size() < 2) continue;
    Row row{&j, std::vector<std::optional<double>>(ranks.size())};
    std::vector<double> arrive;
    for (const auto& [r, c] : j.calls) {
      if (r >= ranks.size() || r >= s.ranks.size() || c >= ranks[r].collectives->calls.size()) continue;
      arrive.push_back(static_cast<double>(ranks[r].collectives->calls[c].arrive_ns - s.ranks[r].offset_ns));
      row.behind[r] = arrive.back();
    }
    if (arrive.size() < 2) continue;
    const double median = Median(arrive);
    for (std::optional<double>& b : row.behind) {
      if (b) *b -= median;
    }
    const auto [lo, hi] = std::minmax_element(arrive.begin(), arrive.end());
    row.spread = *hi - *lo;
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return nullptr;
  const size_t matched = rows.size();
  if (rows.size() > limit) {  // the widest spreads, kept in their order
    std::vector<size_t> order(rows.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rows[a].spread > rows[b].spread; });
    order.resize(limit);
    std::sort(order.begin(), order.end());
    std::vector<Row> kept;
    for (size_t i : order) kept.push_back(std::move(rows[i]));
    rows = std::move(kept);
  }
  nlohmann::json numbers = nlohmann::json::array(), collectives = nlohmann::json::array(),
                 behind = nlohmann::json::array();
  for (const RankCollectivesOf& r : ranks) numbers.push_back(r.rank);
  for (const Row& row : rows) {
    collectives.push_back({{"iteration", row.joined->iteration}, {"index", row.joined->index}, {"name", row.joined->name}});
    nlohmann::json cells = nlohmann::json::array();
    for (const std::optional<double>& b : row.behind) cells.push_back(b ? nlohmann::json(std::llround(*b)) : nlohmann::json());
    behind.push_back(std::move(cells));
  }
  return {{"ranks", numbers}, {"collectives", collectives}, {"behind_ns", behind}, {"matched", matched},
          {"shown", rows.size()}};
}

}  // namespace tierscope
