// Collectives per rank, matched across ranks; clocks aligned at their ends; who came last.
#include "analysis/stragglers.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <unordered_map>
#include <utility>

#include "analysis/gpu_time.h"
#include "core/stats.h"

namespace tierscope {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

struct Step {
  int64_t begin, end, n;
};

// ProfilerStep#N ranges, by start.
std::vector<Step> Steps(const TraceIndex& x) {
  std::vector<Step> steps;
  for (size_t i : x.annotations) {
    const std::string_view name = x.Name(i);
    if (!StartsWith(name, "ProfilerStep#")) continue;
    char* end = nullptr;
    const std::string digits(name.substr(13));
    const long long n = std::strtoll(digits.c_str(), &end, 10);
    if (end == digits.c_str() || *end != '\0' || n < 0) continue;
    steps.push_back({x.E(i).ts_ns, x.E(i).ts_ns + x.E(i).dur_ns, n});
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.begin < b.begin; });
  return steps;
}

int64_t IterationAt(const std::vector<Step>& steps, int64_t ts) {
  if (steps.empty()) return 0;
  auto it = std::upper_bound(steps.begin(), steps.end(), ts, [](int64_t t, const Step& s) { return t < s.begin; });
  if (it == steps.begin()) return -1;
  --it;
  return ts < it->end ? it->n : -1;
}

bool ContainsIgnoreCase(std::string_view s, std::string_view word) {
  for (size_t i = 0; i + word.size() <= s.size(); ++i) {
    size_t j = 0;
    while (j < word.size() && std::tolower(static_cast<unsigned char>(s[i + j])) == word[j]) ++j;
    if (j == word.size()) return true;
  }
  return false;
}

// Collectives that end together on every rank (each waits for all the others' data); a
// broadcast or a send/recv ends at different moments on the root and the receivers.
bool EndsTogether(std::string_view n) {
  for (std::string_view w : {"allreduce", "all_reduce", "allgather", "all_gather", "reducescatter", "reduce_scatter",
                             "alltoall", "all_to_all", "barrier"}) {
    if (ContainsIgnoreCase(n, w)) return true;
  }
  return false;
}

bool IsHostCollectiveRange(std::string_view n) { return StartsWith(n, "gloo:") || StartsWith(n, "nccl:"); }

bool IsHostCollectiveOp(std::string_view n) {
  return StartsWith(n, "c10d::") && n.find("wait") == std::string_view::npos &&
         n.find("Work") == std::string_view::npos;
}

}  // namespace

