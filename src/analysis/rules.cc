// Rules and diagnosis.
#include "analysis/rules.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/gpu_time.h"
#include "analysis/table.h"
#include "core/int_map.h"
#include "core/sort.h"
#include "core/text.h"
#include "trace/args.h"

namespace tierscope {
namespace {

bool Contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

std::string Fmt(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c);
  return buf;
}

bool IsMemcpyApi(std::string_view n) {
  return (Contains(n, "cudaMemcpy") || Contains(n, "hipMemcpy") || Contains(n, "musaMemcpy") ||
          Contains(n, "cuMemcpy")) && !Contains(n, "Async");
}
bool IsMemsetApi(std::string_view n) {
  return (Contains(n, "cudaMemset") || Contains(n, "hipMemset") || Contains(n, "musaMemset") ||
          Contains(n, "cuMemset")) && !Contains(n, "Async");
}
bool IsSyncApi(std::string_view n) { return Contains(n, "Synchronize"); }

// Adds a finding for runtime calls matching `pred`, if any.
void ApiRule(const TraceIndex& x, bool (*pred)(std::string_view), const char* rule,
             const char* title, const char* next, std::vector<Finding>& out) {
  // Calls and time by interned name; the predicate is asked once a name.
  IntMap<std::pair<int64_t, double>> by_id;
  for (size_t i : x.runtime) {
    auto& [calls, ns] = by_id[x.E(i).name];
    ++calls;
    ns += static_cast<double>(x.E(i).dur_ns);
  }
  int64_t n = 0;
  double t = 0;
  std::map<std::string, int64_t> names;
  by_id.ForEach([&](int64_t id, const std::pair<int64_t, double>& c) {
    const std::string_view name = x.trace->strings.Get(static_cast<int32_t>(id));
    if (!pred(name)) return;
    n += c.first;
    t += c.second;
    names[std::string(name)] += c.first;
  });
  if (n == 0) return;
  Finding f;
  f.rule = rule;
  f.title = title;
  f.threshold = "any call";
  f.evidence.push_back(std::to_string(n) + " calls, " + FormatNs(t) + " of host time blocked");
  for (auto& [name, c] : names) f.examples.push_back(name + " x" + std::to_string(c));
  f.next_step = next;
  f.explained_ns = t;
  out.push_back(std::move(f));
}

// A kernel's grid from its args as "[30, 4, 1]" — one line, however the trace spelled it
// (Kineto now pretty-prints it over several) — and its block count; empty and 0 when the
// arg is absent or not a list of 1 to 3 sizes whose product fits.
struct GridArg {
  std::string text;
  int64_t blocks = 0;
};

GridArg KernelGrid(std::string_view args) {
  const std::vector<int64_t> dims = ArgDims(args, "grid");
  if (dims.empty()) return {};
  GridArg g;
  g.blocks = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (__builtin_mul_overflow(g.blocks, dims[i], &g.blocks)) return {};
    g.text += (i ? ", " : "[") + std::to_string(dims[i]);
  }
  g.text += "]";
  return g;
}

}  // namespace

