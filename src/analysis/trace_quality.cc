// The trace-quality checks, one function each over the shared index.
#include "analysis/trace_quality.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/gpu_time.h"
#include "core/allocator.h"
#include "core/int_map.h"
#include "core/sort.h"
#include "trace/args.h"

namespace tierscope {
namespace {

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool IsKernelLaunch(std::string_view n) {
  return Contains(n, "LaunchKernel") || Contains(n, "LaunchCooperativeKernel") || n == "cuLaunchKernelEx";
}

QualityCheck Check(const char* name, int64_t count, int64_t of, CheckStatus when_found, std::string affects,
                   std::vector<std::string> reports, std::vector<std::string> rules) {
  QualityCheck c;
  c.name = name;
  c.count = count;
  c.of = of;
  c.status = count > 0 ? when_found : CheckStatus::kPass;
  c.affects = std::move(affects);
  c.reports = std::move(reports);
  c.rules = std::move(rules);
  return c;
}

std::string Example(const TraceIndex& x, size_t i) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), " at %.3f us", static_cast<double>(x.E(i).ts_ns) / 1e3);
  return ShortenMiddle(std::string(x.Name(i)), 80) + buf;
}

using Streams = std::map<std::pair<int32_t, int32_t>, std::vector<size_t>>;

// Kernels by stream, in start order.
Streams SortedStreams(const TraceIndex& x) {
  Streams streams;
  for (size_t i : x.kernels) streams[{x.E(i).pid, x.E(i).tid}].push_back(i);
  for (auto& [key, v] : streams) {
    SortUnlessSorted(v.begin(), v.end(), [&](size_t a, size_t b) {
      return std::tie(x.E(a).ts_ns, x.E(a).dur_ns) < std::tie(x.E(b).ts_ns, x.E(b).dur_ns);
    });
  }
  return streams;
}

// A stream runs its kernels in the order they were launched, and launch correlation ids
// grow in launch order: a kernel that starts before one launched earlier on its stream is
// a broken clock or a bad merge of traces.
QualityCheck StreamOrder(const TraceIndex& x, const Streams& streams) {
  int64_t swapped = 0, pairs = 0;
  std::string first;
  std::vector<size_t> failed;
  for (const auto& [key, v] : streams) {
    for (size_t j = 1; j < v.size(); ++j) {
      const Event &a = x.E(v[j - 1]), &b = x.E(v[j]);
      if (a.correlation == 0 || b.correlation == 0) continue;
      ++pairs;
      if (b.correlation < a.correlation) {
        if (swapped++ == 0) first = Example(x, v[j]);
        failed.push_back(v[j]);
      }
    }
  }
  // Two host threads launching onto one stream can race between taking their correlation
  // ids and enqueueing: a few swaps are a warning; above 1% of pairs, a failure.
  QualityCheck c = Check("out_of_order", swapped, pairs, swapped * 100 > pairs ? CheckStatus::kFail : CheckStatus::kWarn,
                         "kernels on a stream in an order they were not launched in: a broken clock or a bad merge; "
                         "gaps and launch delays are wrong",
                         {"idle_time", "queue_length", "kernel_launch_stats", "temporal_breakdown"},
                         {"launch_bound", "gaps_large"});
  c.detail = first;
  c.events = std::move(failed);
  return c;
}

// Device events on one stream, in start order: overlaps (and ones inside the previous).
QualityCheck StreamOverlap(const TraceIndex& x, const Streams& streams) {
  int64_t overlaps = 0, inside = 0;
  double overlap_ns = 0, kernel_ns = 0;
  std::string first;
  std::vector<size_t> failed;
  for (const auto& [key, v] : streams) {
    int64_t end = INT64_MIN;
    for (size_t i : v) {
      const Event& e = x.E(i);
      kernel_ns += static_cast<double>(e.dur_ns);
      if (e.ts_ns < end) {
        ++overlaps;
        overlap_ns += static_cast<double>(std::min(end, e.ts_ns + e.dur_ns) - e.ts_ns);
        inside += e.ts_ns + e.dur_ns <= end ? 1 : 0;
        if (first.empty()) first = Example(x, i);
        failed.push_back(i);
      }
      end = std::max(end, e.ts_ns + e.dur_ns);
    }
  }
  QualityCheck c = Check("stream_overlap", overlaps, static_cast<int64_t>(x.kernels.size()), CheckStatus::kFail,
                         "kernels overlapping on a stream (PDL, a broken clock): sums count the overlap twice",
                         {"cuda_gpu_kern_sum", "op_sum", "op_roofline", "roofline_sum", "hot_kernels"},
                         {"roofline", "hot_kernel", "granularity"});
  // A small overlap (PDL's prologues) moves the sums by at most its own time: below 1% of the
  // kernel time it is a warning, not a failure.
  if (overlaps > 0 && overlap_ns < 0.01 * kernel_ns) c.status = CheckStatus::kWarn;
  if (overlaps > 0) {
    char share[64];
    std::snprintf(share, sizeof(share), "%.2f%% of kernel time overlapped; ", kernel_ns > 0 ? 100 * overlap_ns / kernel_ns : 0.0);
    c.detail = share + std::to_string(inside) + " wholly inside the previous; first: " + first;
  }
  c.events = std::move(failed);
  return c;
}

