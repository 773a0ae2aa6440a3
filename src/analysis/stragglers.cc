// Collectives per rank, matched across ranks; clocks aligned at their ends; who came last.
#include "analysis/stragglers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analysis/gpu_time.h"
#include "analysis/straggler_test_stats.h"
#include "core/text.h"
#include "core/stats.h"
#include "trace/args.h"

namespace tierscope {
namespace {

struct Step {
  int64_t begin, end, n;
};

// ProfilerStep#N ranges, by start.
std::vector<Step> Steps(const TraceIndex& x) {
  std::vector<Step> steps;
  for (size_t i : x.annotations) {
    const std::string_view name = x.Name(i);
    if (!name.starts_with("ProfilerStep#")) continue;
    char* end = nullptr;
    const std::string digits(name.substr(13));
    const long long n = std::strtoll(digits.c_str(), &end, 10);
    if (end == digits.c_str() || *end != '\0' || n < 0) continue;
    steps.push_back({x.E(i).ts_ns, x.E(i).ts_ns + x.E(i).dur_ns, n});
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.begin < b.begin; });
  return steps;
}

// The N of the step that holds `ts`; kNoStep outside every step (and without steps).
int64_t IterationAt(const std::vector<Step>& steps, int64_t ts) {
  auto it = std::upper_bound(steps.begin(), steps.end(), ts, [](int64_t t, const Step& s) { return t < s.begin; });
  if (it == steps.begin()) return kNoStep;
  --it;
  return ts < it->end ? it->n : kNoStep;
}

std::string StepText(int64_t iteration) {
  return iteration == kNoStep ? "outside any ProfilerStep" : "iteration " + std::to_string(iteration);
}

}  // namespace

// Collectives that end together on every rank (each waits for all the others' data); a
// broadcast or a send/recv ends at different moments on the root and the receivers.
bool EndsTogether(std::string_view n) {
  for (std::string_view w : {"allreduce", "all_reduce", "allgather", "all_gather", "reducescatter", "reduce_scatter",
                             "alltoall", "all_to_all", "barrier"}) {
    if (ContainsIgnoreCase(n, w)) return true;
  }
  return false;
}

