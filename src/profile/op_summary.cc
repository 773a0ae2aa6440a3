// key_averages and per-unit summaries.
#include "profile/op_summary.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

namespace tierscope {
namespace {

std::string FormatTime(double ns) {
  char buf[32];
  if (ns >= 1e9) std::snprintf(buf, sizeof(buf), "%.3fs", ns / 1e9);
  else if (ns >= 1e6) std::snprintf(buf, sizeof(buf), "%.3fms", ns / 1e6);
  else std::snprintf(buf, sizeof(buf), "%.3fus", ns / 1e3);
  return buf;
}

std::string Pct(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

bool IsScope(const Event& e) { return e.kind == EventKind::kOp || e.kind == EventKind::kAnnotation; }

}  // namespace

std::string InputDimsOf(std::string_view args) {
  const std::string_view key = "\"Input Dims\": ";
  const size_t p = args.find(key);
  if (p == std::string_view::npos) return "";
  size_t i = p + key.size();
  if (i >= args.size() || args[i] != '[') return "";
  int depth = 0;
  for (size_t j = i; j < args.size(); ++j) {
    if (args[j] == '[') ++depth;
    if (args[j] == ']' && --depth == 0) return std::string(args.substr(i, j - i + 1));
  }
  return "";
}

std::vector<OpStat> KeyAverages(const Trace& t, bool by_shape) {
  // Device time launched directly by each operator (by External id).
  std::unordered_map<int64_t, int64_t> device_by_op;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::kKernel && e.external_id != 0) device_by_op[e.external_id] += e.dur_ns;
  }
  // Scopes in start order per thread; a stack gives each its parent.
  std::vector<size_t> order;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (IsScope(t.events[i])) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Event &x = t.events[a], &y = t.events[b];
    if (x.tid != y.tid) return x.tid < y.tid;
    if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
    return x.dur_ns > y.dur_ns;  // parents first
  });
  const size_t n = t.events.size();
  std::vector<int64_t> child_cpu(n, 0), self_dev(n, 0), total_dev(n, 0);
  std::vector<size_t> stack;
  auto close = [&](size_t idx) {
    const Event& e = t.events[idx];
    total_dev[idx] += self_dev[idx];
    stack.pop_back();
    if (!stack.empty()) {
      child_cpu[stack.back()] += e.dur_ns;
      total_dev[stack.back()] += total_dev[idx];
    }
  };
  int32_t tid = INT32_MIN;
  for (size_t idx : order) {
    const Event& e = t.events[idx];
    if (e.tid != tid) {
      while (!stack.empty()) close(stack.back());
      tid = e.tid;
    }
    while (!stack.empty()) {
      const Event& top = t.events[stack.back()];
      if (e.ts_ns >= top.ts_ns + top.dur_ns) close(stack.back());
      else break;
    }
    if (e.kind == EventKind::kOp) {
      auto it = device_by_op.find(e.external_id);
      if (it != device_by_op.end()) self_dev[idx] = it->second;
    }
    stack.push_back(idx);
  }
  while (!stack.empty()) close(stack.back());

  std::map<std::pair<std::string, std::string>, OpStat> groups;
  for (size_t idx : order) {
    const Event& e = t.events[idx];
    std::string dims = by_shape && e.args >= 0 ? InputDimsOf(t.strings.Get(e.args)) : "";
    OpStat& s = groups[{std::string(t.strings.Get(e.name)), dims}];
    s.name = std::string(t.strings.Get(e.name));
    s.input_dims = dims;
    s.calls += 1;
    s.cpu_total_ns += e.dur_ns;
    s.self_cpu_ns += e.dur_ns - child_cpu[idx];
    s.self_device_ns += self_dev[idx];
    s.device_total_ns += total_dev[idx];
  }
  std::vector<OpStat> out;
  for (auto& [k, s] : groups) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(), [](const OpStat& a, const OpStat& b) {
    if (a.self_device_ns != b.self_device_ns) return a.self_device_ns > b.self_device_ns;
    return a.self_cpu_ns > b.self_cpu_ns;
  });
  return out;
}