// Duplicated events: the same kind, name, times, place, ids, values and args twice (two
// allocations at one instant differ in their bytes, two launches in their correlation).
QualityCheck Duplicates(const Trace& t) {
  // A hash of every field but the args a event, sorted; only events whose hashes are equal
  // are compared in full (args by their text: kernels' are stored uninterned).
  const auto hash = [](const Event& e) {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t v : {static_cast<uint64_t>(e.ts_ns), static_cast<uint64_t>(e.dur_ns), static_cast<uint64_t>(e.name),
                       static_cast<uint64_t>(e.pid), static_cast<uint64_t>(e.tid),
                       static_cast<uint64_t>(e.correlation), static_cast<uint64_t>(e.external_id),
                       static_cast<uint64_t>(e.kind), std::bit_cast<uint64_t>(e.v0), std::bit_cast<uint64_t>(e.v1)}) {
      h = (h ^ v) * 1099511628211ull;
      h ^= h >> 29;
    }
    return h;
  };
  // Only the events whose hash another event has are sorted and compared: in a trace
  // without duplicates, a few hash collisions at most. The hashes seen go in one flat
  // table of 8 bytes a slot (0 marks a free one; a hash of 0 is taken as 1, which only
  // merges two hashes' events for the full comparison).
  const auto hash_of = [&](size_t i) {
    const uint64_t h = hash(t.events[i]);
    return h == 0 ? uint64_t{1} : h;
  };
  size_t cap = 16;
  while (cap < 2 * t.events.size()) cap *= 2;
  std::vector<uint64_t> seen = HugePageVector<uint64_t>(cap, 0);
  IntSet contested;
  const auto slot_of = [&](uint64_t h) { return static_cast<size_t>((h * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1); };
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (i + 16 < t.events.size()) __builtin_prefetch(&seen[slot_of(hash_of(i + 16))], 1);
    const uint64_t h = hash_of(i);
    size_t slot = slot_of(h);
    while (seen[slot] != 0 && seen[slot] != h) slot = (slot + 1) & (cap - 1);
    if (seen[slot] == h) contested.insert(static_cast<int64_t>(h));
    seen[slot] = h;
  }
  std::vector<uint64_t>().swap(seen);
  std::vector<std::pair<uint64_t, uint32_t>> keyed;
  if (contested.size() > 0) {
    for (size_t i = 0; i < t.events.size(); ++i) {
      const uint64_t h = hash_of(i);
      if (contested.contains(static_cast<int64_t>(h))) keyed.push_back({h, static_cast<uint32_t>(i)});
    }
  }
  std::sort(keyed.begin(), keyed.end());
  const auto args = [&](const Event& e) { return e.args >= 0 ? t.strings.Get(e.args) : std::string_view(); };
  const auto same = [&](const Event& a, const Event& b) {
    return a.ts_ns == b.ts_ns && a.dur_ns == b.dur_ns && a.name == b.name && a.pid == b.pid && a.tid == b.tid &&
           a.correlation == b.correlation && a.external_id == b.external_id && a.kind == b.kind && a.v0 == b.v0 &&
           a.v1 == b.v1 && args(a) == args(b);
  };
  int64_t dups = 0;
  std::vector<size_t> duplicated;
  for (size_t i = 0; i < keyed.size();) {
    size_t end = i + 1;
    while (end < keyed.size() && keyed[end].first == keyed[i].first) ++end;
    // Within a run of equal hashes: each event equal to an earlier one is a duplicate.
    for (size_t a = i + 1; a < end; ++a) {
      for (size_t b = i; b < a; ++b) {
        if (same(t.events[keyed[a].second], t.events[keyed[b].second])) {
          ++dups;
          duplicated.push_back(keyed[a].second);
          break;
        }
      }
    }
    i = end;
  }
  QualityCheck c = Check("duplicates", dups, static_cast<int64_t>(t.events.size()), CheckStatus::kFail,
                         "events recorded twice: every sum that includes them counts them twice",
                         {"cuda_gpu_kern_sum", "op_sum", "op_roofline", "cuda_api_sum"},
                         {"roofline", "hot_kernel", "launch_bound"});
  c.events = std::move(duplicated);
  return c;
}

