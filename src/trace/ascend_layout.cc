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
  const auto take = [](int32_t pid, int32_t* slot, bool* has) {
    if (*has) return;
    *slot = pid;
    *has = true;
  };
  for (const auto& [pid, name] : t.process_names) {
    if (name == "Ascend Hardware") take(pid, &p.hw, &p.has_hw);
    else if (name == "CANN") take(pid, &p.cann, &p.has_cann);
    else if (name == "HCCL") take(pid, &p.hccl, &p.has_hccl);
    else if (name == "Overlap Analysis") take(pid, &p.overlap, &p.has_overlap);
  }
  return p;
}

std::string_view ArgsOf(const Trace& t, const Event& e) {
  return e.args >= 0 ? t.strings.Get(e.args) : std::string_view();
}

// HCCL's own task types on a hardware stream (Notify Wait, Write Value, SDMA, Memcpy,
// Reduce Inline, RDMA Send, ...), for tasks that do not name their collective by
// connection_id: known names only, so an engine's task type this list lacks stays a kernel.
bool IsHcclTaskType(std::string_view task) {
  for (std::string_view t : {"Notify Wait", "Notify Record", "Notify_Wait", "Notify_Record", "Write Value", "SDMA",
                             "Memcpy", "Reduce Inline", "Reduce_Inline", "Reduce TBE", "RDMA Send", "RDMA_Send",
                             "Local Copy", "Inline Reduce"}) {
    if (task == t) return true;
  }
  return false;
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
    JoinHcclTasks();
    ReadHardwareAndCann();
    NestCannCalls();
    JoinFlows(std::move(flows));
    Move();
    t_.runtime = "cann";
  }

 private:
  void Count(const std::string& what, int64_t n = 1) { t_.stats.layout["ascend: " + what] += n; }

  bool Uncategorised(const Event& e, int32_t pid) const { return e.cat < 0 && e.pid == pid; }

  // Collectives, and their per-link "Plane" tasks (left out: the hardware streams hold the
  // same tasks), whose stream ids stand for a collective none of whose hardware tasks
  // names it.
  void ReadHccl() {
    if (!p_.has_hccl) return;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const Event& e = t_.events[i];
      if (!Uncategorised(e, p_.hccl)) continue;
      const std::string_view args = ArgsOf(t_, e);
      if (!ArgValue(args, "task type").empty()) {
        const std::optional<double> stream = ArgNumber(args, "stream id");
        if (stream && *stream >= 0 && *stream < 2147483648.0) plane_starts_.emplace_back(e.ts_ns, static_cast<int32_t>(*stream));
        drop_[i] = true;
        Count("HCCL plane tasks left out (the same tasks as on the hardware streams)");
        continue;
      }
      collectives_.push_back({i, -1});
    }
    std::sort(plane_starts_.begin(), plane_starts_.end());
  }

  // A collective's hardware tasks carry its connection_id: they are left out (it stands for
  // them) and their stream is its stream.
  void JoinHcclTasks() {
    if (collectives_.empty() || !p_.has_hw) return;
    std::unordered_map<int64_t, size_t> by_correlation;
    for (size_t c = 0; c < collectives_.size(); ++c) {
      const int64_t corr = t_.events[collectives_[c].event].correlation;
      if (corr != 0) by_correlation.try_emplace(corr, c);
    }
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const Event& e = t_.events[i];
      if (!Uncategorised(e, p_.hw) || e.correlation == 0) continue;
      const auto it = by_correlation.find(e.correlation);
      if (it == by_correlation.end()) continue;
      Collective& c = collectives_[it->second];
      if (c.stream < 0) c.stream = e.tid;
      drop_[i] = true;
      Count("HCCL tasks on a hardware stream, joined to their collective by connection_id, left out");
    }
    for (Collective& c : collectives_) {
      if (c.stream >= 0) continue;
      const Event& e = t_.events[c.event];
      auto it = std::lower_bound(plane_starts_.begin(), plane_starts_.end(), std::make_pair(e.ts_ns, INT32_MIN));
      if (it != plane_starts_.end() && it->first <= End(e)) c.stream = it->second;
    }
    for (const Collective& c : collectives_) {
      const Event& e = t_.events[c.event];
      if (c.stream >= 0) spans_by_stream_[c.stream].emplace_back(e.ts_ns, End(e));
    }
    for (auto& [stream, spans] : spans_by_stream_) std::sort(spans.begin(), spans.end());
  }

  // Whether a task on `stream` starting at `ts` starts inside a collective on it.
  bool InCollective(int32_t stream, int64_t ts) const {
    const auto s = spans_by_stream_.find(stream);
    if (s == spans_by_stream_.end()) return false;
    const auto& spans = s->second;
    auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(ts, INT64_MAX));
    // Spans sorted by start; one long span may cover later ones: a short bounded look back.
    for (int steps = 0; it != spans.begin() && steps < 8; ++steps) {
      --it;
      if (ts <= it->second) return true;
    }
    return false;
  }

  void ReadHardwareAndCann() {
    for (size_t i = 0; i < t_.events.size(); ++i) {
      Event& e = t_.events[i];
      if (drop_[i]) continue;
      if (p_.has_cann && Uncategorised(e, p_.cann)) {
        e.kind = EventKind::kRuntime;
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
    if (task.starts_with("PLACE_HOLDER")) {
      e.kind = EventKind::kOther;
      Count("hardware tasks read as other (the profiler's markers)");
    } else if (task.starts_with("EVENT_RECORD") || task.starts_with("EVENT_WAIT") || name == "EVENT_RECORD" ||
               name == "EVENT_WAIT") {
      e.kind = EventKind::kSync;
      Count("hardware tasks read as syncs (event record / wait)");
    } else if (name == "MEMCPY_ASYNC") {
      e.kind = EventKind::kMemcpy;
      Count("hardware tasks read as copies");
    } else if (IsHcclTaskType(task)) {
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

  // CANN's calls nest (Node@launch and aclCreateTensorDesc inside AscendCL@aclnnMm, as a
  // launch inside a library call): a call that made other calls on its thread and launched
  // no device work itself is library work (kOther), so API time is not counted twice; the
  // rest are runtime calls, each launch with its task's correlation.
  void NestCannCalls() {
    if (!p_.has_cann) return;
    std::unordered_map<int64_t, bool> launched;  // correlations of kept device work
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const Event& e = t_.events[i];
      if (!drop_[i] && e.correlation != 0 && e.pid == p_.hw && e.cat < 0) launched[e.correlation] = true;
    }
    for (const Collective& c : collectives_) launched[t_.events[c.event].correlation] = true;
    std::map<int32_t, std::vector<size_t>> calls;  // by thread
    for (size_t i = 0; i < t_.events.size(); ++i) {
      if (!drop_[i] && Uncategorised(t_.events[i], p_.cann)) calls[t_.events[i].tid].push_back(i);
    }
    int64_t leaves = 0, containers = 0;
    for (auto& [tid, list] : calls) {
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        const Event &x = t_.events[a], &y = t_.events[b];
        return x.ts_ns != y.ts_ns ? x.ts_ns < y.ts_ns : x.dur_ns > y.dur_ns;
      });
      std::vector<size_t> open;
      for (size_t i : list) {
        const Event& e = t_.events[i];
        while (!open.empty() && End(t_.events[open.back()]) < End(e)) open.pop_back();
        Event* parent = open.empty() ? nullptr : &t_.events[open.back()];
        if (parent != nullptr && parent->kind == EventKind::kRuntime && launched.count(parent->correlation) == 0) {
          parent->kind = EventKind::kOther;  // it made this call, and launched nothing itself
          ++containers;
        }
        open.push_back(i);
      }
    }
    for (const auto& [tid, list] : calls) leaves += static_cast<int64_t>(list.size());
    Count("CANN API calls read as runtime calls", leaves - containers);
    if (containers > 0) Count("CANN API calls that made other calls (library calls), read as other", containers);
  }

  // Operators to device tasks by the async_npu flows: the flow starts inside the operator
  // on its thread and finishes at the task's start on its stream. Ends of one id are
  // paired in time order.
  void JoinFlows(std::vector<FlowEnd> flows) {
    if (flows.empty()) return;
    std::map<std::tuple<int32_t, int32_t, int64_t>, size_t> device;  // pid, tid, ts -> event
    int64_t max_external = 0;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const Event& e = t_.events[i];
      if (e.kind != EventKind::kMemory) max_external = std::max(max_external, e.external_id);  // a kMemory's is its address
      if (drop_[i]) continue;
      if (e.kind == EventKind::kOp) ops_[{e.pid, e.tid}].push_back(i);
      const bool on_device = (p_.has_hw && e.pid == p_.hw && e.cat < 0) || (p_.has_hccl && e.pid == p_.hccl && e.cat < 0);
      if (on_device) device.try_emplace({e.pid, e.tid, e.ts_ns}, i);
    }
    for (auto& [thread, list] : ops_) SortWithParents(list);
    std::stable_sort(flows.begin(), flows.end(), [](const FlowEnd& a, const FlowEnd& b) {
      return std::tie(a.id, a.start, a.ts_ns) < std::tie(b.id, b.start, b.ts_ns);  // finishes, then starts
    });
    int64_t next_external = max_external + 1, joined = 0, unjoined = 0;
    for (size_t k = 0; k < flows.size();) {
      size_t finishes = k, starts = k, end = k;
      while (end < flows.size() && flows[end].id == flows[k].id) ++end;
      while (starts < end && !flows[starts].start) ++starts;
      const size_t pairs = std::min(starts - finishes, end - starts);
      unjoined += static_cast<int64_t>((starts - finishes) + (end - starts) - 2 * pairs);
      for (size_t p = 0; p < pairs; ++p) {
        const FlowEnd& f = flows[finishes + p];
        const FlowEnd& s = flows[starts + p];
        const auto task = device.find({f.pid, f.tid, f.ts_ns});
        const size_t op = InnermostOp(s);
        if (task == device.end() || op == SIZE_MAX || next_external == INT64_MAX) {
          ++unjoined;
          continue;
        }
        Event& o = t_.events[op];
        if (o.external_id == 0) o.external_id = next_external++;
        t_.events[task->second].external_id = o.external_id;
        ++joined;
      }
      k = end;
    }
    if (joined > 0) Count("device tasks joined to their operator by async_npu flows", joined);
    if (unjoined > 0) Count("async_npu flows with no operator or task to join", unjoined);
    // A launch call belongs to its task's operator too.
    std::unordered_map<int64_t, int64_t> external_by_correlation;
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const Event& e = t_.events[i];
      if (!drop_[i] && e.correlation != 0 && e.external_id != 0 && e.kind != EventKind::kRuntime && e.kind != EventKind::kOp &&
          e.kind != EventKind::kMemory) {
        external_by_correlation.try_emplace(e.correlation, e.external_id);
      }
    }
    for (Event& e : t_.events) {
      if (e.kind != EventKind::kRuntime || e.correlation == 0 || e.external_id != 0) continue;
      if (auto it = external_by_correlation.find(e.correlation); it != external_by_correlation.end()) e.external_id = it->second;
    }
  }

  // A thread's operators by start (an enclosing one first), and each one's parent: the
  // nearest earlier operator that contains it.
  void SortWithParents(std::vector<size_t>& list) {
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      const Event &x = t_.events[a], &y = t_.events[b];
      return x.ts_ns != y.ts_ns ? x.ts_ns < y.ts_ns : x.dur_ns > y.dur_ns;
    });
    std::vector<size_t> open;  // positions in `list`
    for (size_t k = 0; k < list.size(); ++k) {
      const Event& e = t_.events[list[k]];
      while (!open.empty() && End(t_.events[list[open.back()]]) < End(e)) open.pop_back();
      parent_[list[k]] = open.empty() ? SIZE_MAX : list[open.back()];
      open.push_back(k);
    }
  }

  // The innermost operator on the flow's thread that contains its start: the latest to
  // start at or before it, else that one's nearest enclosing operator that still covers it.
  size_t InnermostOp(const FlowEnd& s) const {
    const auto it = ops_.find({s.pid, s.tid});
    if (it == ops_.end()) return SIZE_MAX;
    const std::vector<size_t>& list = it->second;
    auto after = std::upper_bound(list.begin(), list.end(), s.ts_ns, [&](int64_t ts, size_t i) { return ts < t_.events[i].ts_ns; });
    if (after == list.begin()) return SIZE_MAX;
    size_t op = *(after - 1);
    while (op != SIZE_MAX && End(t_.events[op]) < s.ts_ns) {
      const auto p = parent_.find(op);
      op = p == parent_.end() ? SIZE_MAX : p->second;
    }
    return op;
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

  Trace& t_;
  const Pids p_;
  std::vector<bool> drop_;
  std::vector<Collective> collectives_;
  std::vector<std::pair<int64_t, int32_t>> plane_starts_;  // ts, stream id
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> spans_by_stream_;
  std::map<std::pair<int32_t, int32_t>, std::vector<size_t>> ops_;  // by thread, sorted
  std::unordered_map<size_t, size_t> parent_;                        // op -> enclosing op
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
