// The stragglers' lateness model: arrivals = block + rank + noise, the worst rank's effect
// against the residual noise, with a Student t tail (Boost.Math) and the ranks counted.
#include "analysis/straggler_lateness_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <boost/math/distributions/students_t.hpp>

#include "analysis/straggler_test_stats.h"
#include "analysis/table.h"

namespace tierscope {
namespace {

// A block: one process group's step, or one collective outside any step.
using BlockKey = std::tuple<std::string, int64_t, size_t>;

BlockKey KeyOf(const TestedCollective& c, size_t i) {
  return c.iteration == kNoStep ? BlockKey{c.group, kNoStep, i} : BlockKey{c.group, c.iteration, 0};
}

std::vector<size_t> Sorted(std::vector<size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// Why it is a valid test where relabelling cannot decide. Each collective's arrivals are
// centred on their mean, so whatever delays a whole collective (a slow step, a larger
// message) drops out; within a block the centred arrivals are averaged per rank, giving
// one value per (rank, block). Under the null hypothesis — no rank is late: each value
// is the rank's noise, independent between blocks — the worst rank's mean over the B
// blocks against the residual spread of all R x B values is Student-t with (R-1)(B-1)
// degrees of freedom; the rank is picked from R after looking, so p is R times the tail
// (Bonferroni). Averaging per block first is what keeps a rank slowed for one whole step
// by chance from passing: however large, one block's delay on one rank gives F = 1
// (t = 1.7 at 4 ranks x 4 steps, p = 0.23), since it inflates the residual as much as
// the rank's mean.
//
// What it assumes, and what guards the rest. The t tail is exact for normal noise and
// close for any light-tailed one (tested: uniform, a sum of uniforms). Noise with rare
// large delays is not normal: a delay that strikes the same rank in 2 of 3 steps passes
// a normal model (t = 5.3 at 8 ranks). So a finding also needs the rank latest in every
// block (`latest`, StragglerFindings) and 3 blocks at least: rare delays must then strike
// the same rank in each of them, with chance n^(1-B) at most of the patterns where one
// rank a block is struck — the relabelling's floor, which the finding states as what is
// not ruled out (tested: delays of 20 ms on 1 arrival in 10 stay below alpha).
void FitLatenessModel(const std::vector<TestedCollective>& c, size_t w, Stragglers* s) {
  LatenessModel& m = s->model;
  m = LatenessModel{};
  m.ran = true;
  std::map<BlockKey, std::vector<size_t>> blocks;  // the collectives of each block rank w took part in
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].arrive_ns.size() != c[i].who.size()) continue;
    if (std::find(c[i].who.begin(), c[i].who.end(), w) == c[i].who.end()) continue;
    blocks[KeyOf(c[i], i)].push_back(i);
  }
  std::map<std::vector<size_t>, int64_t> sets;  // the ranks of a block -> how many blocks
  for (const auto& [key, members] : blocks) ++sets[Sorted(c[members.front()].who)];
  std::vector<size_t> who;
  int64_t most = 0;
  for (const auto& [ranks, count] : sets) {
    if (count > most) who = ranks, most = count;
  }
  const size_t n = who.size();
  std::vector<std::vector<double>> y;  // per block: each rank's arrival after the collective's mean, averaged
  for (const auto& [key, members] : blocks) {
    if (Sorted(c[members.front()].who) != who) continue;
    std::vector<double> row(n, 0);
    for (size_t i : members) {
      double mean = 0;
      for (double a : c[i].arrive_ns) mean += a;
      mean /= static_cast<double>(c[i].arrive_ns.size());
      for (size_t k = 0; k < c[i].who.size(); ++k) {
        const size_t at = static_cast<size_t>(std::lower_bound(who.begin(), who.end(), c[i].who[k]) - who.begin());
        row[at] += (c[i].arrive_ns[k] - mean) / static_cast<double>(members.size());
      }
    }
    m.by_step = m.by_step || std::get<1>(key) != kNoStep;
    y.push_back(std::move(row));
  }
  const size_t b = y.size();
  m.ranks = static_cast<int64_t>(n);
  m.blocks = static_cast<int64_t>(b);
  if (n < 2 || m.blocks < kLatenessModelMinBlocks) return;
  m.df = static_cast<int64_t>((n - 1) * (b - 1));
  m.block_floor = std::pow(static_cast<double>(n), 1.0 - static_cast<double>(b));
  std::vector<double> effect(n, 0);  // each rank's mean over the blocks (the blocks' means are 0 by construction)
  for (const std::vector<double>& row : y) {
    for (size_t r = 0; r < n; ++r) effect[r] += row[r] / static_cast<double>(b);
  }
  double ss = 0;
  for (const std::vector<double>& row : y) {
    for (size_t r = 0; r < n; ++r) ss += (row[r] - effect[r]) * (row[r] - effect[r]);
  }
  m.sigma_ns = std::sqrt(ss / static_cast<double>(m.df));
  m.floored = m.sigma_ns < kArrivalResolutionNs;
  const double sigma = std::max(m.sigma_ns, kArrivalResolutionNs);
  const size_t at = static_cast<size_t>(std::lower_bound(who.begin(), who.end(), w) - who.begin());
  m.effect_ns = effect[at];
  for (const std::vector<double>& row : y) {
    bool latest = true;
    for (size_t r = 0; r < n; ++r) latest = latest && (r == at || row[r] < row[at]);
    m.latest += latest ? 1 : 0;
  }
  m.t = m.effect_ns / (sigma * std::sqrt(static_cast<double>(n - 1) / static_cast<double>(n * b)));
  const boost::math::students_t dist(static_cast<double>(m.df));
  m.p = std::min(1.0, static_cast<double>(n) * boost::math::cdf(boost::math::complement(dist, m.t)));
}

std::string LatenessModelText(const LatenessModel& m, int rank) {
  const std::string blocks = std::to_string(m.blocks) + (m.by_step ? (m.blocks == 1 ? " step" : " steps")
                                                                   : (m.blocks == 1 ? " collective" : " collectives"));
  const std::string shape = blocks + " on " + std::to_string(m.ranks) + " ranks";
  if (m.df < 1) {
    return shape + (m.blocks == 1 ? " is" : " are") + " too few to weigh the lateness against the arrivals' noise: the "
           "model of " + (m.by_step ? "step" : "collective") + " and rank needs " +
           std::to_string(kLatenessModelMinBlocks) + " of them at least (with fewer, a delay that struck the same rank "
           "in each by chance would pass it)";
  }
  char t[32];
  std::snprintf(t, sizeof(t), "%.3g", m.t);
  return "rank " + std::to_string(rank) + " arrives " + FormatNs(m.effect_ns) + " after the ranks' mean on average over " +
         shape + ", against a residual spread of " + FormatNs(m.sigma_ns) +
         (m.floored ? " (taken as the timestamps' resolution, " + FormatNs(kArrivalResolutionNs) + ")" : "") +
         ": t = " + t + " on " + std::to_string(m.df) + " degrees of freedom in a model of " +
         (m.by_step ? "step" : "collective") + " and rank, p = " + PValueText(m.p) + " with the " +
         std::to_string(m.ranks) + " ranks counted; latest in " + std::to_string(m.latest) + " of the " + blocks;
}

}  // namespace tierscope