// Fields the reports need: operator shapes (the roofline), launch sizes (granularity), and
// the import's skipped entries.
// An event that lasts far longer than the whole capture (ten times the span of every
// event's start, and over a minute) with nothing else ending near its end did not run that
// long: a profiler records an end only while it records, and a real long kernel (a
// collective stuck on a slow rank) ends with its synchronisation and its step around it.
// Totals, shares and findings that count such an event would rest on it.
QualityCheck EndlessEvents(const TraceIndex& x) {
  const Trace& t = *x.trace;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const Event& e : t.events) {
    first = std::min(first, e.ts_ns);
    last = std::max(last, e.ts_ns);
  }
  constexpr int64_t kMinute = int64_t{60} * 1'000'000'000;
  const double span = t.events.empty() ? 0.0 : static_cast<double>(last - first);
  const double limit = std::max(10 * span, static_cast<double>(kMinute));
  std::vector<size_t> long_events;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (static_cast<double>(t.events[i].dur_ns) > limit) long_events.push_back(i);
  }
  std::vector<int64_t> ends;  // every event's end, sorted: a partner's is near a real one's
  if (!long_events.empty()) {
    ends.reserve(t.events.size());
    for (const Event& e : t.events) ends.push_back(e.ts_ns + e.dur_ns);
    std::sort(ends.begin(), ends.end());
  }
  int64_t endless = 0;
  std::string detail;
  std::vector<size_t> events;
  for (size_t i : long_events) {
    const Event& e = t.events[i];
    const int64_t end = e.ts_ns + e.dur_ns;
    const int64_t near = std::max<int64_t>(1'000'000'000, e.dur_ns / 100);  // 1 s, or 1% of it
    const auto lo = std::lower_bound(ends.begin(), ends.end(), end - near);
    const auto hi = std::upper_bound(ends.begin(), ends.end(), end + near);
    if (hi - lo > 1) continue;  // another event ends with it (itself is one of them)
    if (endless++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), ": %.3f s, where every event starts within %.3f s and none ends near it",
                    static_cast<double>(e.dur_ns) / 1e9, span / 1e9);
      detail = Example(x, i) + buf;
    }
    events.push_back(i);
  }
  QualityCheck c = Check("endless_events", endless, static_cast<int64_t>(t.events.size()), CheckStatus::kFail,
                         "events lasting far longer than the whole capture: totals and shares that count them are wrong",
                         {"in_use", "temporal_breakdown", "cuda_gpu_kern_sum", "op_sum", "hot_kernels", "idle_time",
                          "kernel_type_breakdown", "cuda_api_sum"},
                         {"gpu_util_low", "gaps_large", "launch_bound", "hot_kernel", "granularity", "comm_dominant"});
  c.detail = detail;
  c.events = std::move(events);
  return c;
}

