// The stragglers' permutation test: ranks relabelled per collective and per step, floors.
#include "analysis/straggler_test_stats.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "core/splitmix.h"

namespace tierscope {
namespace {

// Collectives that share a key share one relabelling of their ranks.
using BlockKey = std::tuple<std::string, int64_t, size_t>;

// The late collectives (those with a last rank) in blocks. A draw relabels each block's
// ranks at random; only the places of the collectives' last ranks need an image, so each
// draw maps those places to a random sample of the block's ranks without replacement (a
// partial Fisher-Yates, which is uniform whatever order `who` was left in by the draw
// before).
struct Blocks {
  std::vector<std::vector<size_t>> who;        // per block: its ranks (reordered by each draw)
  std::vector<std::vector<size_t>> positions;  // per block: the distinct places (in who) of a last rank
  std::vector<size_t> block, slot;             // per late collective: its block, its index in positions
};

Blocks MakeBlocks(const std::vector<TestedCollective>& c, const std::vector<size_t>& late,
                  const std::vector<BlockKey>& key) {
  Blocks b;
  std::map<BlockKey, size_t> id;
  for (size_t i : late) {
    auto [it, fresh] = id.try_emplace(key[i], b.who.size());
    if (fresh) {
      b.who.push_back(c[i].who);  // one key: one group and step, so the same ranks
      b.positions.emplace_back();
    }
    std::vector<size_t>& places = b.positions[it->second];
    const size_t place = static_cast<size_t>(std::find(c[i].who.begin(), c[i].who.end(), c[i].last) - c[i].who.begin());
    const size_t slot = static_cast<size_t>(std::find(places.begin(), places.end(), place) - places.begin());
    if (slot == places.size()) places.push_back(place);
    b.block.push_back(it->second);
    b.slot.push_back(slot);
  }
  return b;
}

// The share of draws (deterministic seed) in which some rank gathers at least `observed`
// of the waiting, the observed relabelling counted as one: (1 + as large) / (1 + draws).
double RelabelledP(const std::vector<TestedCollective>& c, const std::vector<size_t>& late, Blocks b, size_t n,
                   double observed, int64_t draws) {
  SplitMix64 rng(0x5742'4c4c'4552'5321ull);
  std::vector<std::vector<size_t>> image(b.positions.size());
  for (size_t k = 0; k < image.size(); ++k) image[k].resize(b.positions[k].size());
  std::vector<double> sum(n);
  int64_t as_large = 0;
  for (int64_t d = 0; d < draws; ++d) {
    for (size_t k = 0; k < image.size(); ++k) {
      std::vector<size_t>& w = b.who[k];
      for (size_t j = 0; j < image[k].size(); ++j) {
        std::swap(w[j], w[j + rng.Next() % (w.size() - j)]);
        image[k][j] = w[j];
      }
    }
    std::fill(sum.begin(), sum.end(), 0.0);
    for (size_t q = 0; q < late.size(); ++q) sum[image[b.block[q]][b.slot[q]]] += static_cast<double>(c[late[q]].late_ns);
    if (*std::max_element(sum.begin(), sum.end()) >= observed * (1 - 1e-12)) ++as_large;
  }
  return static_cast<double>(1 + as_large) / static_cast<double>(1 + draws);
}

// The chance that relabelling each of `blocks` (its ranks) at random puts one rank in the
// same rank's place in all of them: the product of 1 / their sizes times the ranks they
// all hold. That rank then gathers all the waiting the first had there, so no data of this
// shape can give a smaller p: n^(1-B) for B blocks of the same n ranks.
double Floor(const std::vector<const std::vector<size_t>*>& blocks, size_t n) {
  if (blocks.empty()) return 1;
  std::vector<size_t> count(n, 0);
  double p = 1;  // exact for blocks of 2, 4, 8 ... ranks; 0 once it underflows, still a floor
  for (const std::vector<size_t>* b : blocks) {
    for (size_t r : *b) ++count[r];
    p /= static_cast<double>(b->size());
  }
  const auto common = std::count(count.begin(), count.end(), blocks.size());
  return std::min(1.0, static_cast<double>(common) * p);
}

// "2 ranks", "2-8 ranks": the sizes of `blocks`.
std::string RanksText(const std::vector<const std::vector<size_t>*>& blocks) {
  size_t lo = SIZE_MAX, hi = 0;
  for (const std::vector<size_t>* b : blocks) {
    lo = std::min(lo, b->size());
    hi = std::max(hi, b->size());
  }
  return std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "") + " ranks";
}

// The steps (ProfilerStep#N) rank `w` took part in; those it held the others up longest
// in (the most lateness summed over the step's collectives; the first of equals, as the
// stragglers table picks it); and of those, the ones in which it is late beyond chance on
// its own: p < kStragglerAlpha with the step's collectives relabelled apart, or, in a step
// too short for any data to reach that, last at every collective of it that had a last
// rank. Under noise the first happens in a step with chance kStragglerAlpha at most, the
// second with chance n^-K (K collectives of n ranks). `each`: test the steps one by one (else
// steps_late stays 0: only kFewSteps needs it).
void TestEachStep(const std::vector<TestedCollective>& c, size_t w, bool each, Stragglers* s) {
  const size_t n = s->ranks.size();
  std::map<int64_t, std::map<size_t, int64_t>> lateness;  // step -> rank -> summed lateness
  std::map<int64_t, std::vector<size_t>> late_in;         // step -> its collectives with a last rank
  std::set<int64_t> joined;
  for (size_t i = 0; i < c.size(); ++i) {
    const TestedCollective& e = c[i];
    if (e.iteration == kNoStep) continue;
    if (std::find(e.who.begin(), e.who.end(), w) != e.who.end()) joined.insert(e.iteration);
    if (e.late_ns <= 0) continue;
    lateness[e.iteration][e.last] += e.late_ns;
    late_in[e.iteration].push_back(i);
  }
  s->steps = static_cast<int64_t>(joined.size());
  for (int64_t step : joined) {
    size_t top = SIZE_MAX;
    int64_t most = 0;
    for (const auto& [r, l] : lateness[step]) {
      if (l > most) top = r, most = l;
    }
    if (top != w) continue;
    ++s->steps_worst;
    if (!each) continue;
    const std::vector<size_t>& late = late_in[step];
    std::vector<const std::vector<size_t>*> blocks;
    bool every = true;
    std::vector<BlockKey> apart(c.size());
    for (size_t i : late) {
      blocks.push_back(&c[i].who);
      every = every && c[i].last == w;
      apart[i] = {std::string(), 0, i};
    }
    if (Floor(blocks, n) >= kStragglerAlpha) {
      s->steps_late += every ? 1 : 0;
      continue;
    }
    const int64_t draws = std::clamp<int64_t>(20'000'000 / static_cast<int64_t>(late.size()), 200, 2000);
    const double p = RelabelledP(c, late, MakeBlocks(c, late, apart), n, static_cast<double>(most), draws);
    s->steps_late += p < kStragglerAlpha ? 1 : 0;
  }
}

// What relabelling whole steps can give at best here, and whether it is enough.
void TestSteps(const std::vector<TestedCollective>& c, const std::vector<size_t>& late,
               const std::vector<BlockKey>& by_step, double observed, Stragglers* s) {
  const size_t w = static_cast<size_t>(s->worst);
  std::map<BlockKey, const std::vector<size_t>*> joined;  // the blocks w took part in
  int64_t outside = 0;  // of them, collectives outside any step (a block each)
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::find(c[i].who.begin(), c[i].who.end(), w) == c[i].who.end()) continue;
    outside += joined.try_emplace(by_step[i], &c[i].who).second && c[i].iteration == kNoStep ? 1 : 0;
  }
  s->p_step = RelabelledP(c, late, MakeBlocks(c, late, by_step), s->ranks.size(), observed, s->permutations);
  std::vector<const std::vector<size_t>*> blocks;
  for (const auto& [key, who] : joined) blocks.push_back(who);
  s->step_floor = Floor(blocks, s->ranks.size());
  s->p_step = std::max(s->p_step, s->step_floor);  // the exact p is no smaller
  const bool enough = s->step_floor < kStragglerAlpha;
  TestEachStep(c, w, !enough, s);
  s->test = enough ? StragglerTest::kCollectivesAndSteps : StragglerTest::kFewSteps;
  s->p_value = enough ? std::max(s->p_collective, s->p_step) : s->p_collective;
  if (enough) return;
  s->undecided.push_back(std::to_string(s->steps) + (s->steps == 1 ? " step" : " steps") +
                         (outside > 0 ? " and " + std::to_string(outside) + " collectives outside any" : "") + " on " +
                         RanksText(blocks) + " cannot separate a late rank from a slow step: p >= " +
                         PValueText(s->step_floor) + " by construction with the ranks relabelled once per step (a "
                         "rank slowed for a whole step by chance is late at every collective in it); so each "
                         "collective is relabelled apart, and a straggler must be late beyond chance in every step on "
                         "its own");
}

}  // namespace