std::string FormatKeyAveragesTable(const std::vector<OpStat>& stats, int row_limit) {
  double self_cpu_sum = 0, self_dev_sum = 0;
  size_t name_w = 4, shape_w = 12;
  for (const OpStat& s : stats) {
    self_cpu_sum += static_cast<double>(s.self_cpu_ns);
    self_dev_sum += static_cast<double>(s.self_device_ns);
  }
  const size_t rows = std::min(stats.size(), static_cast<size_t>(std::max(row_limit, 0)));
  for (size_t i = 0; i < rows; ++i) {
    name_w = std::max(name_w, stats[i].name.size());
    shape_w = std::max(shape_w, stats[i].input_dims.size());
  }
  name_w = std::min<size_t>(name_w, 55);
  shape_w = std::min<size_t>(shape_w, 60);
  static const char* kCols[] = {"Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                                "Self Device", "Self Device %", "Device total", "Device time avg",
                                "# of Calls"};
  std::string sep(name_w, '-');
  for (int c = 0; c < 10; ++c) sep += "  " + std::string(13, '-');
  sep += "  " + std::string(shape_w, '-') + "\n";
  std::string out = sep;
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%*s", static_cast<int>(name_w), "Name");
  out += buf;
  for (const char* c : kCols) {
    std::snprintf(buf, sizeof(buf), "  %13s", c);
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), "  %-*s\n", static_cast<int>(shape_w), "Input Shapes");
  out += buf;
  out += sep;
  for (size_t i = 0; i < rows; ++i) {
    const OpStat& s = stats[i];
    std::string name = s.name.size() > name_w ? s.name.substr(0, name_w - 3) + "..." : s.name;
    std::string dims = s.input_dims.size() > shape_w ? s.input_dims.substr(0, shape_w - 3) + "..." : s.input_dims;
    std::snprintf(buf, sizeof(buf), "%*s", static_cast<int>(name_w), name.c_str());
    out += buf;
    const double calls = static_cast<double>(std::max<int64_t>(s.calls, 1));
    const std::string cells[] = {
        Pct(s.self_cpu_ns, self_cpu_sum), FormatTime(s.self_cpu_ns), Pct(s.cpu_total_ns, self_cpu_sum),
        FormatTime(s.cpu_total_ns), FormatTime(s.cpu_total_ns / calls), FormatTime(s.self_device_ns),
        Pct(s.self_device_ns, self_dev_sum), FormatTime(s.device_total_ns),
        FormatTime(s.device_total_ns / calls), std::to_string(s.calls)};
    for (const std::string& c : cells) {
      std::snprintf(buf, sizeof(buf), "  %13s", c.c_str());
      out += buf;
    }
    out += "  " + dims + "\n";
  }
  out += sep;
  out += "Self CPU time total: " + FormatTime(self_cpu_sum) + "\n";
  out += "Self Device time total: " + FormatTime(self_dev_sum) + "\n";
  return out;
}

UnitSummary SummarizeUnits(const Trace& t, const std::string& unit) {
  UnitSummary s;
  s.unit = unit;
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::kAnnotation && t.strings.Get(e.name) == unit) {
      windows.push_back({e.ts_ns, e.ts_ns + e.dur_ns});
      s.unit_wall_ns += static_cast<double>(e.dur_ns);
    }
  }
  s.units = static_cast<int64_t>(windows.size());
  if (s.units == 0) return s;
  std::sort(windows.begin(), windows.end());
  auto inside = [&](int64_t ts) {
    auto it = std::upper_bound(windows.begin(), windows.end(), std::make_pair(ts, INT64_MAX));
    return it != windows.begin() && ts <= std::prev(it)->second;
  };
  // A kernel belongs to the unit that launched it: on an asynchronous device it may run
  // after the unit's host scope has closed.
  std::unordered_map<int64_t, int64_t> launch_ts;  // correlation -> launch time
  std::unordered_set<int64_t> device_work;         // correlations of kernels and copies
  for (const Event& e : t.events) {
    if (e.kind == EventKind::kRuntime && e.correlation != 0) launch_ts[e.correlation] = e.ts_ns;
    if ((e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy ||
         e.kind == EventKind::kMemset) && e.correlation != 0) {
      device_work.insert(e.correlation);
    }
  }
  std::map<std::string, int64_t> calls;
  for (const Event& e : t.events) {
    int64_t when = e.ts_ns;
    if (e.kind == EventKind::kKernel) {
      auto it = launch_ts.find(e.correlation);
      if (it != launch_ts.end()) when = it->second;
    }
    if (!inside(when)) continue;
    switch (e.kind) {
      case EventKind::kOp: calls[std::string(t.strings.Get(e.name))]++; break;
      case EventKind::kRuntime:  // a launch, not a synchronisation
        if (device_work.count(e.correlation) != 0) s.launches++;
        break;
      case EventKind::kKernel:
        s.kernels++;
        s.device_busy_ns += static_cast<double>(e.dur_ns);
        break;
      case EventKind::kMemory: (e.v0 >= 0 ? s.allocations : s.frees)++; break;
      default: break;
    }
  }
  const int64_t u = s.units;
  for (auto& [name, c] : calls) s.op_calls[name] = (c + u / 2) / u;
  s.launches = (s.launches + u / 2) / u;
  s.kernels = (s.kernels + u / 2) / u;
  s.allocations = (s.allocations + u / 2) / u;
  s.frees = (s.frees + u / 2) / u;
  s.device_busy_ns /= static_cast<double>(u);
  s.unit_wall_ns /= static_cast<double>(u);
  return s;
}

std::string FormatUnitSummary(const UnitSummary& s) {
  char buf[256];
  std::string out;
  std::snprintf(buf, sizeof(buf), "Per work unit (%s, %lld units recorded):\n", s.unit.c_str(),
                static_cast<long long>(s.units));
  out += buf;
  std::snprintf(buf, sizeof(buf),
                "  launches %lld, kernels %lld, allocations %lld, frees %lld\n"
                "  wall %s, kernel busy %s (%.1f%% of wall)\n",
                static_cast<long long>(s.launches), static_cast<long long>(s.kernels),
                static_cast<long long>(s.allocations), static_cast<long long>(s.frees),
                FormatTime(s.unit_wall_ns).c_str(), FormatTime(s.device_busy_ns).c_str(),
                s.unit_wall_ns > 0 ? 100.0 * s.device_busy_ns / s.unit_wall_ns : 0.0);
  out += buf;
  out += "  operator calls:";
  for (const auto& [name, c] : s.op_calls) out += " " + name + "=" + std::to_string(c);
  out += "\n";
  return out;
}

}  // namespace tierscope