void FieldChecks(const TraceIndex& x, TraceQuality* q) {
  const Trace& t = *x.trace;
  int64_t ops = 0, shapeless = 0, gridless = 0;
  // Whether any operator has shapes: the first one that does ends the search.
  bool any_shapes = false;
  for (size_t i : x.ops) {
    const Event& e = x.E(i);
    if (e.args >= 0 && t.strings.Get(e.args).find("\"Input Dims\"") != std::string_view::npos) {
      any_shapes = true;
      break;
    }
  }
  ops = static_cast<int64_t>(x.ops.size());
  shapeless = any_shapes ? 0 : ops;
  for (size_t i : x.kernels) {
    const Event& e = x.E(i);
    // The importer's note where there is one: the text (spilled on a big trace) is not read.
    const bool grid = (e.arg_keys & kArgKeysKnown) != 0
                          ? (e.arg_keys & kArgHasGrid) != 0
                          : e.args >= 0 && !ArgValue(t.strings.Get(e.args), "grid").empty();
    gridless += grid ? 0 : 1;
  }
  // No operator at all (a device-only trace) is as good as none with shapes for the roofline.
  if (ops == 0 && !x.kernels.empty()) shapeless = ops = static_cast<int64_t>(x.kernels.size());
  QualityCheck s = Check("op_shapes_missing", ops > 0 && shapeless == ops ? shapeless : 0, ops, CheckStatus::kWarn,
                         "no operator has its input shapes (record_shapes=False): no roofline", {"op_roofline", "roofline_sum"}, {"roofline"});
  q->checks.push_back(s);
  q->checks.push_back(Check("kernel_grid_missing", gridless, static_cast<int64_t>(x.kernels.size()),
                           CheckStatus::kWarn, "kernels without their launch grid: granularity cannot be judged",
                           {"hot_kernels"}, {"granularity"}));
  QualityCheck imp = Check("import_skipped", t.stats.malformed, t.stats.events_read, CheckStatus::kWarn,
                           "entries the import skipped as malformed: every report is without them", {}, {});
  for (const auto& [reason, count] : t.stats.malformed_reasons) {
    imp.detail += (imp.detail.empty() ? "" : ", ") + std::to_string(count) + " " + reason;
  }
  q->checks.push_back(imp);

}

// The names the failed checks' events appear under in the tables: a device event's own
// (kernel tables), the call that launched it (API tables, a graph's replay), the op that
// launched it and every op around that one (operator tables count time at each level).
void MarkNames(const TraceIndex& x, TraceQuality* q) {
  bool any = false;
  for (const QualityCheck& c : q->checks) any = any || (c.status == CheckStatus::kFail && !c.events.empty());
  if (!any) return;
  std::unordered_map<int64_t, std::vector<size_t>> ops_by_ext;
  for (size_t i : x.ops) {
    if (x.E(i).external_id != 0) ops_by_ext[x.E(i).external_id].push_back(i);
  }
  const std::vector<int64_t> parents = OpParents(x);
  for (const QualityCheck& c : q->checks) {
    if (c.status != CheckStatus::kFail) continue;
    std::unordered_set<int64_t> seen_ext;
    for (size_t i : c.events) {
      const Event& e = x.E(i);
      q->marked_names[std::string(x.Name(i))].insert(c.name);
      if (e.kind != EventKind::kRuntime && e.correlation != 0) {
        if (auto it = x.runtime_by_corr.find(e.correlation); it != x.runtime_by_corr.end()) {
          q->marked_names[std::string(x.Name(it->second))].insert(c.name);
        }
      }
      if (e.external_id == 0 || !seen_ext.insert(e.external_id).second) continue;
      const auto ops = ops_by_ext.find(e.external_id);
      if (ops == ops_by_ext.end()) continue;
      for (size_t op : ops->second) {
        for (int64_t a = static_cast<int64_t>(op); a >= 0; a = parents[static_cast<size_t>(a)]) {
          q->marked_names[std::string(x.Name(static_cast<size_t>(a)))].insert(c.name);
        }
      }
    }
  }
}

