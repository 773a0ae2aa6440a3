// LaunchCorrelator: activity records folded into one span per launch.
#include "backend/launch_correlator.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace tierscope {

void LaunchCorrelator::Merge(Span& a, const Span& b) {
  a.begin = std::min(a.begin, b.begin);
  a.end = std::max(a.end, b.end);
  if (b.longest < 0) return;
  const int kernels = (a.longest < 0 ? 0 : a.info.kernels) + b.info.kernels;
  if (b.longest > a.longest) {
    a.longest = b.longest;
    a.info = b.info;
  }
  a.info.kernels = kernels;
}

void LaunchCorrelator::AddKernel(uint32_t correlation, int64_t begin_ns, int64_t end_ns,
                                 DeviceKernelInfo info) {
  Span one;
  one.begin = begin_ns;
  one.end = end_ns;
  one.longest = std::max<int64_t>(end_ns - begin_ns, 0);
  one.info = std::move(info);
  one.info.kernels = 1;
  Merge(spans_[correlation], one);
}

void LaunchCorrelator::AddCopy(uint32_t correlation, int64_t begin_ns, int64_t end_ns) {
  Span one;
  one.begin = begin_ns;
  one.end = end_ns;
  Merge(spans_[correlation], one);
}

void LaunchCorrelator::AddExternal(uint32_t correlation, uint64_t launch_id) {
  external_[correlation] = External{launch_id, 0};
}

void LaunchCorrelator::Drain(const Deliver& deliver) {
  std::unordered_map<uint64_t, Span> launches;
  for (auto it = spans_.begin(); it != spans_.end();) {
    auto ext = external_.find(it->first);
    if (ext != external_.end()) {
      Merge(launches[ext->second.launch_id], it->second);
      external_.erase(ext);
      it = spans_.erase(it);
    } else {
      it = it->second.drains++ >= 1 ? spans_.erase(it) : std::next(it);  // waited one already
    }
  }
  for (auto it = external_.begin(); it != external_.end();) {
    it = it->second.drains++ >= 1 ? external_.erase(it) : std::next(it);
  }
  for (const auto& [id, span] : launches) {
    deliver(id, span.begin, span.end, span.longest >= 0 ? &span.info : nullptr);
  }
}

}  // namespace tierscope