namespace {

// send / recv on the host: two ranks, not a group.
bool IsHostPointToPoint(std::string_view n) {
  return n.find("send") != std::string_view::npos || n.find("recv") != std::string_view::npos;
}

bool IsHostCollectiveRange(std::string_view n) { return n.starts_with("gloo:") || n.starts_with("nccl:"); }

bool IsHostCollectiveOp(std::string_view n) {
  return n.starts_with("c10d::") && n.find("wait") == std::string_view::npos &&
         n.find("Work") == std::string_view::npos;
}

// PyTorch's "Collective name" for point-to-point calls: they join two ranks, not a group.
bool IsPointToPoint(std::string_view collective) {
  for (std::string_view p : {"send", "recv", "isend", "irecv", "batch_isend_irecv", "sendrecv"}) {
    if (collective == p) return true;
  }
  return false;
}

// The global rank on the other side of a send ("Dst Rank") or recv ("Src Rank"): the
// group's rank, mapped through "Process Group Ranks" when the trace lists them; -1 when it
// records neither.
int32_t PeerRank(std::string_view args, bool send) {
  const std::optional<double> local = ArgNumber(args, send ? "Dst Rank" : "Src Rank");
  if (!local || *local < 0 || *local > 1e7 || *local != std::floor(*local)) return -1;
  const auto r = static_cast<size_t>(*local);
  const std::string_view list = ArgText(args, "Process Group Ranks");
  std::vector<int32_t> ranks;
  for (size_t i = 0; i < list.size();) {
    if (list[i] < '0' || list[i] > '9') {
      ++i;
      continue;
    }
    int64_t v = 0;
    for (; i < list.size() && list[i] >= '0' && list[i] <= '9' && v < 100'000'000; ++i) v = v * 10 + (list[i] - '0');
    ranks.push_back(static_cast<int32_t>(std::min<int64_t>(v, INT32_MAX)));
  }
  if (ranks.empty()) return static_cast<int32_t>(r);  // the default group's ranks are the global ones
  return r < ranks.size() ? ranks[r] : -1;
}

// One collective matched across the ranks that took part in it.
struct Entry {
  int64_t iteration = kNoStep, index = 0;
  const CollectiveCall* first = nullptr;
  std::vector<size_t> who;                   // indices into the job's ranks
  std::vector<const CollectiveCall*> calls;  // parallel to who
};

// Groups calls by (process group, iteration) and matches them by order where every rank
// that took part made the same calls; notes the first place they did not.
std::vector<Entry> Match(const std::vector<RankCollectivesOf>& ranks, Stragglers* s) {
  const size_t n = ranks.size();
  std::map<std::pair<std::string, int64_t>, std::vector<std::vector<const CollectiveCall*>>> by_key;
  for (size_t r = 0; r < n; ++r) {
    for (const CollectiveCall& c : ranks[r].collectives->calls) {
      auto& v = by_key[{c.group, c.iteration}];
      if (v.empty()) v.resize(n);
      v[r].push_back(&c);
    }
  }
  const auto note = [&](const std::string& what) {
    if (s->mismatch.empty()) s->mismatch = what;
  };
  std::vector<Entry> out;
  for (const auto& [key, per_rank] : by_key) {
    const auto& [group, iter] = key;
    std::vector<size_t> who;
    for (size_t r = 0; r < n; ++r) {
      if (!per_rank[r].empty()) who.push_back(r);
    }
    if (who.size() < 2) continue;  // the group's other ranks are not in the job's traces
    const std::string where = StepText(iter) + (group.empty() ? "" : " (group " + group + ")");
    const size_t count = per_rank[who[0]].size();
    bool same_count = true;
    for (size_t r : who) same_count = same_count && per_rank[r].size() == count;
    if (!same_count) {
      size_t most = 0;
      for (size_t r : who) most = std::max(most, per_rank[r].size());
      s->skipped += static_cast<int64_t>(most);
      note(where + ": rank " + std::to_string(ranks[who[0]].rank) + " made " + std::to_string(count) +
           " collectives, others a different number; none of that iteration is compared");
      continue;
    }
    for (size_t i = 0; i < count; ++i) {
      const CollectiveCall* c0 = per_rank[who[0]][i];
      bool same = true;
      for (size_t r : who) {
        const CollectiveCall* c = per_rank[r][i];
        same = same && c->name == c0->name && (c->elems < 0 || c0->elems < 0 || c->elems == c0->elems);
      }
      if (!same) {
        s->skipped += static_cast<int64_t>(count - i);
        note(where + ", collective " + std::to_string(i + 1) + ": the ranks call different collectives (" +
             c0->name + " on rank " + std::to_string(ranks[who[0]].rank) + "); later ones in that iteration are not compared");
        break;
      }
      Entry e{iter, static_cast<int64_t>(i), c0, who, {}};
      for (size_t r : who) e.calls.push_back(per_rank[r][i]);
      out.push_back(std::move(e));
    }
  }
  return out;
}

// Each send paired with the recv its peer made from this rank, in issue order per (sender,
// receiver, group), where both ranks are in the job and the sizes agree; the rest counted
// as unpaired.
std::vector<Entry> PairPointToPoint(const std::vector<RankCollectivesOf>& ranks, Stragglers* s) {
  std::map<int, size_t> index_of;  // global rank -> index into ranks
  for (size_t r = 0; r < ranks.size(); ++r) index_of[ranks[r].rank] = r;
  // (sender, receiver, group) -> that channel's sends and recvs in order
  std::map<std::tuple<size_t, size_t, std::string>, std::pair<std::vector<const CollectiveCall*>,
                                                               std::vector<const CollectiveCall*>>> channels;
  int64_t with_peer = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const CollectiveCall& c : ranks[r].collectives->p2p) {
      ++with_peer;
      const auto peer = index_of.find(c.peer);
      if (peer == index_of.end() || peer->second == r) continue;
      auto& ch = channels[{c.send ? r : peer->second, c.send ? peer->second : r, c.group}];
      (c.send ? ch.first : ch.second).push_back(&c);
    }
  }
  std::vector<Entry> out;
  for (const auto& [key, ch] : channels) {
    const auto& [from, to, group] = key;
    const size_t n = std::min(ch.first.size(), ch.second.size());
    for (size_t i = 0; i < n; ++i) {
      const CollectiveCall *send = ch.first[i], *recv = ch.second[i];
      if (send->elems >= 0 && recv->elems >= 0 && send->elems != recv->elems) break;  // out of step from here
      out.push_back({send->iteration, static_cast<int64_t>(i), send, {from, to}, {send, recv}});
    }
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.calls[0]->issue_ns < b.calls[0]->issue_ns; });
  s->p2p_paired = 2 * static_cast<int64_t>(out.size());
  s->p2p_unpaired = with_peer - s->p2p_paired;
  return out;
}

