// torch_npu's trace_view.json read into the common kinds: see ascend_layout.h.
#include "trace/ascend_layout.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "trace/args.h"

namespace tierscope::ascend {
namespace {

struct Pids {
  int32_t hw = -1, cann = -1, hccl = -1, overlap = -1;
  bool has_hw = false, has_cann = false, has_hccl = false, has_overlap = false;
};

Pids FindPids(const Trace& t) {
  Pids p;
  for (const auto& [pid, name] : t.process_names) {
    if (name == "Ascend Hardware" && !p.has_hw) p.hw = pid, p.has_hw = true;
    else if (name == "CANN" && !p.has_cann) p.cann = pid, p.has_cann = true;
    else if (name == "HCCL" && !p.has_hccl) p.hccl = pid, p.has_hccl = true;
    else if (name == "Overlap Analysis" && !p.has_overlap) p.overlap = pid, p.has_overlap = true;
  }
  return p;
}

std::string_view ArgsOf(const Trace& t, const Event& e) {
  return e.args >= 0 ? t.strings.Get(e.args) : std::string_view();
}

// A task one of the NPU's own engines ran (compute cores, DMA, events), as opposed to
// HCCL's communication tasks ("SDMA", "Notify Wait", "Write Value", ...).
bool IsEngineTask(std::string_view task) {
  return task.ends_with("_SQE") || task.starts_with("AI_") || task.starts_with("MIX_");
}

int64_t End(const Event& e) { return e.ts_ns + e.dur_ns; }

// A collective on the HCCL process, the stream its tasks ran on (-1: none found).
struct Collective {
  size_t event;
  int32_t stream;
};

class Layout {
 public:
  Layout(Trace& t, const Pids& p) : t_(t), p_(p), drop_(t.events.size(), false) {}

  void Run(std::vector<FlowEnd> flows) {
    ReadHccl();
    ReadHardwareAndCann();
    JoinFlows(std::move(flows));
    Move();
    t_.runtime = "cann";
  }

 private:
  void Count(const std::string& what, int64_t n = 1) { t_.stats.layout["ascend: " + what] += n; }

  bool Uncategorised(const Event& e, int32_t pid) const { return e.cat < 0 && e.pid == pid; }

  // Collectives and their per-link tasks; each collective's stream from its tasks.
  void ReadHccl() {
    if (!p_.has_hccl) return;
    std::vector<std::pair<int64_t, int32_t>> plane_starts;  // ts, stream id
    for (size_t i = 0; i < t_.events.size(); ++i) {
      Event& e = t_.events[i];
      if (!Uncategorised(e, p_.hccl)) continue;
      const std::string_view args = ArgsOf(t_, e);
      if (!ArgValue(args, "task type").empty()) {
        const std::optional<double> stream = ArgNumber(args, "stream id");
        if (stream && *stream >= 0 && *stream < 2147483648.0) plane_starts.emplace_back(e.ts_ns, static_cast<int32_t>(*stream));
        drop_[i] = true;
        Count("HCCL plane tasks left out (the same tasks as on the hardware streams)");
        continue;
      }
      collectives_.push_back({i, -1});
    }
    std::sort(plane_starts.begin(), plane_starts.end());
    for (Collective& c : collectives_) {
      const Event& e = t_.events[c.event];
      auto it = std::lower_bound(plane_starts.begin(), plane_starts.end(), std::make_pair(e.ts_ns, INT32_MIN));
      if (it != plane_starts.end() && it->first <= End(e)) c.stream = it->second;
    }
  }

  // Whether a communication task on `stream` starting at `ts` lies in a collective.
  bool InCollective(int32_t stream, int64_t ts) const {
    for (const auto& [start, end] : spans_by_stream_.count(stream) ? spans_by_stream_.at(stream) : kNoSpans) {
      if (start > ts) break;
      if (ts <= end) return true;
    }
    return false;
  }

  void ReadHardwareAndCann() {
    for (const Collective& c : collectives_) {
      const Event& e = t_.events[c.event];
      if (c.stream >= 0) spans_by_stream_[c.stream].emplace_back(e.ts_ns, End(e));
    }
    for (auto& [stream, spans] : spans_by_stream_) std::sort(spans.begin(), spans.end());
    for (size_t i = 0; i < t_.events.size(); ++i) {
      Event& e = t_.events[i];
      if (drop_[i]) continue;
      if (p_.has_cann && Uncategorised(e, p_.cann)) {
        e.kind = EventKind::kRuntime;
        Count("CANN API calls read as runtime calls");
      } else if (p_.has_overlap && Uncategorised(e, p_.overlap)) {
        drop_[i] = true;
        Count("Overlap Analysis ranges left out (the profiler's own summary)");
      } else if (p_.has_hw && Uncategorised(e, p_.hw)) {
        ReadHardwareTask(i);
      }
    }
  }

  void ReadHardwareTask(size_t i) {
    Event& e = t_.events[i];
    const std::string_view task = ArgText(ArgsOf(t_, e), "Task Type");
    const std::string_view name = t_.strings.Get(e.name);
    if (task == "EVENT_RECORD_SQE" || task == "EVENT_WAIT_SQE") {
      e.kind = EventKind::kSync;
      Count("hardware tasks read as syncs (event record / wait)");
    } else if (task == "PLACE_HOLDER_SQE") {
      e.kind = EventKind::kOther;
      Count("hardware tasks read as other (the profiler's markers)");
    } else if (name == "MEMCPY_ASYNC" && (task == "PCIE_DMA_SQE" || task == "SDMA_SQE")) {
      e.kind = EventKind::kMemcpy;
      Count("hardware tasks read as copies");
    } else if (!task.empty() && !IsEngineTask(task)) {
      if (InCollective(e.tid, e.ts_ns)) {
        drop_[i] = true;
        Count("HCCL tasks on a hardware stream inside their collective, left out");
      } else {
        e.kind = EventKind::kKernel;
        e.name = t_.strings.Intern("hcom " + std::string(name));
        Count("HCCL tasks on a hardware stream outside any collective, read as kernels (hcom ...)");
      }
    } else {
      e.kind = EventKind::kKernel;
      Count("hardware tasks read as kernels");
    }
  }