// Launches and the device work they made (graph_kernels_missing, graph_replay,
// launch_without_kernel, cut_short), into `q`.
void LaunchChecks(const TraceIndex& x, TraceQuality* q) {
  // The last device end (where a cut trace stops).
  int64_t last_device_end = INT64_MIN;
  for (const std::vector<size_t>* list : {&x.kernels, &x.memops}) {
    for (size_t i : *list) last_device_end = std::max(last_device_end, x.E(i).ts_ns + x.E(i).dur_ns);
  }
  // Whether a name is a kernel or graph launch, once per name.
  IntMap<uint8_t> launch_kind;  // name -> 0 neither, 1 kernel launch, 2 graph launch
  const auto kind_of = [&](size_t i) {
    auto [slot, added] = launch_kind.emplace(x.E(i).name, 0);
    if (added) {
      const std::string_view n = x.Name(i);
      slot->second = IsGraphLaunch(n) ? 2 : IsKernelLaunch(n) ? 1 : 0;
    }
    return slot->second;
  };
  int64_t launches = 0, no_kernel = 0, graphs = 0, graph_empty = 0, cut = 0;
  std::string first_no_kernel, first_graph, first_cut;
  std::vector<size_t> empty_graphs, cut_launches;
  // Whether a call's device work was recorded: x.launches holds the runtime calls with a
  // device event of their correlation, in x.runtime's order, so one cursor walks it.
  size_t next_launch = 0;
  for (size_t i : x.runtime) {
    const bool found = next_launch < x.launches.size() && x.launches[next_launch] == i;
    next_launch += found ? 1 : 0;
    const uint8_t launch = kind_of(i);
    if (launch == 0) continue;
    const bool graph = launch == 2;
    if (found) {
      ++launches;
      graphs += graph ? 1 : 0;
      continue;
    }
    if (!x.kernels.empty() && x.E(i).ts_ns > last_device_end) {  // after the last recorded kernel
      if (cut++ == 0) first_cut = Example(x, i);
      cut_launches.push_back(i);
      continue;
    }
    ++launches;
    if (graph) {
      ++graphs;
      if (graph_empty++ == 0) first_graph = Example(x, i);
      empty_graphs.push_back(i);
    } else if (no_kernel++ == 0) {
      first_no_kernel = Example(x, i);
    }
  }
  QualityCheck g = Check("graph_kernels_missing", graph_empty, graphs, CheckStatus::kFail,
                         "graph launches with no kernel recorded: the device looks idle while it ran them",
                         {"in_use", "gaps", "temporal_breakdown", "idle_time", "cuda_gpu_kern_sum"},
                         {"gpu_util_low", "gaps_large", "launch_bound"});
  g.detail = first_graph;
  g.events = std::move(empty_graphs);
  q->checks.push_back(g);
  // Kernels a graph replayed: recorded, but with no operator (or shapes) behind them and one
  // launch for many kernels (vLLM's and SGLang's CUDA-graph decode).
  int64_t replayed = 0, device_work = 0;
  const auto corr = [&](const std::vector<size_t>& list, size_t j) { return x.E(list[j]).correlation; };
  for (const std::vector<size_t>* list : {&x.kernels, &x.memops}) {
    ForEachPrefetched(list->size(), [&](size_t j) { x.runtime_by_corr.Prefetch(corr(*list, j)); }, [&](size_t j) {
      const size_t i = (*list)[j];
      ++device_work;
      const auto it = x.runtime_by_corr.find(x.E(i).correlation);
      replayed += x.E(i).correlation != 0 && it != x.runtime_by_corr.end() && kind_of(it->second) == 2 ? 1 : 0;
    });
  }
  QualityCheck r = Check("graph_replay", replayed, device_work, CheckStatus::kWarn,
                         "kernels a graph replayed: no operator, shapes or own launch behind them",
                         {"op_sum", "op_roofline", "roofline_sum", "kernel_launch_stats"}, {});
  if (replayed > 0) {
    r.detail = std::to_string(replayed) + " kernels from " + std::to_string(graphs - graph_empty) +
               " graph launch(es): operator reports cover the rest only";
  }
  q->checks.push_back(r);
  QualityCheck l = Check("launch_without_kernel", no_kernel, launches - graphs, CheckStatus::kWarn,
                         "launches whose kernel is not in the trace: launch statistics miss them",
                         {"cuda_api_gpu_sum", "kernel_launch_stats"}, {});
  l.detail = first_no_kernel;
  q->checks.push_back(l);
  QualityCheck c = Check("cut_short", cut, cut + launches, CheckStatus::kFail,
                         "launches after the last kernel, theirs missing: the trace ends before its device work",
                         {"in_use", "temporal_breakdown", "cuda_gpu_kern_sum"}, {"gpu_util_low"});
  c.detail = first_cut;
  c.events = std::move(cut_launches);
  q->checks.push_back(c);
}

