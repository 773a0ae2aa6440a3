// Work units and per-unit counts: the one definition (see units.h).
#include "trace/units.h"

#include <algorithm>
#include <string_view>

namespace tierscope {

std::vector<WorkUnit> FindWorkUnits(const Trace& t, const std::string& requested, std::string* name) {
  auto collect = [&](auto match) {
    std::vector<WorkUnit> u;
    for (const Event& e : t.events) {
      if (e.kind != EventKind::kAnnotation) continue;
      const std::string_view n = t.strings.Get(e.name);
      if (match(n)) u.push_back({std::string(n), e.ts_ns, e.ts_ns + e.dur_ns});
    }
    return u;
  };
  std::vector<WorkUnit> units;
  if (!requested.empty()) {
    units = collect([&](std::string_view n) { return n == requested; });
    *name = requested;
  } else {
    units = collect([](std::string_view n) { return n.rfind("ProfilerStep#", 0) == 0; });
    *name = "ProfilerStep#N";
    for (const char* scope : {"serial_bert_forward", "batched_bert_forward"}) {
      if (!units.empty()) break;
      units = collect([&](std::string_view n) { return n == scope; });
      *name = scope;
    }
  }
  if (units.empty() && requested.empty()) name->clear();
  std::sort(units.begin(), units.end(),
            [](const WorkUnit& a, const WorkUnit& b) { return a.begin_ns < b.begin_ns; });
  return units;
}

int UnitAt(const std::vector<WorkUnit>& units, int64_t ts) {
  auto it = std::upper_bound(units.begin(), units.end(), ts,
                             [](int64_t v, const WorkUnit& u) { return v < u.begin_ns; });
  if (it == units.begin()) return -1;
  --it;
  return ts <= it->end_ns ? static_cast<int>(it - units.begin()) : -1;
}

int UnitCursor::operator()(int64_t ts) {
  // Events come mostly in time order: the unit found last, or the next, usually holds it.
  for (size_t i = last_; i < units_.size() && i < last_ + 2; ++i) {
    if (units_[i].begin_ns <= ts && ts <= units_[i].end_ns &&
        (i + 1 == units_.size() || ts < units_[i + 1].begin_ns)) {
      last_ = i;
      return static_cast<int>(i);
    }
  }
  const int at = UnitAt(units_, ts);
  if (at >= 0) last_ = static_cast<size_t>(at);
  return at;
}

bool IsDeviceWork(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset;
}

HostTimes::HostTimes(const Trace& t) {
  size_t runtime = 0, device = 0;
  for (const Event& e : t.events) {
    runtime += e.kind == EventKind::kRuntime ? 1 : 0;
    device += IsDeviceWork(e.kind) ? 1 : 0;
  }
  launch_ts_.reserve(runtime);
  device_work_.reserve(device);
  const std::vector<Event>& events = t.events;
  ForEachPrefetched(
      events.size(),
      [&](size_t i) {
        const Event& e = events[i];
        if (e.kind == EventKind::kRuntime) launch_ts_.Prefetch(e.correlation);
        else if (IsDeviceWork(e.kind)) device_work_.Prefetch(e.correlation);
      },
      [&](size_t i) {
        const Event& e = events[i];
        if (e.correlation == 0) return;
        if (e.kind == EventKind::kRuntime) launch_ts_.emplace(e.correlation, e.ts_ns);
        if (IsDeviceWork(e.kind)) device_work_.insert(e.correlation);
      });
}


int64_t HostTimes::Of(const Event& e) const {
  if (IsDeviceWork(e.kind) && e.correlation != 0) {
    if (const auto* it = launch_ts_.find(e.correlation)) return it->second;
  }
  return e.ts_ns;
}

bool HostTimes::IsLaunch(const Event& e) const {
  return e.kind == EventKind::kRuntime && e.correlation != 0 && device_work_.count(e.correlation) != 0;
}

UnitCounts CountPerUnit(const Trace& t, const std::vector<WorkUnit>& units, const std::string& unit_name) {
  return CountPerUnit(t, units, unit_name, HostTimes(t));
}

UnitCounts CountPerUnit(const Trace& t, const std::vector<WorkUnit>& units, const std::string& unit_name,
                        const HostTimes& host) {
  UnitCounts c;
  c.unit = units.empty() ? "" : unit_name;
  c.units = static_cast<int64_t>(units.size());
  for (const WorkUnit& u : units) c.wall_ns += static_cast<double>(u.end_ns - u.begin_ns);
  // Counted by interned name (one string per name, not per event), named at the end.
  struct ByName {
    int64_t ops = 0, kernels = 0;
    double kernel_ns = 0;
  };
  IntMap<ByName> by_name;
  const auto slot = [&](int32_t name) -> ByName* { return &by_name[name]; };
  UnitCursor unit_at(units);
  const std::vector<Event>& events = t.events;
  ForEachPrefetched(events.size(), [&](size_t i) { host.Prefetch(events[i]); }, [&](size_t i) {
    const Event& e = events[i];
    if (!units.empty() && unit_at(host.Of(e)) < 0) return;
    switch (e.kind) {
      case EventKind::kOp:
        if (ByName* b = slot(e.name)) b->ops++;
        break;
      case EventKind::kRuntime:
        if (host.IsLaunch(e)) c.launches++;
        break;
      case EventKind::kKernel: {
        c.kernels++;
        c.kernel_ns += static_cast<double>(e.dur_ns);
        if (ByName* b = slot(e.name)) {
          b->kernels++;
          b->kernel_ns += static_cast<double>(e.dur_ns);
        }
        break;
      }
      case EventKind::kMemcpy:
      case EventKind::kMemset:
        c.memory_ops++;
        c.memory_op_ns += static_cast<double>(e.dur_ns);
        break;
      case EventKind::kMemory:
        if (e.v0 > 0) c.allocations++;
        if (e.v0 < 0) c.frees++;
        break;
      default: break;
    }
  });
  by_name.ForEach([&](int64_t id, const ByName& b) {
    const std::string name(id >= 0 ? t.strings.Get(static_cast<int32_t>(id)) : std::string_view());
    if (b.ops > 0) c.op_calls[name] += b.ops;
    if (b.kernels > 0) {
      c.kernel_calls[name] += b.kernels;
      c.kernel_ns_by_name[name] += b.kernel_ns;
    }
  });
  return c;
}

}  // namespace tierscope
