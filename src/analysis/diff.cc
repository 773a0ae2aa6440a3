// TraceDiff.
#include "analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "analysis/diff_explained.h"
#include "analysis/trace_quality.h"

namespace tierscope {
namespace {

struct Side {
  std::map<std::string, double> ops, kernel_time, kernel_count;
  double launches = 0, kernels = 0, memops = 0, device_ns = 0;
  double in_use = 0;
  std::string hottest;
};

// One side from the per-unit counts (trace/units.h), or the trace's totals.
Side Collect(const TraceIndex& x, bool per_unit) {
  const UnitCounts c = per_unit ? x.counts : CountPerUnit(*x.trace, {}, "");
  Side s;
  for (const auto& [k, v] : c.op_calls) s.ops[k] = c.PerUnit(static_cast<double>(v));
  for (const auto& [k, v] : c.kernel_ns_by_name) s.kernel_time[k] = c.PerUnit(v);
  for (const auto& [k, v] : c.kernel_calls) s.kernel_count[k] = c.PerUnit(static_cast<double>(v));
  s.launches = c.PerUnit(static_cast<double>(c.launches));
  s.kernels = c.PerUnit(static_cast<double>(c.kernels));
  s.memops = c.PerUnit(static_cast<double>(c.memory_ops));
  s.device_ns = c.PerUnit(c.kernel_ns + c.memory_op_ns);
  s.in_use = DeviceInUse(x).percent();
  double best = -1;
  for (auto& [k, v] : s.kernel_time) {
    if (v > best) {
      best = v;
      s.hottest = k;
    }
  }
  return s;
}

std::string Num(double v) {
  char buf[32];
  if (v == std::floor(v)) std::snprintf(buf, sizeof(buf), "%.0f", v);
  else std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

Cell Ratio(double a, double b) {
  if (a == 0) return std::string(b == 0 ? "=" : "new");
  return b / a;
}

}  // namespace

TraceDiff DiffTraces(const TraceIndex& base, const TraceIndex& next) {
  TraceDiff d;
  d.per_unit = !base.units.empty() && !next.units.empty();
  const Side a = Collect(base, d.per_unit), b = Collect(next, d.per_unit);
  const std::string per = d.per_unit ? " per work unit" : " (totals)";

  d.summary.name = "diff_summary";
  d.summary.title = "Baseline vs new" + per;
  d.summary.columns = {"Base", "New", "New/Base", "Metric"};
  auto row = [&](const std::string& metric, double x, double y) {
    d.summary.AddRow({x, y, Ratio(x, y), metric});
  };
  row("launches", a.launches, b.launches);
  row("kernels", a.kernels, b.kernels);
  row("memory operations", a.memops, b.memops);
  row("device time (ns)", a.device_ns, b.device_ns);
  row("device in use (%)", a.in_use, b.in_use);
  d.summary.notes.push_back("hottest kernel: " + (a.hottest.empty() ? "-" : a.hottest) + " -> " +
                            (b.hottest.empty() ? "-" : b.hottest));

  d.operators.name = "diff_operators";
  d.operators.title = "Operator calls" + per;
  d.operators.columns = {"Base", "New", "Delta", "New/Base", "Operator"};
  std::set<std::string> names;
  for (auto& [k, v] : a.ops) names.insert(k);
  for (auto& [k, v] : b.ops) names.insert(k);
  std::vector<std::pair<double, std::string>> order;
  for (const auto& n : names) {
    const double x = a.ops.count(n) ? a.ops.at(n) : 0, y = b.ops.count(n) ? b.ops.at(n) : 0;
    order.push_back({std::fabs(y - x), n});
  }
  std::sort(order.rbegin(), order.rend());
  for (auto& [delta, n] : order) {
    const double x = a.ops.count(n) ? a.ops.at(n) : 0, y = b.ops.count(n) ? b.ops.at(n) : 0;
    d.operators.AddRow({x, y, y - x, Ratio(x, y), n});
  }

  d.kernels.name = "diff_kernels";
  d.kernels.title = "Kernels" + per + " (time in ns)";
  d.kernels.columns = {"Base time", "New time", "Base count", "New count", "Kernel"};
  std::set<std::string> kn;
  for (auto& [k, v] : a.kernel_time) kn.insert(k);
  for (auto& [k, v] : b.kernel_time) kn.insert(k);
  std::vector<std::pair<double, std::string>> korder;
  for (const auto& n : kn) {
    korder.push_back({std::max(a.kernel_time.count(n) ? a.kernel_time.at(n) : 0.0,
                               b.kernel_time.count(n) ? b.kernel_time.at(n) : 0.0), n});
  }
  std::sort(korder.rbegin(), korder.rend());
  for (const auto& entry : korder) {
    const std::string& n = entry.second;  // a name, not a structured binding: lambdas capture it
    auto get = [&](const std::map<std::string, double>& m) { return m.count(n) ? m.at(n) : 0.0; };
    d.kernels.AddRow({get(a.kernel_time), get(b.kernel_time), get(a.kernel_count), get(b.kernel_count), n});
  }

  // Headline: launches and the operators that changed most.
  d.headline.push_back("launches " + Num(a.launches) + " -> " + Num(b.launches) + per);
  int shown = 0;
  for (auto& [delta, n] : order) {
    if (delta == 0 || shown == 4) break;
    const double x = a.ops.count(n) ? a.ops.at(n) : 0, y = b.ops.count(n) ? b.ops.at(n) : 0;
    d.headline.push_back(n + " " + Num(x) + " -> " + Num(y));
    ++shown;
  }
  d.headline.push_back("device time " + FormatNs(a.device_ns) + " -> " + FormatNs(b.device_ns) +
                       ", in use " + Num(a.in_use) + "% -> " + Num(b.in_use) + "%");
  if (a.hottest != b.hottest) d.headline.push_back("hottest kernel: " + a.hottest + " -> " + b.hottest);
  d.explained = DiffExplainedTable(base, next);
  const TraceQuality qa = CheckTraceQuality(base), qb = CheckTraceQuality(next);
  d.base_quality = qa.Line();
  d.new_quality = qb.Line();
  const std::string fa = FailedChecks(qa), fb = FailedChecks(qb);
  d.quality_failed = !fa.empty() || !fb.empty();
  if (d.quality_failed) {
    const std::string which = !fa.empty() && !fb.empty() ? "the base (" + fa + ") and the new trace (" + fb + ")"
                              : !fa.empty()              ? "the base (" + fa + ")"
                                                         : "the new trace (" + fb + ")";
    d.headline.insert(d.headline.begin(), "MARKED: checks failed on " + which +
                                              ": the changes below may rest on wrong numbers; conclude nothing from "
                                              "them until trace_quality (tierscope analyze) says why");
    for (Table* t : {&d.summary, &d.operators, &d.kernels, &d.explained}) {
      t->notes.push_back("MARKED: base " + d.base_quality + "; new " + d.new_quality);
    }
  }
  return d;
}

}  // namespace tierscope