// Device work and the launches behind it (kernel_without_launch, clock_skew), into `q`.
void DeviceLaunchChecks(const TraceIndex& x, TraceQuality* q) {
  const auto corr = [&](const std::vector<size_t>& list, size_t j) { return x.E(list[j]).correlation; };
  // Device events with no launch call, and ones that start before their launch did.
  int64_t device_events = 0, no_launch = 0, early = 0;
  int64_t first_launch = INT64_MAX, earliest_early = INT64_MAX;  // a skew that reaches before every launch
  int64_t most_early_ns = 0;                                       // or far before its own
  std::string first_early;
  std::vector<size_t> early_events;
  for (const std::vector<size_t>* list : {&x.kernels, &x.memops}) {
    ForEachPrefetched(list->size(), [&](size_t j) { x.runtime_by_corr.Prefetch(corr(*list, j)); }, [&](size_t j) {
      const size_t i = (*list)[j];
      ++device_events;
      const auto it = x.runtime_by_corr.find(x.E(i).correlation);
      if (x.E(i).correlation == 0 || it == x.runtime_by_corr.end()) {
        ++no_launch;
        return;
      }
      first_launch = std::min(first_launch, x.E(it->second).ts_ns);
      if (x.E(i).ts_ns < x.E(it->second).ts_ns) {
        if (early++ == 0) first_early = Example(x, i);
        earliest_early = std::min(earliest_early, x.E(i).ts_ns);
        most_early_ns = std::max(most_early_ns, x.E(it->second).ts_ns - x.E(i).ts_ns);
        early_events.push_back(i);
      }
    });
  }
  QualityCheck n = Check("kernel_without_launch", no_launch, device_events, CheckStatus::kWarn,
                         "device work with no launch call: launch statistics and operators leave it out",
                         {"kernel_launch_stats", "queue_length", "op_sum", "op_roofline"}, {"launch_bound"});
  q->checks.push_back(n);
  // Device work that starts before the trace's first launch stretches the device's window
  // to where no work was, and work a millisecond or more before its launch (no skew of a
  // working clock is near that) lands where the device was idle: then in-use, gaps and the
  // idle shares are wrong too.
  constexpr int64_t kFarEarlyNs = 1'000'000;
  const bool stretched = earliest_early < first_launch || most_early_ns >= kFarEarlyNs;
  QualityCheck k = Check("clock_skew", early, device_events - no_launch, CheckStatus::kFail,
                         stretched ? "device work starting before its launch, some far before it or before the "
                                     "trace's first launch: clocks disagree, launch delays are wrong, and the "
                                     "device's busy and idle time (in-use, gaps, idle shares) moves to where no work was"
                                   : "device work starting before its launch: clocks disagree, launch delays are wrong",
                         {"kernel_launch_stats", "idle_time", "queue_length"}, {"launch_bound"});
  if (stretched) {
    k.reports.insert(k.reports.end(), {"in_use", "gaps", "temporal_breakdown", "idle_time_breakdown"});
    k.rules.insert(k.rules.end(), {"gpu_util_low", "gaps_large"});
  }
  k.detail = first_early;
  k.events = std::move(early_events);
  q->checks.push_back(k);

}

}  // namespace

int64_t MarkRows(const TraceQuality& q, Table* table) {
  const auto name = std::find(table->columns.begin(), table->columns.end(), "Name");
  if (q.marked_names.empty() || name == table->columns.end()) return 0;
  const size_t at = static_cast<size_t>(name - table->columns.begin());
  int64_t marked = 0;
  for (std::vector<Cell>& row : table->rows) {
    std::string checks;
    if (at < row.size()) {
      if (const std::string* n = std::get_if<std::string>(&row[at])) {
        if (auto it = q.marked_names.find(*n); it != q.marked_names.end()) {
          for (const std::string& c : it->second) checks += (checks.empty() ? "" : ",") + c;
          ++marked;
        }
      }
    }
    if (checks.empty()) checks = "-";
    row.insert(row.begin() + static_cast<std::ptrdiff_t>(std::min(at, row.size())), Cell(std::move(checks)));
  }
  table->columns.insert(table->columns.begin() + static_cast<std::ptrdiff_t>(at), "Failed check");
  return marked;
}

