// The step timeline an analysis page draws: one step of a trace (the steady-state one, or
// the one asked for) as lanes of host threads and device streams, each event with its
// lane, times, name, kind, nesting depth, kernel type, the launch that issued it and its
// time on the step's critical path; the other steps as a density overview of the whole
// trace. Columnar JSON ("timeline" in `analyze --format json --timeline`), bounded in size
// however large the trace.
#ifndef TIERSCOPE_ANALYSIS_TIMELINE_H_
#define TIERSCOPE_ANALYSIS_TIMELINE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/device_specs.h"
#include "analysis/reports.h"
#include "tierscope/status.h"
#include "trace/units.h"

namespace tierscope {

inline constexpr int kTimelineOverviewBins = 400;

// What a timeline holds. A step with more than `max_events` keeps its longest events (and
// every event on its critical path) and says how many shorter ones the overview alone shows.
struct TimelineLimits {
  size_t max_events = 60'000;
  bool every_step = true;  // every step's events when they all fit (else the chosen step's)
  bool python = true;      // Python frames (kOther) in lanes of their own (else left out)
};

// The step a page shows, of `windows` (critical_path.h's PathWindows), `kernels[i]` the
// kernels launched in window i (empty: not counted): `requested` by name when given
// (NotFound naming the steps there are otherwise); else the steady-state step — the
// median-length one of the steps after the first (a warm-up), of those that launched
// kernels when any did (the first itself when it alone did). `why` says which rule chose it.
StatusOr<size_t> ChooseTimelineStep(const std::vector<WorkUnit>& windows, const std::vector<int64_t>& kernels,
                                    const std::string& requested, std::string* why);

// The timeline of `index`'s trace: the chosen step's events (every step's, when they all
// fit), the critical path of the chosen step, the whole trace's overview, and `device`
// (the roofline's peaks; null when unknown). `requested`: as above.
StatusOr<nlohmann::json> BuildTimeline(const TraceIndex& index, const std::string& requested,
                                       const std::optional<DeviceSpec>& device, const TimelineLimits& limits);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_TIMELINE_H_
