// The step timeline an analysis page draws: one step of a trace (the steady-state one, or
// the one asked for) as lanes of host threads and device streams, each event with its
// lane, times, name, kind, nesting depth, kernel type and the launch that issued it, the
// step's critical path marked; the other steps as a density overview of the whole trace.
// Columnar JSON ("timeline" in `analyze --format json --timeline`), bounded in size
// however large the trace.
#ifndef TIERSCOPE_ANALYSIS_TIMELINE_H_
#define TIERSCOPE_ANALYSIS_TIMELINE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/critical_path.h"
#include "analysis/device_specs.h"
#include "analysis/reports.h"
#include "tierscope/status.h"
#include "trace/units.h"

namespace tierscope {

inline constexpr int kTimelineOverviewBins = 400;

// What a timeline holds. A step with more than `max_events` keeps its device work, then
// its host events on the critical path, then its other host events — the longest of a
// tier where the room left ends inside it — and says how many of each the overview alone
// shows.
struct TimelineLimits {
  size_t max_events = 60'000;
  bool every_step = true;  // every step's events when they all fit (else the chosen step's)
  bool python = true;      // Python frames (kOther) in lanes of their own (else left out)
};

// The step a page (and an overlay) shows, of `windows` (critical_path.h's PathWindows),
// `kernels[i]` the kernels launched in window i (empty: not counted): `requested` by name
// when given (NotFound naming the steps there are otherwise); else the steady-state step —
// the median-length one of the steps after the first (a warm-up), of those that launched
// kernels when any did (the first itself when it alone did). `why` says which rule chose it.
StatusOr<size_t> ChooseTimelineStep(const std::vector<WorkUnit>& windows, const std::vector<int64_t>& kernels,
                                    const std::string& requested, std::string* why);

// The steps of `index`'s trace and the one chosen, with the kernels each launched (a
// kernel's step is the unit holding its launch: trace/units.h's UnitAt).
struct StepChoice {
  std::vector<WorkUnit> windows;
  std::vector<int64_t> kernels;
  size_t chosen = 0;
  std::string why;
  const WorkUnit& step() const { return windows[chosen]; }
};
StatusOr<StepChoice> ChooseStep(const TraceIndex& index, const std::string& requested);

// A path's events, one entry per event (an event the path crosses twice — a kernel's
// launch overhead and its compute — has its times added, and the cause of the larger),
// by time on the path, largest first.
std::vector<CriticalPath::OnPath> PathEventsOnce(const CriticalPath& path);

// What a timeline's budget left to the overview (its "omitted"): events in all, of each
// tier, and the length below which the tier cut part way lost its events (0: none was).
struct TimelineOmitted {
  int64_t events = 0, shorter_than_ns = 0, critical_path_events = 0, device_events = 0, host_events = 0;
  nlohmann::json ToJson() const;
  // Another timeline's, added (a job's ranks): the counts summed, the longest cut kept.
  void Add(const nlohmann::json& other);
};

// The event columns of a timeline (one entry per event, in lane then start order).
struct TimelineEvents {
  std::vector<int64_t> lane, start_ns, dur_ns, name, kind, depth, type, launch;
  size_t size() const { return lane.size(); }
  nlohmann::json ToJson() const;
};

// The timeline of `index`'s trace: the chosen step's events (every step's, when they all
// fit), the critical path of the chosen step, the whole trace's overview, and `device`
// (the roofline's peaks; null when unknown). `requested`: as above.
StatusOr<nlohmann::json> BuildTimeline(const TraceIndex& index, const std::string& requested,
                                       const std::optional<DeviceSpec>& device, const TimelineLimits& limits);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_TIMELINE_H_
