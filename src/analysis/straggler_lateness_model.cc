// The stragglers' lateness model: arrivals = block + rank + noise, the worst rank's effect
// against the residual noise, with a Student t tail (Boost.Math) and the ranks counted.
#include "analysis/straggler_lateness_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include <boost/math/distributions/students_t.hpp>

#include "analysis/straggler_test_stats.h"
#include "analysis/table.h"

namespace tierscope {
namespace {

// A block: one step of one set of ranks (every process group over those ranks in it), or
// one collective outside any step.
using BlockKey = std::tuple<std::vector<size_t>, int64_t, size_t>;

std::vector<size_t> Sorted(std::vector<size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

BlockKey KeyOf(const TestedCollective& c, size_t i) {
  return c.iteration == kNoStep ? BlockKey{Sorted(c.who), kNoStep, i} : BlockKey{Sorted(c.who), c.iteration, 0};
}

// The upper tail of Student's t with `df` degrees of freedom at `t`.
double TTail(double t, double df) {
  return boost::math::cdf(boost::math::complement(boost::math::students_t(df), t));
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
// What it assumes, and what guards the rest. The pooled t is exact for normal noise alike
// on every rank and independent between blocks, and close for light-tailed noise (tested:
// uniform, a sum of uniforms). A rank noisier than the others is covered by the second t,
// on its own B values alone (valid whatever its spread against theirs; tested with a rank
// 3x as noisy); p is the larger. Noise with rare large delays is not normal: a delay that
// strikes the same rank in 2 of 3 steps passes a normal model (t = 5.3 at 8 ranks). So a
// finding also needs the rank latest in every block (`latest`, StragglerFindings) and 3
// blocks at least. What no model of these few blocks can rule out is a delay that strikes
// one rank a block at random and happened to strike the same one each time: chance
// n^(1-B), the relabelling's floor (0.25 for 2 ranks x 3 steps), which the text and the
// finding state beside p (tested: the rate of findings under that noise is that floor).
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
  // The set of ranks most blocks share; its steps if it has any, else its collectives.
  std::map<std::vector<size_t>, std::pair<int64_t, int64_t>> sets;  // ranks -> (steps, collectives outside any)
  for (const auto& [key, members] : blocks) {
    auto& [steps, lone] = sets[std::get<0>(key)];
    ++(std::get<1>(key) == kNoStep ? lone : steps);
  }
  std::vector<size_t> who;
  int64_t most = 0;
  for (const auto& [ranks, count] : sets) {
    const int64_t k = count.first > 0 ? count.first : count.second;
    if (k > most) who = ranks, most = k;
  }
  m.by_step = !who.empty() && sets[who].first > 0;
  const size_t n = who.size();
  std::vector<std::vector<double>> y;  // per block: each rank's arrival after the collective's mean, averaged
  for (const auto& [key, members] : blocks) {
    if (std::get<0>(key) != who || (std::get<1>(key) != kNoStep) != m.by_step) continue;
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
  const size_t at = static_cast<size_t>(std::lower_bound(who.begin(), who.end(), w) - who.begin());
  double ss = 0, own = 0;
  for (const std::vector<double>& row : y) {
    for (size_t r = 0; r < n; ++r) ss += (row[r] - effect[r]) * (row[r] - effect[r]);
    own += (row[at] - effect[at]) * (row[at] - effect[at]);
  }
  m.effect_ns = effect[at];
  for (const std::vector<double>& row : y) {
    bool latest = true;
    for (size_t r = 0; r < n; ++r) latest = latest && (r == at || row[r] < row[at]);
    m.latest += latest ? 1 : 0;
  }
  // Pooled: every rank's residual, (n-1)(B-1) degrees of freedom, exact when every rank's
  // noise is alike. Own: the rank's B values alone, B-1 of them, exact whatever its noise
  // is against the others'. p is the larger; the rank was picked from all of the job's.
  m.sigma_ns = std::sqrt(ss / static_cast<double>(m.df));
  m.own_sigma_ns = std::sqrt(own / static_cast<double>(b - 1));
  m.floored = std::min(m.sigma_ns, m.own_sigma_ns) < kArrivalResolutionNs;
  const double pooled_se = std::max(m.sigma_ns, kArrivalResolutionNs) *
                           std::sqrt(static_cast<double>(n - 1) / static_cast<double>(n * b));
  const double own_se = std::max(m.own_sigma_ns, kArrivalResolutionNs) / std::sqrt(static_cast<double>(b));
  m.t = m.effect_ns / pooled_se;
  m.own_t = m.effect_ns / own_se;
  m.picked_from = static_cast<int64_t>(s->ranks.size());
  const double tail = std::max(TTail(m.t, static_cast<double>(m.df)), TTail(m.own_t, static_cast<double>(b - 1)));
  m.p = std::min(1.0, static_cast<double>(m.picked_from) * tail);
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
  const auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3g", v);
    return std::string(buf);
  };
  const std::string unit = m.by_step ? "step" : "collective";
  return "rank " + std::to_string(rank) + " arrives " + FormatNs(m.effect_ns) + " after the ranks' mean on average over " +
         shape + ", against a residual spread of " + FormatNs(m.sigma_ns) + " over the ranks (t = " + num(m.t) + " on " +
         std::to_string(m.df) + " degrees of freedom in a model of " + unit + " and rank) and " +
         FormatNs(m.own_sigma_ns) + " of its own (t = " + num(m.own_t) + " on " + std::to_string(m.blocks - 1) + ")" +
         (m.floored ? ", a spread below the timestamps' resolution taken as " + FormatNs(kArrivalResolutionNs) : "") +
         ": p = " + PValueText(m.p) + ", the larger tail times the " + std::to_string(m.picked_from) +
         " ranks it was picked from; latest in " + std::to_string(m.latest) + " of the " + blocks +
         ". That p assumes arrival noise near normal and independent between " + unit + "s; a delay striking one rank a " +
         unit + " at random would have struck the same rank in all " + std::to_string(m.blocks) + " with chance " +
         PValueText(m.block_floor) + ", which these data cannot rule out";
}

}  // namespace tierscope
