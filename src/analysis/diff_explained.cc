// diff_explained (diff_explained.h).
#include "analysis/diff_explained.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/whatif.h"

namespace tierscope {
namespace {

constexpr size_t kTopDifferences = 10;

// Mean over a result's steps of (measured span, replayed, predicted); nullopt when no step
// re-timed.
struct Timing {
  double measured = 0, replay = 0, predicted = 0;
};
std::optional<Timing> MeanStep(const WhatIfResult& r) {
  if (r.steps.empty()) return std::nullopt;
  Timing t;
  for (const WhatIfStep& s : r.steps) {
    t.measured += static_cast<double>(s.measured_ns);
    t.replay += static_cast<double>(s.replay_ns);
    t.predicted += static_cast<double>(s.predicted_ns);
  }
  const double n = static_cast<double>(r.steps.size());
  return Timing{t.measured / n, t.replay / n, t.predicted / n};
}

// The steps re-timed under each set of changes, in order; nullopt where one has no step.
std::vector<std::optional<Timing>> Retime(const TraceIndex& x, const std::vector<std::vector<WhatIfChange>>& sets) {
  StatusOr<std::vector<WhatIfResult>> r = WhatIfEach(x, sets, std::nullopt);
  std::vector<std::optional<Timing>> out(sets.size());
  if (!r.ok()) return out;
  for (size_t i = 0; i < sets.size(); ++i) out[i] = MeanStep((*r)[i]);
  return out;
}

WhatIfChange Cpu(double factor) {
  WhatIfChange c;
  c.kind = WhatIfChange::Kind::kCpu;
  c.value = factor;
  char buf[32];
  std::snprintf(buf, sizeof buf, "cpu=%.3g", factor);
  c.text = buf;
  return c;
}

// Host operators' own time per unit: the top-level operators' durations.
double HostOpNsPerUnit(const TraceIndex& x) {
  const std::vector<int64_t> parents = OpParents(x);
  double ns = 0;
  for (size_t i : x.ops) {
    if (parents[i] < 0) ns += static_cast<double>(x.E(i).dur_ns);
  }
  return x.counts.PerUnit(ns);
}

WhatIfChange Kernel(const std::string& name, double factor) {
  WhatIfChange c;
  c.kind = WhatIfChange::Kind::kKernels;
  c.selector = "name:" + name;
  c.value = factor;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", factor);
  c.text = "name:" + name + "=" + buf;
  return c;
}

}  // namespace

Table DiffExplainedTable(const TraceIndex& base, const TraceIndex& next) {
  Table t;
  t.name = "diff_explained";
  t.title = "How much of the measured change each difference explains (the baseline re-timed with it)";
  t.columns = {"Predicted change (ns)", "Of measured (%)", "Difference"};
  const UnitCounts &a = base.counts, &b = next.counts;
  const double kernels_a = a.PerUnit(static_cast<double>(a.kernels)), kernels_b = b.PerUnit(static_cast<double>(b.kernels));
  if (kernels_a <= 0) {
    t.notes.push_back("the baseline has no kernels: there is no per-kernel change to explain");
    return t;
  }
  if (std::fabs(kernels_b - kernels_a) > 0.1 * kernels_a) {
    t.notes.push_back("the traces launch different numbers of kernels per step (" + std::to_string(std::llround(kernels_a)) +
                      " vs " + std::to_string(std::llround(kernels_b)) +
                      "): the work was restructured (batching, fusion), so a per-kernel explanation does not "
                      "apply; predict such a change with `tierscope whatif BASE --change batch=K`");
    return t;
  }
  std::map<std::string, double> calls_a, calls_b, ns_a, ns_b;
  for (const auto& [k, v] : a.kernel_calls) calls_a[k] = a.PerUnit(static_cast<double>(v));
  for (const auto& [k, v] : b.kernel_calls) calls_b[k] = b.PerUnit(static_cast<double>(v));
  for (const auto& [k, v] : a.kernel_ns_by_name) ns_a[k] = a.PerUnit(v);
  for (const auto& [k, v] : b.kernel_ns_by_name) ns_b[k] = b.PerUnit(v);
  std::vector<std::pair<double, WhatIfChange>> ranked;  // (|time change per unit|, change)
  int64_t added = 0;
  double added_ns = 0;
  for (const auto& [k, calls] : calls_a) {
    if (calls <= 0 || ns_a[k] <= 0) continue;
    const auto in_b = calls_b.find(k);
    const double per_call_a = ns_a[k] / calls;
    const double per_call_b = in_b == calls_b.end() || in_b->second <= 0 ? 0 : ns_b[k] / in_b->second;
    const double factor = per_call_b / per_call_a;
    if (std::fabs(factor - 1) < 0.01) continue;
    ranked.push_back({std::fabs(ns_a[k] - (in_b == calls_b.end() ? 0 : ns_b[k])), Kernel(k, factor)});
  }
  for (const auto& [k, calls] : calls_b) {
    if (calls_a.count(k) == 0) ++added, added_ns += ns_b[k];
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  if (ranked.size() > kTopDifferences) ranked.resize(kTopDifferences);
  std::vector<WhatIfChange> all;
  for (const auto& [ns, c] : ranked) all.push_back(c);
  const double host_a = HostOpNsPerUnit(base), host_b = HostOpNsPerUnit(next);
  if (host_a > 0 && std::fabs(host_b / host_a - 1) >= 0.01) all.push_back(Cpu(host_b / host_a));
  // The baseline's graphs built once: unchanged (cpu=1), each difference alone, all together.
  std::vector<std::vector<WhatIfChange>> sets = {{Cpu(1)}};
  for (const WhatIfChange& c : all) sets.push_back({c});
  if (!all.empty()) sets.push_back(all);
  const std::vector<std::optional<Timing>> retimed = Retime(base, sets);
  const std::optional<Timing> now = Retime(next, {{Cpu(1)}}).front();
  const std::optional<Timing>& base_t = retimed.front();
  if (!base_t || !now || base_t->replay <= 0) {
    t.notes.push_back("a trace has no step to re-time: nothing to explain with");
    return t;
  }
  const double measured = now->measured - base_t->measured;
  const auto share = [&](double d) { return Cell(measured != 0 ? 100.0 * d / measured : 0.0); };
  for (size_t i = 0; i < all.size(); ++i) {
    const std::optional<Timing>& r = retimed[i + 1];
    if (!r) continue;
    const double d = r->predicted - r->replay;
    t.AddRow({static_cast<int64_t>(std::llround(d)), share(d), all[i].text});
  }
  if (!all.empty()) {
    if (const std::optional<Timing>& r = retimed.back()) {
      const double d = r->predicted - r->replay;
      t.AddRow({static_cast<int64_t>(std::llround(d)), share(d), "all of the above together"});
      t.AddRow({static_cast<int64_t>(std::llround(measured - d)), share(measured - d), "unexplained"});
    }
  }
  t.AddRow({static_cast<int64_t>(std::llround(measured)), Cell(100.0), "measured change of a step"});
  t.notes.push_back("each difference alone re-times the baseline's steps (tierscope whatif): a kernel's time per "
                    "call as the new trace has it (name:KERNEL=F; 0 when the new trace no longer runs it), the "
                    "host's operators at the new trace's speed (cpu=F); a step is the mean over the traces' steps");
  if (added > 0) {
    t.notes.push_back(std::to_string(added) + " kernel(s) run only in the new trace (" + FormatNs(added_ns) +
                      " a step): the baseline's graph has no place for them, so their time is in 'unexplained'");
  }
  return t;
}

}  // namespace tierscope