TraceQuality CheckTraceQuality(const TraceIndex& x) {
  TraceQuality q;
  const Trace& t = *x.trace;
  q.events = t.events.size();
  const Streams streams = SortedStreams(x);
  q.checks.push_back(StreamOverlap(x, streams));
  q.checks.push_back(StreamOrder(x, streams));

  LaunchChecks(x, &q);
  // A launch's flow left open is a launch with no kernel (above); B ranges left open are
  // a Chrome-format trace cut inside them (tierscope reads X events, not B/E pairs).
  QualityCheck open = Check("open_at_end", t.stats.open_ranges, t.stats.range_begins, CheckStatus::kWarn,
                            "B ranges with no E: the trace was cut inside them (B/E ranges are not read; X events "
                            "are)", {}, {});
  q.checks.push_back(open);

  DeviceLaunchChecks(x, &q);

  // Copies and sets recorded as kernels (ROCm 7.1): counted as memory by the breakdowns.
  int64_t copies = 0;
  std::string first_copy;
  DeviceEventTypes types(x);
  for (size_t i : x.kernels) {
    if (types.Of(i) == KernelType::kMemory) {
      if (copies++ == 0) first_copy = Example(x, i);
    }
  }
  QualityCheck m = Check("copies_as_kernels", copies, static_cast<int64_t>(x.kernels.size()), CheckStatus::kWarn,
                         "copies or sets recorded as kernels: breakdowns count them as memory, kernel tables list them",
                         {"cuda_gpu_kern_sum", "hot_kernels"}, {});
  m.detail = first_copy;
  q.checks.push_back(m);

  q.checks.push_back(Duplicates(t));
  q.checks.push_back(EndlessEvents(x));

  FieldChecks(x, &q);

  for (const QualityCheck& check : q.checks) {
    if (check.status != CheckStatus::kFail) continue;
    q.blocked_rules.insert(check.rules.begin(), check.rules.end());
    q.marked_reports.insert(check.reports.begin(), check.reports.end());
  }
  MarkNames(x, &q);
  return q;
}

std::string TraceQuality::Line() const {
  if (events == 0) {
    return "trace quality: the trace holds no timeline event: no check passed, and there is nothing to analyse";
  }
  int passed = 0, warned = 0;
  std::string failed, warns;
  for (const QualityCheck& c : checks) {
    std::string& list = c.status == CheckStatus::kFail ? failed : warns;
    if (c.status == CheckStatus::kPass) {
      ++passed;
      continue;
    }
    warned += c.status == CheckStatus::kWarn ? 1 : 0;
    list += (list.empty() ? "" : ", ") + c.name + " " + std::to_string(c.count);
  }
  const int fails = static_cast<int>(checks.size()) - passed - warned;
  std::string line = "trace quality: " + std::to_string(passed) + " of " + std::to_string(checks.size()) +
                     " checks passed";
  if (fails > 0) line += "; FAILED: " + failed + " (the reports they affect are marked; no rule concludes from them)";
  if (warned > 0) line += "; warnings: " + warns;
  return line;
}

void WithholdFindings(const TraceQuality& q, std::vector<Finding>* findings) {
  std::string rules;
  std::erase_if(*findings, [&](const Finding& f) {
    if (q.blocked_rules.count(f.rule) == 0) return false;
    rules += (rules.empty() ? "" : ", ") + f.rule;
    return true;
  });
  if (rules.empty()) return;
  Finding f;
  f.rule = "trace_quality";
  f.title = "Findings withheld: they would rest on data that failed a trace-quality check";
  f.evidence.push_back("withheld: " + rules);
  f.evidence.push_back(q.Line());
  f.threshold = "a failed check in trace_quality";
  f.next_step = "record the trace again without the defect (see trace_quality's Affects column), then analyze it";
  findings->insert(findings->begin(), std::move(f));
}

std::string FailedChecks(const TraceQuality& q) {
  std::string out;
  for (const QualityCheck& c : q.checks) {
    if (c.status == CheckStatus::kFail) out += (out.empty() ? "" : ", ") + c.name;
  }
  return out;
}

Table TraceQualityTable(const TraceQuality& q) {
  Table t;
  t.name = "trace_quality";
  t.title = "Trace quality: what this trace can be trusted for";
  t.columns = {"Status", "Count", "Of", "Check", "First example", "Affects"};
  for (const QualityCheck& c : q.checks) {
    // With no timeline event a check has nothing to pass: "n/a", not "pass".
    const char* status = q.events == 0                   ? "n/a"
                         : c.status == CheckStatus::kPass ? "pass"
                         : c.status == CheckStatus::kWarn ? "warn"
                                                          : "FAIL";
    t.AddRow({std::string(status), c.count, c.of, c.name, c.detail.empty() ? "-" : c.detail, c.affects});
  }
  t.notes.push_back(q.Line());
  if (!q.blocked_rules.empty()) {
    std::string rules;
    for (const std::string& r : q.blocked_rules) rules += (rules.empty() ? "" : ", ") + r;
    t.notes.push_back("rules that draw no conclusion from this trace: " + rules);
  }
  return t;
}

}  // namespace tierscope