std::string PValueText(double p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2g", p);
  return buf;
}

// The chance that the waiting gathers on one rank this much if the ranks were relabelled
// at random: the largest per-rank sum of lateness against the same statistic over random
// draws.
//
// Why that controls the false-positive rate. Under the null hypothesis, no rank is late:
// at each collective the ranks' arrivals are exchangeable (whatever holds a collective up
// holds all its ranks alike, or strikes one of them at random), independently from one
// collective to the next. Every relabelling of each collective's ranks is then as likely
// as the one observed, so the share of relabellings whose statistic is as large is a
// p-value: P(p <= alpha) <= alpha, and the Monte Carlo form (1 + as large) / (1 + draws)
// keeps that. What a step does to all its ranks alike — a slow step that delays every rank
// by the same time (a long data load, a checkpoint), a collective with a larger message —
// shifts every arrival of the collective by the same amount, and a lateness is a difference
// of arrivals within one collective (the last rank's - the next latest's), so neither it
// nor who is last changes: the step's effect is modelled as a shift per collective and
// drops out, instead of being permuted away with the step. Such a step cannot make a rank
// look late, however few steps there are.
//
// What the relabelling per collective does not cover: a rank slowed for a whole step by
// chance is late at every collective in it, so the collectives of a step are not
// independent. Relabelling the ranks once per group and step covers that; when the steps
// are enough for it to reach kStragglerAlpha at all (step_floor = n^(1-B) < alpha for B
// steps of n ranks) p is the larger of the two (kCollectivesAndSteps: valid under either
// null). With fewer steps (kFewSteps) no data could pass it, so the relabelling per
// collective decides, and a finding also needs the rank to be late beyond chance in every
// step it took part in, each step tested on its own (TestEachStep, StragglerFindings): a
// rank slowed in one step, or in some, is then named only if noise alone also made it the
// straggler of each other step, with chance alpha or less a step (n^-K in a step of K
// collectives too short to reach alpha). What is left is what no relabelling can tell:
// were each step's slowed rank any of its n at random, one rank would be the slowed one
// in all B steps with chance n^(1-B), the step floor that `undecided` gives with the
// finding.
void TestStragglerConcentration(const std::vector<TestedCollective>& c, Stragglers* s) {
  const size_t n = s->ranks.size();
  std::vector<size_t> late;  // collectives with a last rank
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].late_ns > 0) late.push_back(i);
  }
  if (late.empty() || n < 2) return;
  size_t w = 0;  // the worst rank, as StragglerFindings picks it
  for (size_t r = 1; r < n; ++r) w = s->ranks[r].late_ns > s->ranks[w].late_ns ? r : w;
  s->worst = static_cast<int>(w);
  std::vector<double> sum(n, 0);
  for (size_t i : late) sum[c[i].last] += static_cast<double>(c[i].late_ns);
  const double observed = *std::max_element(sum.begin(), sum.end());
  s->permutations = std::clamp<int64_t>(20'000'000 / static_cast<int64_t>(late.size()), 200, 2000);
  std::vector<BlockKey> apart(c.size()), by_step(c.size());
  bool steps = false;
  for (size_t i = 0; i < c.size(); ++i) {
    apart[i] = {std::string(), 0, i};
    by_step[i] = c[i].iteration == kNoStep ? BlockKey{std::string(), kNoStep, i} : BlockKey{c[i].group, c[i].iteration, 0};
    steps = steps || c[i].iteration != kNoStep;
    if (std::find(c[i].who.begin(), c[i].who.end(), w) != c[i].who.end()) ++s->worst_joined;
  }
  s->p_collective = RelabelledP(c, late, MakeBlocks(c, late, apart), n, observed, s->permutations);
  std::vector<const std::vector<size_t>*> where_last;
  for (size_t i : late) {
    if (c[i].last == w) where_last.push_back(&c[i].who);
  }
  s->collective_floor = Floor(where_last, n);
  s->p_collective = std::max(s->p_collective, s->collective_floor);  // the exact p is no smaller
  s->worst_last = static_cast<int64_t>(where_last.size());
  s->test = StragglerTest::kCollectives;
  s->p_value = s->p_collective;
  if (steps) TestSteps(c, late, by_step, observed, s);
  std::vector<const std::vector<size_t>*> joined_late;  // were w last at all of these
  for (size_t i : late) {
    if (std::find(c[i].who.begin(), c[i].who.end(), w) != c[i].who.end()) joined_late.push_back(&c[i].who);
  }
  s->reachable_floor = Floor(joined_late, n);
  if (s->reachable_floor >= kStragglerAlpha) {
    // No relabelling can decide, whatever the lateness: the lateness itself is weighed
    // against the noise of the arrivals instead (straggler_lateness_model.cc), where there
    // is a residual to weigh it against; the shape of the data alone picks this test.
    FitLatenessModel(c, w, s);
    if (s->model.df > 0) {
      s->test = StragglerTest::kLatenessModel;
      s->p_value = s->model.p;
      s->undecided.clear();
      return;
    }
  }
  if (s->collective_floor >= kStragglerAlpha) {
    s->undecided.push_back(std::to_string(s->worst_last) + (s->worst_last == 1 ? " collective on " : " collectives on ") +
                           RanksText(where_last) + " cannot separate a late rank from chance: p >= " +
                           PValueText(s->collective_floor) + " by construction (rank " +
                           std::to_string(s->ranks[w].rank) + " was last at " + std::to_string(s->worst_last) +
                           " of its " + std::to_string(s->worst_joined) + " collectives); more steps can decide");
  }
  if (s->model.ran) s->undecided.push_back(LatenessModelText(s->model, s->ranks[w].rank));
}