size_t Find(std::vector<size_t>& parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

struct Edge {
  size_t a, b;
  double d;  // median of (end on b - end on a) over the collectives they share
  double w;  // how many
};

// Offsets o minimising sum w (o_b - o_a - d)^2 with o fixed at 0 on `anchored` ranks (one
// per connected set) and on ranks without edges: conjugate gradients on the graph's
// Laplacian, exact for any layout of groups (chains, tensor x data parallel), not just
// for collectives every rank takes part in.
std::vector<double> SolveOffsets(size_t n, const std::vector<Edge>& edges, const std::vector<bool>& fixed) {
  const auto apply = [&](const std::vector<double>& x) {
    std::vector<double> y(n, 0);
    for (const Edge& e : edges) {
      const double f = e.w * (x[e.b] - x[e.a]);
      y[e.b] += f;
      y[e.a] -= f;
    }
    for (size_t r = 0; r < n; ++r) y[r] = fixed[r] ? 0 : y[r];
    return y;
  };
  std::vector<double> rhs(n, 0);
  for (const Edge& e : edges) {
    rhs[e.b] += e.w * e.d;
    rhs[e.a] -= e.w * e.d;
  }
  for (size_t r = 0; r < n; ++r) rhs[r] = fixed[r] ? 0 : rhs[r];
  std::vector<double> x(n, 0), res = rhs, p = rhs;
  const auto dot = [&](const std::vector<double>& u, const std::vector<double>& v) {
    double t = 0;
    for (size_t r = 0; r < n; ++r) t += u[r] * v[r];
    return t;
  };
  double rr = dot(res, res);
  const double stop = 1e-12 * std::max(1.0, rr);
  for (size_t it = 0; it < 4 * n + 16 && rr > stop; ++it) {
    const std::vector<double> ap = apply(p);
    const double pap = dot(p, ap);
    if (!(pap > 0)) break;
    const double alpha = rr / pap;
    for (size_t r = 0; r < n; ++r) {
      x[r] += alpha * p[r];
      res[r] -= alpha * ap[r];
    }
    const double next = dot(res, res);
    for (size_t r = 0; r < n; ++r) p[r] = res[r] + (next / rr) * p[r];
    rr = next;
  }
  return x;
}

// Clock offsets that make the collectives' ends agree: for each rank and the first rank of
// each collective it shares, the median difference of their ends; then the offsets that
// fit those differences best (SolveOffsets), anchored at the first rank of each connected
// set. Each offset's spread is the median deviation of the rank's ends after alignment.
// Sends paired with their recvs (`pairs`) align the clocks only in a job with no collective
// to align by (a pipeline of sends, the T4 job): their ends are taken as a collective's,
// which holds for a send that waited for its recv (rendezvous) and not for an eager one that
// ended before its recv began. In a job with collectives they are left out, so as not to
// move the offsets the collectives agree on (and the straggler tests that rest on them).
void AlignClocks(const std::vector<Entry>& entries, const std::vector<Entry>& pairs,
                 const std::vector<RankCollectivesOf>& ranks, Stragglers* s) {
  const size_t n = ranks.size();
  std::vector<const Entry*> use;
  for (const Entry& e : entries) {
    if (EndsTogether(e.first->name)) use.push_back(&e);
  }
  const bool together = !use.empty();
  if (!together) {
    for (const Entry& e : entries) use.push_back(&e);
  }
  const size_t collectives = use.size();
  if (collectives == 0) {
    for (const Entry& p : pairs) use.push_back(&p);
  }
  const size_t paired = use.size() - collectives;
  // Differences in int64 before any double: nanoseconds since the epoch overflow a double's mantissa.
  std::map<std::pair<size_t, size_t>, std::vector<double>> diffs;
  for (const Entry* e : use) {
    for (size_t k = 1; k < e->who.size(); ++k) {
      diffs[{e->who[0], e->who[k]}].push_back(static_cast<double>(e->calls[k]->end_ns - e->calls[0]->end_ns));
    }
  }
  std::vector<Edge> edges;
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<bool> linked(n, false);
  for (auto& [ab, d] : diffs) {
    const double w = static_cast<double>(d.size());
    edges.push_back({ab.first, ab.second, Median(std::move(d)), w});
    parent[Find(parent, ab.second)] = Find(parent, ab.first);
    linked[ab.first] = linked[ab.second] = true;
  }
  std::vector<size_t> anchor(n, SIZE_MAX);  // per set: its first rank with collectives
  for (size_t r = 0; r < n; ++r) {
    if (linked[r]) anchor[Find(parent, r)] = std::min(anchor[Find(parent, r)], r);
  }
  std::vector<bool> fixed(n);
  for (size_t r = 0; r < n; ++r) fixed[r] = !linked[r] || anchor[Find(parent, r)] == r;
  const std::vector<double> offset = SolveOffsets(n, edges, fixed);
  std::vector<std::vector<double>> residual(n);
  for (const Entry* e : use) {
    std::vector<double> ends;
    for (size_t k = 0; k < e->who.size(); ++k) {
      ends.push_back(static_cast<double>(e->calls[k]->end_ns - e->calls[0]->end_ns) - offset[e->who[k]]);
    }
    const double median = Median(ends);
    for (size_t k = 0; k < e->who.size(); ++k) residual[e->who[k]].push_back(ends[k] - median);
  }
  std::string offsets, apart, none;
  std::set<size_t> sets;
  size_t first = SIZE_MAX;
  for (size_t r = 0; r < n; ++r) {
    StragglerRank& sr = s->ranks[r];
    sr.aligned = linked[r];
    if (!linked[r]) {
      none += (none.empty() ? "" : ", ") + std::to_string(ranks[r].rank);
      continue;
    }
    const size_t a = anchor[Find(parent, r)];
    if (first == SIZE_MAX) first = a;
    sets.insert(a);
    sr.offset_ns = std::llround(offset[r]);
    std::vector<double> dev;
    const double m = Median(residual[r]);
    for (double v : residual[r]) dev.push_back(std::abs(v - m));
    sr.offset_spread_ns = std::llround(Median(dev));
    // A median's standard error: 1.2533 sigma / sqrt(n), sigma estimated as 1.4826 MAD.
    sr.offset_error_ns = 1.2533 * 1.4826 * Median(std::move(dev)) / std::sqrt(static_cast<double>(residual[r].size()));
    if (r != a && offsets.size() < 400) {
      offsets += (offsets.empty() ? "" : ", ") + std::string("rank ") + std::to_string(ranks[r].rank) + " " +
                 FormatNs(static_cast<double>(sr.offset_ns)) + " +- " + FormatNs(static_cast<double>(sr.offset_spread_ns));
    }
    if (a != first && apart.size() < 200) apart += (apart.empty() ? "" : ", ") + std::to_string(ranks[r].rank);
  }
  const std::string from = first == SIZE_MAX ? "-" : std::to_string(ranks[first].rank);
  std::string by;
  if (collectives > 0) {
    by = std::to_string(collectives) +
         (together ? " all-reduce / all-gather / reduce-scatter / all-to-all / barrier" : "") + " matched collectives";
  }
  if (paired > 0) {
    by = std::to_string(paired) + " sends paired with their recvs (taken to end together: a send that ended before "
         "its recv began would skew them)";
  }
  s->alignment = "clocks aligned by the ends of " + by +
                 " (the offsets that best fit the median difference of the ends of each pair of "
                 "ranks sharing them, from rank " + from + "; +- the spread of each rank's ends after: " +
                 (offsets.empty() ? std::string("none") : offsets) + ")";
  if (sets.size() > 1) {
    s->alignment += "; ranks " + apart + " share no such collective or send with rank " + from + ": aligned among themselves only";
  }
  if (!none.empty()) s->alignment += "; ranks " + none + ": no matched collective or paired send to align by";
}

}  // namespace

