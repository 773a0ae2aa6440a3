// Work units (a training step, one forward of a batch) and what happens in them: the one
// definition of a per-unit count, used by bench's profile summary, the analyzer's units
// report, op summary and diff, and the lab.
//
// An event belongs to the unit whose host window holds its host time. A device event's
// (kernel, copy, memset) host time is the start of the runtime call that launched it —
// on an asynchronous device it may run after the unit's scope has closed — and any other
// event's is its own start. Launches are runtime calls that issued device work (not
// synchronisations); memory operations are copies and memsets; an allocation is a memory
// event of more than 0 bytes and a free one of less (a zero-byte event is neither).
#ifndef TIERSCOPE_TRACE_UNITS_H_
#define TIERSCOPE_TRACE_UNITS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/int_map.h"
#include "trace/trace.h"

namespace tierscope {

struct WorkUnit {
  std::string name;
  int64_t begin_ns = 0, end_ns = 0;
};

// The units of `trace`, sorted by start: the annotations named `requested`; with it
// empty, ProfilerStep#N, else serial_bert_forward, else batched_bert_forward. `name`
// receives what delimits them ("ProfilerStep#N", ...; "" when there are none).
std::vector<WorkUnit> FindWorkUnits(const Trace& trace, const std::string& requested,
                                    std::string* name);

// The index of the unit holding host time `ts` in sorted `units`, or -1.
int UnitAt(const std::vector<WorkUnit>& units, int64_t ts);
// UnitAt for times that come mostly in order: the unit found last, or the next, is tried
// before a search. `units` must outlive it.
class UnitCursor {
 public:
  explicit UnitCursor(const std::vector<WorkUnit>& units) : units_(units) {}
  int operator()(int64_t ts);

 private:
  const std::vector<WorkUnit>& units_;
  size_t last_ = 0;
};

// Device work: kernels, copies and sets (what a launch issues).
bool IsDeviceWork(EventKind k);

// Host times of events: a device event's is its launch's start (by correlation id).
class HostTimes {
 public:
  explicit HostTimes(const Trace& trace);
  int64_t Of(const Event& e) const;
  // True when `e` is a runtime call that launched device work.
  bool IsLaunch(const Event& e) const;
  // Asks the cache for what Of(e) and IsLaunch(e) read (a loop's next events).
  void Prefetch(const Event& e) const {
    if (e.kind == EventKind::kRuntime) device_work_.Prefetch(e.correlation);
    else if (e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset) {
      launch_ts_.Prefetch(e.correlation);
    }
  }

 private:
  IntMap<int64_t> launch_ts_;  // correlation -> launch start
  IntSet device_work_;         // correlations with a device event
};

struct UnitCounts {
  std::string unit;   // what delimits the units ("" when counting the whole trace)
  int64_t units = 0;  // 0: no units; the counts are totals over the trace
  // Totals over every unit (or the whole trace).
  int64_t launches = 0, kernels = 0, memory_ops = 0, allocations = 0, frees = 0;
  double kernel_ns = 0, memory_op_ns = 0, wall_ns = 0;  // wall: the units' own durations
  std::map<std::string, int64_t> op_calls;       // operator name -> calls
  std::map<std::string, int64_t> kernel_calls;   // kernel name -> launches
  std::map<std::string, double> kernel_ns_by_name;
  // total / units (total itself when there are no units).
  double PerUnit(double total) const { return units > 0 ? total / static_cast<double>(units) : total; }
};

// Counts the events of `trace` in `units` (every event when `units` is empty).
UnitCounts CountPerUnit(const Trace& trace, const std::vector<WorkUnit>& units,
                        const std::string& unit_name);
// The same with the trace's host times already built (`host` is HostTimes(trace)).
UnitCounts CountPerUnit(const Trace& trace, const std::vector<WorkUnit>& units,
                        const std::string& unit_name, const HostTimes& host);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_UNITS_H_