RankCollectives FindCollectives(const TraceIndex& x) {
  RankCollectives out;
  const std::vector<Step> steps = Steps(x);
  std::vector<std::pair<int64_t, CollectiveCall>> keyed;  // (issue time, call)
  std::unordered_map<int32_t, bool> communication;  // by interned name
  for (size_t k : x.kernels) {
    const Event& e = x.E(k);
    auto [it, fresh] = communication.try_emplace(e.name, false);
    if (fresh) it->second = ClassifyDeviceEvent(e.kind, x.Name(k)) == KernelType::kCommunication;
    if (!it->second) continue;
    const int64_t issued = x.LaunchTime(k);
    keyed.push_back({issued, {IterationAt(steps, issued), std::string(x.Name(k)), e.ts_ns, e.ts_ns + e.dur_ns}});
  }
  out.device = !keyed.empty();
  if (keyed.empty()) {
    // Host collectives: the backend's own ranges (gloo:all_reduce: the collective itself),
    // else the c10d calls that issued them.
    for (auto* pick : {&IsHostCollectiveRange, &IsHostCollectiveOp}) {
      for (const std::vector<size_t>* v : {&x.annotations, &x.ops}) {
        for (size_t i : *v) {
          if (!(*pick)(x.Name(i))) continue;
          const Event& e = x.E(i);
          keyed.push_back({e.ts_ns, {IterationAt(steps, e.ts_ns), std::string(x.Name(i)), e.ts_ns, e.ts_ns + e.dur_ns}});
        }
      }
      if (!keyed.empty()) break;
    }
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out.calls.reserve(keyed.size());
  for (auto& [t, c] : keyed) out.calls.push_back(std::move(c));
  return out;
}

Stragglers FindStragglers(const std::vector<RankCollectivesOf>& ranks) {
  Stragglers s;
  for (const RankCollectivesOf& r : ranks) s.ranks.push_back({r.rank});
  if (ranks.size() < 2) {
    s.alignment = "one rank: nothing to compare";
    return s;
  }
  // Each rank's calls by iteration, in order.
  const size_t n = ranks.size();
  std::vector<std::map<int64_t, std::vector<const CollectiveCall*>>> by_iter(n);
  for (size_t r = 0; r < n; ++r) {
    for (const CollectiveCall& c : ranks[r].collectives->calls) by_iter[r][c.iteration].push_back(&c);
  }
  // Matched: the same name at the same place of the same iteration on every rank.
  std::vector<std::pair<int64_t, std::vector<const CollectiveCall*>>> matched;  // (iteration, per rank)
  for (const auto& [iter, calls0] : by_iter[0]) {
    size_t count = calls0.size();
    for (size_t r = 1; r < n; ++r) {
      auto it = by_iter[r].find(iter);
      count = it == by_iter[r].end() ? 0 : std::min(count, it->second.size());
    }
    for (size_t i = 0; i < count; ++i) {
      std::vector<const CollectiveCall*> row(n);
      bool same = true;
      for (size_t r = 0; r < n && same; ++r) {
        row[r] = by_iter[r][iter][i];
        same = row[r]->name == calls0[i]->name;
      }
      if (!same) {
        if (s.mismatch.empty()) {
          s.mismatch = "iteration " + std::to_string(iter) + ", collective " + std::to_string(i + 1) +
                       ": the ranks call different collectives (" + calls0[i]->name + " on rank " +
                       std::to_string(ranks[0].rank) + "); later ones in that iteration are not compared";
        }
        break;
      }
      matched.push_back({iter, std::move(row)});
    }
  }
  s.matched = static_cast<int64_t>(matched.size());
  if (matched.empty()) {
    s.alignment = "no collective matched on every rank: nothing to compare";
    return s;
  }
  // Clock offsets: the median of (end on rank r - end on the first rank), over the
  // collectives that end together when there are any.
  size_t together = 0;
  for (const auto& [iter, row] : matched) together += EndsTogether(row[0]->name) ? 1 : 0;
  std::string offsets;
  for (size_t r = 0; r < n; ++r) {
    std::vector<double> d;
    for (const auto& [iter, row] : matched) {
      if (together == 0 || EndsTogether(row[0]->name)) d.push_back(static_cast<double>(row[r]->end_ns - row[0]->end_ns));
    }
    s.ranks[r].offset_ns = static_cast<int64_t>(Median(std::move(d)));
    if (r > 0 && r < 9) offsets += (offsets.empty() ? "" : ", ") + std::string("rank ") + std::to_string(ranks[r].rank) + " " +
                                   FormatNs(static_cast<double>(s.ranks[r].offset_ns));
  }
  s.alignment = "clocks aligned by the ends of " + std::to_string(together > 0 ? together : matched.size()) +
                (together > 0 ? " all-reduce / all-gather / reduce-scatter / all-to-all / barrier" : "") +
                " collectives matched on every rank (offset from rank " + std::to_string(ranks[0].rank) +
                ": the median difference of their ends; " + offsets + (n > 9 ? ", ..." : "") + ")";
  // Who came last, per collective and per iteration.
  std::map<int64_t, std::map<size_t, std::pair<int64_t, std::vector<int64_t>>>> per_iter;  // iter -> rank -> (n, lates)
  std::map<int64_t, int64_t> iter_count;
  std::vector<double> behind_sum(n, 0);
  for (const auto& [iter, row] : matched) {
    std::vector<std::pair<int64_t, size_t>> arr(n);
    std::vector<double> times(n);
    for (size_t r = 0; r < n; ++r) {
      arr[r] = {row[r]->arrive_ns - s.ranks[r].offset_ns, r};
      times[r] = static_cast<double>(arr[r].first);
    }
    std::sort(arr.begin(), arr.end());
    const size_t last = arr.back().second;
    const int64_t late = arr.back().first - arr[n - 2].first;
    ++iter_count[iter];
    if (late > 0) {  // a tie has no last rank
      ++s.ranks[last].times_last;
      s.ranks[last].late_ns += late;
      auto& cell = per_iter[iter][last];
      ++cell.first;
      cell.second.push_back(late);
    }
    const double median = Median(times);
    for (size_t r = 0; r < n; ++r) behind_sum[r] += times[r] - median;
  }
  for (size_t r = 0; r < n; ++r) s.ranks[r].behind_median_ns = behind_sum[r] / static_cast<double>(matched.size());
  double duration = 0;
  for (const auto& [iter, row] : matched) {
    for (const CollectiveCall* c : row) duration += static_cast<double>(c->end_ns - c->arrive_ns);
  }
  s.mean_duration_ns = duration / static_cast<double>(matched.size() * n);
  for (const auto& [iter, count] : iter_count) {
    const auto& by_rank = per_iter[iter];
    StragglerIteration it;
    it.iteration = iter;
    it.collectives = count;
    // The rank that held the others up longest in this iteration.
    double worst = -1;
    for (const auto& [r, cell] : by_rank) {
      double sum = 0;
      int64_t mx = 0;
      for (int64_t l : cell.second) {
        sum += static_cast<double>(l);
        mx = std::max(mx, l);
      }
      if (sum > worst) {
        worst = sum;
        it.times_last = cell.first;
        it.last_rank = ranks[r].rank;
        it.max_late_ns = mx;
        it.mean_late_ns = sum / static_cast<double>(cell.second.size());
      }
    }
    s.iterations.push_back(it);
  }
  return s;
}

Table StragglerTable(const Stragglers& s) {
  Table t;
  t.name = "stragglers";
  t.title = "Stragglers per iteration: the rank that held the others up longest (summed over the "
            "collectives it reached last: its arrival - the next latest rank's)";
  t.columns = {"Iteration", "Collectives", "Last rank", "Times last", "Late avg (ns)", "Late max (ns)"};
  for (const StragglerIteration& i : s.iterations) {
    t.AddRow({i.iteration, i.collectives, int64_t{i.last_rank}, i.times_last, i.mean_late_ns, i.max_late_ns});
  }
  t.notes.push_back(s.alignment + ".");
  if (!s.mismatch.empty()) t.notes.push_back("Sequences differ: " + s.mismatch + ".");
  return t;
}

Table StragglerRankTable(const Stragglers& s) {
  Table t;
  t.name = "straggler_ranks";
  t.title = "Per rank over every matched collective: times last, lateness, and arrival behind the median rank";
  t.columns = {"Rank", "Clock offset (ns)", "Times last", "Late total (ns)", "Behind median avg (ns)"};
  for (const StragglerRank& r : s.ranks) {
    t.AddRow({int64_t{r.rank}, r.offset_ns, r.times_last, r.late_ns, r.behind_median_ns});
  }
  return t;
}

std::vector<Finding> StragglerFindings(const Stragglers& s) {
  if (s.matched < 2 || s.ranks.size() < 2) return {};
  const StragglerRank* worst = &s.ranks.front();
  int64_t all_late = 0;
  for (const StragglerRank& r : s.ranks) {
    all_late += r.late_ns;
    if (r.late_ns > worst->late_ns) worst = &r;
  }
  // One rank causes most of the waiting (the last rank of a broadcast or a send is noise:
  // its lateness is small; a straggler's adds up).
  if (all_late <= 0 || 2 * worst->late_ns <= all_late || worst->times_last < 2 || worst->behind_median_ns <= 0) {
    return {};
  }
  // ... and its lateness matters: at least 10 us and 5% of a collective's mean duration.
  const double mean_late = static_cast<double>(worst->late_ns) / static_cast<double>(worst->times_last);
  if (mean_late < std::max(10'000.0, 0.05 * s.mean_duration_ns)) return {};
  Finding f;
  f.rule = "straggler";
  f.title = "Straggler: rank " + std::to_string(worst->rank) + " reaches the collectives last, and the other "
            "ranks wait for it";
  f.threshold = "one rank causes more than half of the waiting at collectives (its arrival - the next latest "
                "rank's, summed over the collectives it reached last), at least 10 us and 5% of a collective's "
                "mean duration each time";
  char share[64];
  std::snprintf(share, sizeof(share), "%.0f%%", 100.0 * static_cast<double>(worst->late_ns) / static_cast<double>(all_late));
  f.evidence.push_back("last in " + std::to_string(worst->times_last) + " of " + std::to_string(s.matched) +
                       " collectives, by " + FormatNs(static_cast<double>(worst->late_ns) /
                                                      static_cast<double>(worst->times_last)) +
                       " on average: " + share + " of all the waiting");
  f.evidence.push_back("arrives " + FormatNs(worst->behind_median_ns) + " after the median rank on average");
  f.evidence.push_back(s.alignment);
  f.next_step = "look at rank " + std::to_string(worst->rank) +
                "'s own timeline before each collective: slower work, a different input size, host "
                "stalls (data loading, logging) or a slower device";
  f.explained_ns = static_cast<double>(worst->late_ns);
  return {f};
}

}  // namespace tierscope
