// What a what-if window's graph says whatever the changes (whatif.cc): which host nodes a
// recorded sync ends, each edge's cause, the typical launch delay and queued gap, and the
// waits the trace did not record but shows — a blocking call's on the device work that
// ended while it ran, a stream's on another stream's work.
#ifndef TIERSCOPE_ANALYSIS_WHATIF_FACTS_H_
#define TIERSCOPE_ANALYSIS_WHATIF_FACTS_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/critical_path_graph.h"
#include "analysis/reports.h"

namespace tierscope {

struct WindowFacts {
  std::vector<bool> waited;       // by node: a host node a recorded sync ends
  std::vector<PathCause> causes;  // by edge
  double launch_delay = 0, device_gap = 0;  // medians: idle launches' delay, queued kernels' gap
  // A blocking call with no recorded sync (PyTorch records them only with
  // enable_cuda_sync_events), by its end node -> the end nodes of the device events it is
  // taken to have waited for (InferWaits), the last to end first.
  std::unordered_map<uint32_t, std::vector<uint32_t>> awaited;
  // A device event that waited for another stream's work (a StreamWaitEvent its launching
  // thread called before launching it, with no recorded sync), by its start node -> the end
  // node of the work it waited for.
  std::unordered_map<uint32_t, uint32_t> stream_waits;
};

WindowFacts FactsOf(const TraceIndex& index, const PathGraph& graph);

// Whether edge `e` is a blocking call's own span, ending at its end node, with no recorded
// sync to end it.
bool UnsyncedBlockingSpan(const TraceIndex& index, const PathGraph& graph, const std::vector<bool>& waited,
                          const PathGraph::Edge& e);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_WHATIF_FACTS_H_