std::string StragglerTestText(const Stragglers& s) {
  const std::string draws = " (" + std::to_string(s.permutations) + " draws";
  switch (s.test) {
    case StragglerTest::kNone:
      return "No collective had a last rank: nothing to test";
    case StragglerTest::kCollectives:
      return "Chance of this much waiting on one rank with each collective's ranks relabelled at random (no "
             "ProfilerStep): p = " + PValueText(s.p_value) + draws + ")";
    case StragglerTest::kFewSteps:
      return "Chance of this much waiting on one rank with each collective's ranks relabelled at random: p = " +
             PValueText(s.p_collective) + draws + "); relabelled once per group and step, p = " +
             PValueText(s.p_step) + " (>= " + PValueText(s.step_floor) + " by construction); rank " +
             std::to_string(s.ranks[static_cast<size_t>(s.worst)].rank) + " held the others up longest in " +
             std::to_string(s.steps_worst) + " of its " + std::to_string(s.steps) + " steps, beyond chance in " +
             std::to_string(s.steps_late) + " (p < 0.01 with the step's collectives relabelled at random, or, in a "
             "step too short for that, last at every collective)";
    case StragglerTest::kLatenessModel:
      return "No relabelling of the ranks can reach p < 0.01 here (p >= " + PValueText(s.reachable_floor) +
             " by construction, were rank " + std::to_string(s.ranks[static_cast<size_t>(s.worst)].rank) +
             " last at every collective), so the arrivals are weighed against their own noise: " +
             LatenessModelText(s.model, s.ranks[static_cast<size_t>(s.worst)].rank);
    case StragglerTest::kCollectivesAndSteps:
      break;
  }
  return "Chance of this much waiting on one rank: p = " + PValueText(s.p_value) + ", the larger of p = " +
         PValueText(s.p_collective) + " with each collective's ranks relabelled at random and p = " +
         PValueText(s.p_step) + " with them relabelled once per group and step (a rank slowed for a whole step by "
         "chance is late to every collective in it)" + draws + " each)";
}

}  // namespace tierscope