std::vector<Finding> RunRules(const TraceIndex& x, const AnalysisOptions& o, const RuleOptions& r) {
  std::vector<Finding> out;
  ApiRule(x, IsMemcpyApi, "sync_memcpy", "Synchronous memcpy calls block the host",
          "use cudaMemcpyAsync with pinned host memory, and keep data on the device", out);
  ApiRule(x, IsMemsetApi, "sync_memset", "Synchronous memset calls block the host",
          "use cudaMemsetAsync on a stream", out);
  ApiRule(x, IsSyncApi, "sync_api", "Synchronisation calls stall the host",
          "synchronise only at the timing boundaries; let work queue", out);

  const InUse u = DeviceInUse(x);
  const std::vector<int64_t> gaps = DeviceGaps(x);
  {
    int64_t n = 0;
    double t = 0, mx = 0;
    for (int64_t g : gaps) {
      if (g >= r.large_gap_ns) {
        ++n;
        t += static_cast<double>(g);
        mx = std::max(mx, static_cast<double>(g));
      }
    }
    if (n > 0) {
      Finding f;
      f.rule = "gaps_large";
      f.title = "Large gaps leave the device idle";
      f.threshold = "gap >= " + FormatNs(r.large_gap_ns);
      f.evidence.push_back(std::to_string(n) + " gaps, " + FormatNs(t) + " idle in total, largest " + FormatNs(mx));
      // The largest gaps, named by the device work on either side.
      std::vector<size_t> dev = x.kernels;
      dev.insert(dev.end(), x.memops.begin(), x.memops.end());
      SortUnlessSorted(dev.begin(), dev.end(), [&](size_t a, size_t b) { return x.E(a).ts_ns < x.E(b).ts_ns; });
      struct Gap {
        int64_t ns;
        size_t after, before;
      };
      std::vector<Gap> big;
      int64_t end = INT64_MIN;
      size_t last = SIZE_MAX;
      for (size_t i : dev) {
        const Event& e = x.E(i);
        if (last != SIZE_MAX && e.ts_ns - end >= r.large_gap_ns) big.push_back({e.ts_ns - end, last, i});
        if (e.ts_ns + e.dur_ns >= end) {
          end = e.ts_ns + e.dur_ns;
          last = i;
        }
      }
      // The three largest (ties: the later events first).
      const auto larger = [](const Gap& a, const Gap& b) {
        return std::tie(a.ns, a.after, a.before) > std::tie(b.ns, b.after, b.before);
      };
      const size_t shown = std::min<size_t>(3, big.size());
      std::partial_sort(big.begin(), big.begin() + static_cast<std::ptrdiff_t>(shown), big.end(), larger);
      for (size_t i = 0; i < shown; ++i) {
        f.examples.push_back(FormatNs(static_cast<double>(big[i].ns)) + " after " +
                             ShortenMiddle(std::string(x.Name(big[i].after)), 80) + ", before " +
                             ShortenMiddle(std::string(x.Name(big[i].before)), 80));
      }
      f.next_step = "look at the host timeline inside the gaps (tier 1): host work, syncs or data loading";
      f.explained_ns = t;
      out.push_back(std::move(f));
    }
  }
  if (u.window_ns > 0 && u.percent() < r.low_util_percent) {
    Finding f;
    f.rule = "gpu_util_low";
    f.title = "The device is idle most of the time";
    f.threshold = Fmt("in use < %.0f%%", r.low_util_percent);
    f.evidence.push_back(Fmt("in use %.1f%%: busy ", u.percent()) + FormatNs(u.busy_ns) + " of a " +
                         FormatNs(u.window_ns) + " window");
    f.next_step = "find what the host does between launches; give each launch more work";
    f.explained_ns = u.window_ns - u.busy_ns;
    out.push_back(std::move(f));
  }
  // Launch-bound: most kernels are short and launching costs as much as running.
  if (!x.kernels.empty()) {
    int64_t short_n = 0;
    double kt = 0, api = 0;
    for (size_t k : x.kernels) {
      kt += static_cast<double>(x.E(k).dur_ns);
      if (x.E(k).dur_ns < o.short_kernel_ns) ++short_n;
    }
    for (size_t i : x.launches) api += static_cast<double>(x.E(i).dur_ns);
    const double share = 100.0 * short_n / x.kernels.size();
    const bool gaps_dominate = u.window_ns > 0 && u.percent() < 100 - r.low_util_percent / 2;
    if (share >= r.short_share_percent && (api >= r.api_to_kernel * kt || gaps_dominate)) {
      Finding f;
      f.rule = "launch_bound";
      f.title = "Launch-bound: many short kernels, launch overhead comparable to kernel time";
      f.threshold = "short kernels (< " + FormatNs(o.short_kernel_ns) + ") >= " +
                    Fmt("%.0f%%", r.short_share_percent) + " and (launch API time >= " +
                    Fmt("%.1f", r.api_to_kernel) + " x kernel time, or device in use < " +
                    Fmt("%.0f%%)", 100 - r.low_util_percent / 2);
      f.evidence.push_back(Fmt("%.1f%% of %.0f kernels are short", share, static_cast<double>(x.kernels.size())));
      f.evidence.push_back("launch API time " + FormatNs(api) + " vs kernel time " + FormatNs(kt) +
                           Fmt(" (%.2f x)", kt > 0 ? api / kt : 0.0));
      f.evidence.push_back(Fmt("device in use %.1f%%", u.percent()));
      if (x.counts.units > 0) {  // the one per-unit count (trace/units.h), as the units table
        f.evidence.push_back(Fmt("%.1f launches per work unit",
                                 x.counts.PerUnit(static_cast<double>(x.counts.launches))));
      }
      IntMap<int64_t> short_by_id;
      for (size_t k : x.kernels) {
        if (x.E(k).dur_ns < o.short_kernel_ns) short_by_id[x.E(k).name]++;
      }
      std::map<std::string, int64_t> short_names;
      short_by_id.ForEach([&](int64_t id, int64_t c) {
        short_names[std::string(x.trace->strings.Get(static_cast<int32_t>(id)).substr(0, 80))] += c;
      });
      std::vector<std::pair<int64_t, std::string>> top;
      for (auto& [name, c] : short_names) top.push_back({c, name});
      std::sort(top.rbegin(), top.rend());
      for (size_t i = 0; i < top.size() && i < 3; ++i) {
        f.examples.push_back(top[i].second + " x" + std::to_string(top[i].first));
      }
      f.next_step = "fewer, bigger launches: batch more samples per launch, fuse operators, "
                    "capture the forward in a CUDA graph";
      f.explained_ns = std::max(api, u.window_ns - u.busy_ns);
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::vector<Finding> Diagnose(const TraceIndex& x, const AnalysisOptions& o, const RuleOptions& r) {
  std::vector<Finding> out = RunRules(x, o, r);
  // The hot kernel: is it worth a tier-3 look, or does it lack the work to fill the device?
  IntMap<std::pair<double, size_t>> by_id;  // time and last instance, by interned name
  double total = 0;
  for (size_t k : x.kernels) {
    auto& v = by_id[x.E(k).name];
    v.first += static_cast<double>(x.E(k).dur_ns);
    v.second = k;
    total += static_cast<double>(x.E(k).dur_ns);
  }
  std::map<std::string, std::pair<double, size_t>> by_name;
  by_id.ForEach([&](int64_t id, const std::pair<double, size_t>& t) {
    auto& v = by_name[std::string(x.trace->strings.Get(static_cast<int32_t>(id)))];
    v.first += t.first;
    v.second = std::max(v.second, t.second);
  });
  if (total > 0) {
    auto hot = std::max_element(by_name.begin(), by_name.end(),
                                [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
    const double share = 100.0 * hot->second.first / total;
    const Event& e = x.E(hot->second.second);
    const GridArg grid = e.args >= 0 ? KernelGrid(x.trace->strings.Get(e.args)) : GridArg{};
    const int64_t blocks = grid.blocks;
    const int units = x.trace->device_units;
    const bool collective =
        ClassifyDeviceEvent(EventKind::kKernel, hot->first) == KernelType::kCommunication;
    if (share >= r.hot_share_percent && collective) {
      // A collective's kernel runs until every rank has joined: its time is mostly waiting
      // for the others, and no launch geometry or tuning of it changes that.
      Finding f;
      f.rule = "comm_dominant";
      f.title = "A collective dominates device time: it waits for the other ranks";
      f.threshold = "hot kernel share >= " + Fmt("%.0f%%", r.hot_share_percent) + " and the kernel is a collective";
      f.evidence.push_back(ShortenMiddle(hot->first, 100) + Fmt(": %.1f%% of device time, ", share) +
                           FormatNs(hot->second.first));
      f.next_step = "analyse every rank's trace together (tierscope analyze DIR): the stragglers report names the "
                    "rank the others wait for, comm_comp_overlap how much of it computation could hide";
      f.explained_ns = hot->second.first;
      out.push_back(std::move(f));
    } else if (share >= r.hot_share_percent && blocks > 0 && units > 0 && blocks < units) {
      Finding f;
      f.rule = "granularity";
      f.title = "The hot kernel cannot fill the device: too little work per launch";
      f.threshold = "hot kernel share >= " + Fmt("%.0f%%", r.hot_share_percent) + " and grid blocks < compute units";
      f.evidence.push_back(ShortenMiddle(hot->first, 100) + Fmt(": %.1f%% of device time", share));
      f.evidence.push_back("grid " + std::to_string(blocks) + " blocks " + grid.text + " on " +
                           std::to_string(units) + " compute units");
      f.next_step = "raise the work per launch (batch the samples); do not tune this kernel";
      f.explained_ns = hot->second.first;
      out.push_back(std::move(f));
    } else if (share >= r.hot_share_percent) {
      Finding f;
      f.rule = "hot_kernel";
      f.title = "One kernel dominates device time: worth a tier-3 look";
      f.threshold = "hot kernel share >= " + Fmt("%.0f%%", r.hot_share_percent);
      f.evidence.push_back(ShortenMiddle(hot->first, 100) + Fmt(": %.1f%% of device time, ", share) + FormatNs(hot->second.first));
      if (blocks > 0) f.evidence.push_back("grid " + std::to_string(blocks) + " blocks " + grid.text +
                                           (units > 0 ? " on " + std::to_string(units) + " compute units" : ""));
      f.next_step = "inspect it: tierscope kernel -k '" + hot->first + "' (or Nsight Compute / MUSA mcu)";
      f.explained_ns = hot->second.first;
      out.push_back(std::move(f));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.explained_ns > b.explained_ns; });
  return out;
}

std::string RenderFindings(const std::vector<Finding>& findings) {
  if (findings.empty()) return "Diagnosis: no problem found (no rule fired).\n";
  std::string out = "Diagnosis (ranked by the time each finding explains):\n";
  int n = 1;
  for (const Finding& f : findings) {
    // One line each, whatever the trace named (Printable).
    out += "\n" + std::to_string(n++) + ". [" + f.rule + "] " + Printable(f.title) + "  (explains " +
           FormatNs(f.explained_ns) + ")\n";
    for (const auto& e : f.evidence) out += "   evidence: " + Printable(e) + "\n";
    out += "   threshold: " + Printable(f.threshold) + "\n";
    for (size_t i = 0; i < f.examples.size() && i < 5; ++i) out += "   event: " + Printable(f.examples[i]) + "\n";
    out += "   next step: " + Printable(f.next_step) + "\n";
  }
  return out;
}

nlohmann::json FindingsToJson(const std::vector<Finding>& findings) {
  nlohmann::json a = nlohmann::json::array();
  for (const Finding& f : findings) {
    a.push_back({{"rule", f.rule}, {"title", f.title}, {"evidence", f.evidence},
                 {"threshold", f.threshold}, {"examples", f.examples},
                 {"next_step", f.next_step}, {"explained_ns", f.explained_ns}});
  }
  return a;
}

}  // namespace tierscope