  // Operators to device tasks by the async_npu flows: the flow starts inside the operator
  // on its thread and finishes at the task's start on its stream.
  void JoinFlows(std::vector<FlowEnd> flows) {
    if (flows.empty()) return;
    std::map<std::tuple<int32_t, int32_t, int64_t>, size_t> device;  // pid, tid, ts -> event
    std::map<std::pair<int32_t, int32_t>, std::vector<size_t>> ops;  // by thread, by start
    int64_t next_external = 1;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const Event& e = t_.events[i];
      next_external = std::max(next_external, e.external_id + 1);
      if (drop_[i]) continue;
      if (e.kind == EventKind::kOp) ops[{e.pid, e.tid}].push_back(i);
      const bool on_device = (p_.has_hw && e.pid == p_.hw && e.cat < 0) || (p_.has_hccl && e.pid == p_.hccl && e.cat < 0);
      if (on_device) device.try_emplace({e.pid, e.tid, e.ts_ns}, i);
    }
    for (auto& [thread, list] : ops) {
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) { return t_.events[a].ts_ns < t_.events[b].ts_ns; });
    }
    std::stable_sort(flows.begin(), flows.end(), [](const FlowEnd& a, const FlowEnd& b) {
      return std::tie(a.id, a.start) < std::tie(b.id, b.start);  // finish, then start
    });
    int64_t joined = 0, unjoined = 0;
    for (size_t k = 0; k < flows.size(); ++k) {
      const FlowEnd& f = flows[k];
      if (f.start) {  // a start with no finish
        ++unjoined;
        continue;
      }
      if (k + 1 >= flows.size() || flows[k + 1].id != f.id || !flows[k + 1].start) {
        ++unjoined;
        continue;
      }
      const FlowEnd& s = flows[++k];
      const auto task = device.find({f.pid, f.tid, f.ts_ns});
      const size_t op = InnermostOp(ops, s);
      if (task == device.end() || op == SIZE_MAX) {
        ++unjoined;
        continue;
      }
      Event& o = t_.events[op];
      if (o.external_id == 0) o.external_id = next_external++;
      t_.events[task->second].external_id = o.external_id;
      ++joined;
    }
    if (joined > 0) Count("device tasks joined to their operator by async_npu flows", joined);
    if (unjoined > 0) Count("async_npu flows with no operator or task to join", unjoined);
    // A launch call belongs to its task's operator too.
    std::unordered_map<int64_t, int64_t> external_by_correlation;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const Event& e = t_.events[i];
      if (!drop_[i] && e.correlation != 0 && e.external_id != 0 && e.kind != EventKind::kRuntime && e.kind != EventKind::kOp) {
        external_by_correlation.try_emplace(e.correlation, e.external_id);
      }
    }
    for (Event& e : t_.events) {
      if (e.kind != EventKind::kRuntime || e.correlation == 0 || e.external_id != 0) continue;
      if (auto it = external_by_correlation.find(e.correlation); it != external_by_correlation.end()) e.external_id = it->second;
    }
  }

  size_t InnermostOp(const std::map<std::pair<int32_t, int32_t>, std::vector<size_t>>& ops, const FlowEnd& s) const {
    const auto it = ops.find({s.pid, s.tid});
    if (it == ops.end()) return SIZE_MAX;
    const std::vector<size_t>& list = it->second;
    auto after = std::upper_bound(list.begin(), list.end(), s.ts_ns, [&](int64_t ts, size_t i) { return ts < t_.events[i].ts_ns; });
    // Nested operators start later than their parents: the latest start that still covers
    // the flow's start is the innermost. A bounded walk back: enclosing scopes are few.
    for (int steps = 0; after != list.begin() && steps < 1024; ++steps) {
      --after;
      if (End(t_.events[*after]) >= s.ts_ns) return *after;
    }
    return SIZE_MAX;
  }

  // Collectives onto the hardware process, on their stream; left-out events removed.
  void Move() {
    for (const Collective& c : collectives_) {
      Event& e = t_.events[c.event];
      e.kind = EventKind::kKernel;
      if (c.stream >= 0 && p_.has_hw) {
        e.pid = p_.hw;
        e.tid = c.stream;
      }
      Count("HCCL collectives read as communication kernels");
    }
    size_t kept = 0;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      if (!drop_[i]) t_.events[kept++] = t_.events[i];
    }
    t_.stats.events_kept -= static_cast<int64_t>(t_.events.size() - kept);
    t_.events.resize(kept);
  }

  static inline const std::vector<std::pair<int64_t, int64_t>> kNoSpans;
  Trace& t_;
  const Pids p_;
  std::vector<bool> drop_;
  std::vector<Collective> collectives_;
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> spans_by_stream_;
};

}  // namespace

bool IsAscendLayout(const Trace& t) {
  for (const auto& [pid, name] : t.process_names) {
    if (name == "Ascend Hardware") return true;
  }
  return false;
}

void ApplyAscendLayout(Trace& t, std::vector<FlowEnd> flows) {
  const Pids p = FindPids(t);
  Layout(t, p).Run(std::move(flows));
}

}  // namespace tierscope::ascend