RankCollectives FindCollectives(const TraceIndex& x) {
  RankCollectives out;
  const std::vector<Step> steps = Steps(x);
  std::vector<std::pair<int64_t, CollectiveCall>> keyed, p2p;  // (issue time, call)
  DeviceEventTypes types(x);  // by interned name
  for (size_t k : x.kernels) {
    const Event& e = x.E(k);
    if (types.Of(k) != KernelType::kCommunication) continue;
    const std::string_view args = e.args >= 0 ? x.trace->strings.Get(e.args) : std::string_view();
    const int64_t issued = x.LaunchTime(k);
    // The group by its name, else by its ranks (both in PyTorch 2.x's NCCL kernel args).
    std::string group(ArgText(args, "Process Group Name"));
    if (group.empty()) group = ArgText(args, "Process Group Ranks");
    const std::optional<double> elems = ArgNumber(args, "In msg nelems");
    CollectiveCall c{IterationAt(steps, issued), std::string(x.Name(k)), std::move(group),
                     elems && *elems >= 0 ? static_cast<int64_t>(*elems) : -1,
                     issued, e.ts_ns, e.ts_ns + e.dur_ns, static_cast<int64_t>(k)};
    const std::string_view collective = ArgText(args, "Collective name");
    if (IsPointToPoint(collective)) {
      ++out.point_to_point;
      c.send = collective.find("send") != std::string_view::npos;
      c.peer = PeerRank(args, c.send);
      if (c.peer >= 0 && (collective == "send" || collective == "recv")) p2p.push_back({issued, std::move(c)});
      continue;
    }
    keyed.push_back({issued, std::move(c)});
  }
  out.device = !keyed.empty() || out.point_to_point > 0;
  if (!out.device) {
    // Host collectives: the backend's own ranges (gloo:all_reduce: the collective itself),
    // else the c10d calls that issued them.
    for (auto* pick : {&IsHostCollectiveRange, &IsHostCollectiveOp}) {
      for (const std::vector<size_t>* v : {&x.annotations, &x.ops}) {
        for (size_t i : *v) {
          if (!(*pick)(x.Name(i))) continue;
          if (IsHostPointToPoint(x.Name(i))) {
            ++out.point_to_point;
            continue;
          }
          const Event& e = x.E(i);
          keyed.push_back({e.ts_ns, {IterationAt(steps, e.ts_ns), std::string(x.Name(i)), "", -1, e.ts_ns, e.ts_ns,
                                     e.ts_ns + e.dur_ns, static_cast<int64_t>(i)}});
        }
      }
      if (!keyed.empty()) break;
    }
  }
  for (auto* v : {&keyed, &p2p}) {
    std::stable_sort(v->begin(), v->end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  out.calls.reserve(keyed.size());
  for (auto& [t, c] : keyed) out.calls.push_back(std::move(c));
  for (auto& [t, c] : p2p) out.p2p.push_back(std::move(c));
  return out;
}

namespace {

// Who came last at each matched collective, by how much, and each rank's place against
// the median rank, on the aligned clocks.
void Compare(const std::vector<Entry>& entries, const std::vector<RankCollectivesOf>& ranks, Stragglers* s) {
  const size_t n = ranks.size();
  std::map<int64_t, std::map<size_t, std::vector<int64_t>>> per_iter;  // iteration -> rank -> lates
  std::map<int64_t, int64_t> iter_count;
  std::vector<double> behind(n, 0), host_behind(n, 0);
  std::vector<TestedCollective> tested(entries.size());
  double duration = 0, calls = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    std::vector<std::pair<int64_t, size_t>> arr;
    std::vector<double> times, issued;
    for (size_t k = 0; k < e.who.size(); ++k) {
      const int64_t o = s->ranks[e.who[k]].offset_ns;
      arr.push_back({e.calls[k]->arrive_ns - o, e.who[k]});
      times.push_back(static_cast<double>(e.calls[k]->arrive_ns - e.calls[0]->arrive_ns - o));
      issued.push_back(static_cast<double>(e.calls[k]->issue_ns - e.calls[0]->issue_ns - o));
      duration += static_cast<double>(e.calls[k]->end_ns - e.calls[k]->arrive_ns);
      ++calls;
      ++s->ranks[e.who[k]].collectives;
    }
    std::sort(arr.begin(), arr.end());
    const int64_t late = arr.back().first - arr[arr.size() - 2].first;
    StragglerCollective row{e.iteration, e.index, e.first->group, e.first->name, static_cast<int64_t>(e.who.size()),
                            -1, late, arr.back().first - arr.front().first};
    ++iter_count[e.iteration];
    if (late > 0) {  // a tie has no last rank
      const size_t r = arr.back().second;
      tested[i].last = r;
      tested[i].late_ns = late;
      ++s->ranks[r].times_last;
      s->ranks[r].late_ns += late;
      per_iter[e.iteration][r].push_back(late);
      row.last_rank = ranks[r].rank;
    }
    s->collectives.push_back(std::move(row));
    tested[i].group = e.first->group;
    tested[i].iteration = e.iteration;
    tested[i].who = e.who;
    tested[i].arrive_ns = times;
    const double median = Median(times), host_median = Median(issued);
    for (size_t k = 0; k < e.who.size(); ++k) {
      behind[e.who[k]] += times[k] - median;
      host_behind[e.who[k]] += issued[k] - host_median;
    }
  }
  for (size_t r = 0; r < n; ++r) {
    const double c = static_cast<double>(std::max<int64_t>(1, s->ranks[r].collectives));
    s->ranks[r].behind_median_ns = behind[r] / c;
    s->ranks[r].host_behind_median_ns = host_behind[r] / c;
  }
  s->mean_duration_ns = calls > 0 ? duration / calls : 0;
  for (const auto& [iter, count] : iter_count) {
    StragglerIteration it;
    it.iteration = iter;
    it.collectives = count;
    double worst = -1;  // the rank that held the others up longest in this iteration
    for (const auto& [r, lates] : per_iter[iter]) {
      const double sum = static_cast<double>(std::accumulate(lates.begin(), lates.end(), int64_t{0}));
      if (sum > worst) {
        worst = sum;
        it.times_last = static_cast<int64_t>(lates.size());
        it.last_rank = ranks[r].rank;
        it.max_late_ns = *std::max_element(lates.begin(), lates.end());
        it.mean_late_ns = sum / static_cast<double>(lates.size());
      }
    }
    s->iterations.push_back(it);
  }
  TestStragglerConcentration(tested, s);
}

}  // namespace

Stragglers FindStragglers(const std::vector<RankCollectivesOf>& ranks, int world_size) {
  Stragglers s;
  s.world_size = world_size;
  for (const RankCollectivesOf& r : ranks) s.ranks.push_back({r.rank});
  if (ranks.size() < 2) {
    s.alignment = "one rank: nothing to compare";
    return s;
  }
  const std::vector<Entry> entries = Match(ranks, &s);
  const std::vector<Entry> pairs = PairPointToPoint(ranks, &s);
  s.matched = static_cast<int64_t>(entries.size());
  for (const std::vector<Entry>* list : {&entries, &pairs}) {
    const bool p2p = list == &pairs;
    for (const Entry& e : *list) {
      JoinedCalls j{e.iteration, e.index, e.first->name, p2p, {}};
      for (size_t k = 0; k < e.who.size(); ++k) {
        const std::vector<CollectiveCall>& all = p2p ? ranks[e.who[k]].collectives->p2p : ranks[e.who[k]].collectives->calls;
        j.calls.push_back({e.who[k], static_cast<size_t>(e.calls[k] - all.data())});
      }
      s.joined.push_back(std::move(j));
    }
  }
  if (entries.empty() && pairs.empty()) {
    s.alignment = "no collective matched across ranks: nothing to compare";
    return s;
  }
  AlignClocks(entries, pairs, ranks, &s);
  if (entries.empty()) {
    s.alignment += "; no collective matched across ranks: no straggler compared";
    return s;
  }
  Compare(entries, ranks, &s);
  return s;
}

namespace {

Cell IterationCell(int64_t iteration) {
  return iteration == kNoStep ? Cell{std::string("-")} : Cell{iteration};  // "-": outside any step
}

}  // namespace

Table StragglerTable(const Stragglers& s) {
  Table t;
  t.name = "stragglers";
  t.title = "Stragglers per iteration: the rank that held the others up longest (summed over the "
            "collectives it reached last: its arrival - the next latest rank's)";
  t.columns = {"Iteration", "Collectives", "Last rank", "Times last", "Late avg (ns)", "Late max (ns)"};
  for (const StragglerIteration& i : s.iterations) {
    const Cell last = i.last_rank < 0 ? Cell{std::string("-")} : Cell{int64_t{i.last_rank}};  // all tied
    t.AddRow({IterationCell(i.iteration), i.collectives, last, i.times_last, i.mean_late_ns, i.max_late_ns});
  }
  t.notes.push_back(s.alignment + ".");
  for (const std::string& u : s.undecided) t.notes.push_back("Straggler test: " + u + ".");
  if (!s.mismatch.empty()) {
    t.notes.push_back("Sequences differ (" + std::to_string(s.skipped) + " collectives not compared): first at " +
                      s.mismatch + ".");
  }
  if (s.world_size > static_cast<int>(s.ranks.size())) {
    t.notes.push_back("The traces hold " + std::to_string(s.ranks.size()) + " of the job's " +
                      std::to_string(s.world_size) + " ranks: compared among these only.");
  }
  return t;
}

Table StragglerRankTable(const Stragglers& s) {
  Table t;
  t.name = "straggler_ranks";
  t.title = "Per rank over the matched collectives it took part in: clock offset, times last, lateness, and "
            "arrival (device) and issue (host) behind the median rank";
  t.columns = {"Rank", "Clock offset (ns)", "Offset +- (ns)", "Collectives", "Times last", "Late total (ns)",
               "Behind median avg (ns)", "Host behind median avg (ns)"};
  const Cell dash{std::string("-")};
  for (const StragglerRank& r : s.ranks) {
    t.AddRow({int64_t{r.rank}, r.aligned ? Cell{r.offset_ns} : dash, r.aligned ? Cell{r.offset_spread_ns} : dash,
              r.collectives, r.times_last, r.late_ns, r.collectives > 0 ? Cell{r.behind_median_ns} : dash,
              r.collectives > 0 ? Cell{r.host_behind_median_ns} : dash});
  }
  if (s.permutations > 0) t.notes.push_back(StragglerTestText(s) + ".");
  t.notes.push_back("Offset +-: the median deviation of the rank's collective ends from the others' after alignment; "
                    "lateness below it is within the clocks' uncertainty.");
  return t;
}

Table StragglerCollectiveTable(const Stragglers& s, size_t limit) {
  Table t;
  t.name = "straggler_collectives";
  t.title = "Matched collectives, the latest first: the rank that reached each last and by how much";
  t.columns = {"Iteration", "#", "Group", "Ranks", "Last rank", "Late (ns)", "Spread (ns)", "Name"};
  std::vector<const StragglerCollective*> order;
  for (const StragglerCollective& c : s.collectives) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(),
                   [](const StragglerCollective* a, const StragglerCollective* b) { return a->late_ns > b->late_ns; });
  for (size_t i = 0; i < order.size() && i < limit; ++i) {
    const StragglerCollective& c = *order[i];
    t.AddRow({IterationCell(c.iteration), c.index + 1, c.group.empty() ? std::string("-") : c.group, c.ranks,
              c.last_rank < 0 ? Cell{std::string("tie")} : Cell{int64_t{c.last_rank}}, c.late_ns, c.spread_ns, c.name});
  }
  if (order.size() > limit) {
    t.notes.push_back("The " + std::to_string(limit) + " latest of " + std::to_string(order.size()) + " collectives.");
  }
  t.notes.push_back("#: the collective's place among its group's in the iteration. Spread: latest - earliest arrival.");
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
  // its lateness is small; a straggler's adds up) ...
  if (all_late <= 0 || 2 * worst->late_ns <= all_late || worst->times_last < 2 || worst->behind_median_ns <= 0) {
    return {};
  }
  // ... its lateness matters: at least 10 us and 5% of a collective's mean duration ...
  const double mean_late = static_cast<double>(worst->late_ns) / static_cast<double>(worst->times_last);
  if (mean_late < std::max(10'000.0, 0.05 * s.mean_duration_ns)) return {};
  // ... well beyond the uncertainty of its clock's alignment: an offset off by its error
  // makes a rank look late at every collective ...
  if (mean_late < 2.0 * static_cast<double>(worst->offset_spread_ns) ||
      worst->behind_median_ns < 3.0 * worst->offset_error_ns) {
    return {};
  }
  // ... and it is more than chance: ranks that take turns being last by noise gather
  // the waiting on one of them too, in a short or two-rank job; with too few steps to
  // relabel them whole, a rank slowed for a step by chance is told apart only by being
  // late beyond chance in every step on its own (straggler_test_stats.cc says why).
  if (s.p_value >= kStragglerAlpha) return {};
  if (s.test == StragglerTest::kFewSteps && s.steps_late < s.steps) return {};
  if (s.test == StragglerTest::kLatenessModel && s.model.latest < s.model.blocks) return {};
  Finding f;
  f.rule = "straggler";
  f.title = "Straggler: rank " + std::to_string(worst->rank) + " reaches the collectives last, and the other "
            "ranks wait for it";
  f.threshold = "one rank causes more than half of the waiting at collectives (its arrival - the next latest "
                "rank's, summed over the collectives it reached last), is late by at least 10 us, 5% of a "
                "collective's mean duration and twice its clock's spread each time, arrives after the median by "
                "more than 3 standard errors of its clock's offset, with p < 0.01 that the waiting gathers so on "
                "one rank by chance";
  if (s.test == StragglerTest::kFewSteps) {
    // The per-collective p does not cover a rank slowed for each whole step by chance:
    // with these few steps nothing can, and the finding says so rather than claim it.
    f.threshold += " when each collective's ranks are relabelled apart (a slow step delays every rank alike, so "
                   "it cannot make one rank late within a collective), and late beyond chance in every step on its "
                   "own; that the same rank was slowed for each of the " + std::to_string(s.steps) +
                   " steps by chance is not ruled out (p >= " + PValueText(s.step_floor) + " by construction)";
  } else if (s.test == StragglerTest::kLatenessModel) {
    // Too few collectives for any relabelling: the lateness against the arrivals' noise,
    // which assumes that noise near normal; what that leaves open is said.
    const std::string block = s.model.by_step ? "step" : "collective";
    f.threshold += ", the rank's arrivals weighed against the noise of every rank's (a model of " + block +
                   " and rank, since no relabelling of these few collectives can reach 0.01; a delay of one rank in "
                   "one " + block + " cannot pass it, however large), and latest in every " + block + "; that rare "
                   "delays struck the same rank in each of the " + std::to_string(s.model.blocks) + " " + block +
                   "s by chance is not ruled out (p >= " + PValueText(s.model.block_floor) + " were one rank a " +
                   block + " struck)";
  }
  char share[64];
  std::snprintf(share, sizeof(share), "%.0f%%", 100.0 * static_cast<double>(worst->late_ns) / static_cast<double>(all_late));
  f.evidence.push_back("last in " + std::to_string(worst->times_last) + " of " + std::to_string(worst->collectives) +
                       " collectives, by " + FormatNs(mean_late) + " on average: " + share + " of all the waiting");
  f.evidence.push_back("p = " + PValueText(s.p_value) +
                       (s.test == StragglerTest::kLatenessModel ? " that one rank's arrivals are this late by chance: "
                                                                : " that one rank gathers this much of the waiting by chance: ") +
                       StragglerTestText(s));
  for (const std::string& u : s.undecided) f.evidence.push_back(u);
  f.evidence.push_back("arrives " + FormatNs(worst->behind_median_ns) + " after the median rank on average (host issue: " +
                       FormatNs(worst->host_behind_median_ns) + ")");
  f.evidence.push_back(s.alignment);
  if (s.world_size > static_cast<int>(s.ranks.size())) {
    f.evidence.push_back("the traces hold " + std::to_string(s.ranks.size()) + " of the job's " +
                         std::to_string(s.world_size) + " ranks: the straggler is the latest of these");
  }
  f.next_step = "look at rank " + std::to_string(worst->rank) +
                "'s own timeline before each collective: slower work, a different input size, host "
                "stalls (data loading, logging) or a slower device";
  f.explained_ns = static_cast<double>(worst->late_ns);
  return {f};
}

}  // namespace tierscope
