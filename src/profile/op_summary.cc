// key_averages and per-unit summaries.
#include "profile/op_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <unordered_map>

#include "core/int_map.h"
#include "trace/args.h"

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

std::string_view InputDimsOf(std::string_view args) {
  const std::string_view v = ArgValue(args, "Input Dims");
  return !v.empty() && v.front() == '[' ? v : std::string_view();
}

std::vector<OpStat> KeyAverages(const Trace& t, bool by_shape) {
  // Device time (kernels, copies, sets) launched directly by each operator (by External
  // id); device work with no operator (a CUDA/HIP graph's replay) goes to the runtime call
  // that launched it (by correlation), which then gets a row of its own.
  IntMap<int64_t> device_by_op;  // External id -> device ns
  IntMap<size_t> runtime_by_corr;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.kind == EventKind::kOp && e.external_id != 0) device_by_op.emplace(e.external_id, 0);
    if (e.kind == EventKind::kRuntime && e.correlation != 0) runtime_by_corr.emplace(e.correlation, i);
  }
  IntMap<int64_t> device_by_launch;  // runtime call -> device ns
  for (const Event& e : t.events) {
    if (e.kind != EventKind::kKernel && e.kind != EventKind::kMemcpy && e.kind != EventKind::kMemset) continue;
    if (auto* op = e.external_id != 0 ? device_by_op.find(e.external_id) : nullptr; op != nullptr) {
      op->second += e.dur_ns;
    } else if (const auto* call = e.correlation != 0 ? runtime_by_corr.find(e.correlation) : nullptr; call != nullptr) {
      device_by_launch[static_cast<int64_t>(call->second)] += e.dur_ns;
    }
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
  // By position in `order`.
  const size_t n = order.size();
  std::vector<int64_t> child_cpu(n, 0), self_dev(n, 0), total_dev(n, 0);
  std::vector<size_t> stack;
  auto close = [&](size_t p) {
    total_dev[p] += self_dev[p];
    stack.pop_back();
    if (!stack.empty()) {
      child_cpu[stack.back()] += t.events[order[p]].dur_ns;
      total_dev[stack.back()] += total_dev[p];
    }
  };
  int32_t tid = INT32_MIN;
  for (size_t p = 0; p < n; ++p) {
    const Event& e = t.events[order[p]];
    if (e.tid != tid) {
      while (!stack.empty()) close(stack.back());
      tid = e.tid;
    }
    while (!stack.empty()) {
      const Event& top = t.events[order[stack.back()]];
      if (e.ts_ns >= top.ts_ns + top.dur_ns) close(stack.back());
      else break;
    }
    if (e.kind == EventKind::kOp) {
      if (const auto* op = device_by_op.find(e.external_id); op != nullptr) self_dev[p] = op->second;
    }
    stack.push_back(p);
  }
  while (!stack.empty()) close(stack.back());

  // Rows by (name, input dims), the dims a view of the args.
  struct Key {
    int32_t name;
    std::string_view dims;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string_view>{}(k.dims) * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(k.name);
    }
  };
  std::unordered_map<Key, size_t, KeyHash> rows;
  std::vector<OpStat> out;
  const auto row = [&](int32_t name, std::string_view dims) -> OpStat& {
    auto [it, added] = rows.try_emplace(Key{name, dims}, out.size());
    if (added) {
      out.emplace_back();
      out.back().name = std::string(t.strings.Get(name));
      out.back().input_dims = std::string(dims);
    }
    return out[it->second];
  };
  for (size_t p = 0; p < n; ++p) {
    const Event& e = t.events[order[p]];
    const std::string_view dims = by_shape && e.args >= 0 ? InputDimsOf(t.strings.Get(e.args)) : std::string_view();
    OpStat& s = row(e.name, dims);
    s.calls += 1;
    s.cpu_total_ns += e.dur_ns;
    s.self_cpu_ns += e.dur_ns - child_cpu[p];
    s.self_device_ns += self_dev[p];
    s.device_total_ns += total_dev[p];
  }
  device_by_launch.ForEach([&](int64_t idx, int64_t ns) {
    const Event& e = t.events[static_cast<size_t>(idx)];
    OpStat& s = row(e.name, {});
    s.calls += 1;
    s.cpu_total_ns += e.dur_ns;  // its self CPU time is its caller's already: not counted twice
    s.self_device_ns += ns;
    s.device_total_ns += ns;
  });
  // Ties in time go by name, then dims.
  std::sort(out.begin(), out.end(), [](const OpStat& a, const OpStat& b) {
    if (a.self_device_ns != b.self_device_ns) return a.self_device_ns > b.self_device_ns;
    if (a.self_cpu_ns != b.self_cpu_ns) return a.self_cpu_ns > b.self_cpu_ns;
    if (a.name != b.name) return a.name < b.name;
    return a.input_dims < b.input_dims;
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

namespace {
// A per-unit count: whole when every unit did the same work, else with two decimals.
std::string PerUnitText(const UnitCounts& c, double total) {
  const double v = c.PerUnit(total);
  char buf[32];
  std::snprintf(buf, sizeof(buf), v == std::floor(v) ? "%.0f" : "%.2f", v);
  return buf;
}
}  // namespace

std::string FormatUnitSummary(const UnitCounts& c) {
  char buf[320];
  std::string out;
  std::snprintf(buf, sizeof(buf), "Per work unit (%s, %lld units recorded):\n", c.unit.c_str(),
                static_cast<long long>(c.units));
  out += buf;
  const double wall = c.PerUnit(c.wall_ns), busy = c.PerUnit(c.kernel_ns);
  std::snprintf(buf, sizeof(buf),
                "  launches %s, kernels %s, allocations %s, frees %s\n"
                "  wall %s, kernel busy %s (%.1f%% of wall)\n",
                PerUnitText(c, static_cast<double>(c.launches)).c_str(),
                PerUnitText(c, static_cast<double>(c.kernels)).c_str(),
                PerUnitText(c, static_cast<double>(c.allocations)).c_str(),
                PerUnitText(c, static_cast<double>(c.frees)).c_str(), FormatTime(wall).c_str(),
                FormatTime(busy).c_str(), wall > 0 ? 100.0 * busy / wall : 0.0);
  out += buf;
  out += "  operator calls:";
  for (const auto& [name, n] : c.op_calls) out += " " + name + "=" + PerUnitText(c, static_cast<double>(n));
  out += "\n";
  return out;
}

}  // namespace tierscope
