// KernelInspector: launch selection, save/restore of written buffers, replay passes.
#include "inspect/kernel_inspector.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tierscope {

StatusOr<KernelNameMatcher> KernelNameMatcher::Create(const std::string& spec) {
  KernelNameMatcher m;
  m.spec_ = spec;
  constexpr std::string_view kRegex = "regex:";
  if (spec.rfind(kRegex, 0) == 0) {
    m.is_regex_ = true;
    try {
      m.regex_ = std::regex(spec.substr(kRegex.size()), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return InvalidArgument("-k " + spec + ": not a valid regular expression: " + e.what());
    }
  }
  return m;
}

bool KernelNameMatcher::Matches(std::string_view kernel) const {
  if (spec_.empty()) return true;
  if (!is_regex_) return kernel == spec_;
  return std::regex_search(kernel.begin(), kernel.end(), regex_);
}

StatusOr<std::unique_ptr<KernelInspector>> KernelInspector::Create(const InspectorOptions& o) {
  if (o.filter.name.empty()) return InvalidArgument("no kernel name given (-k NAME or -k regex:PATTERN)");
  if (o.filter.count < 1) {
    return InvalidArgument("--launch-count must be at least 1, got " +
                           std::to_string(o.filter.count));
  }
  if (o.filter.skip < 0) {
    return InvalidArgument("--launch-skip must be >= 0, got " + std::to_string(o.filter.skip));
  }
  if (o.passes < 1 || o.passes > 1000) {
    return InvalidArgument("--replay-passes must be in [1, 1000], got " + std::to_string(o.passes));
  }
  std::unique_ptr<KernelInspector> k(new KernelInspector(o));
  TS_ASSIGN_OR_RETURN(k->matcher_, KernelNameMatcher::Create(o.filter.name));
  return k;
}

bool KernelInspector::Matches(std::string_view kernel) const { return matcher_.Matches(kernel); }

Status KernelInspector::OnLaunch(Backend& backend, const LaunchDesc& desc,
                                 FunctionRef<StatusOr<KernelRun>()> run) {
  const int64_t id = next_id_++;
  auto tally = tallies_.find(desc.kernel);
  if (tally == tallies_.end()) {
    tally = tallies_.emplace(std::string(desc.kernel), KernelTally{std::string(desc.kernel), 0, 0}).first;
    names_.emplace_back(desc.kernel);
  }
  const int64_t invocation = tally->second.launches;
  const bool selected = Matches(desc.kernel) && matched_++ >= options_.filter.skip &&
                        static_cast<int64_t>(profiled_.size()) < options_.filter.count;

  const auto save = [&](std::vector<std::vector<std::byte>>& saved) -> Status {
    saved.resize(desc.writes.size());
    for (size_t i = 0; i < desc.writes.size(); ++i) {
      const MemRange& w = desc.writes[i];
      saved[i].resize(w.ptr != nullptr ? w.bytes : 0);
      if (!saved[i].empty()) {
        TS_RETURN_IF_ERROR(backend.CopyDeviceToHost(saved[i].data(), w.ptr, w.bytes));
      }
    }
    return OkStatus();
  };
  const auto restore = [&](const std::vector<std::vector<std::byte>>& saved) -> Status {
    for (size_t i = 0; i < desc.writes.size(); ++i) {
      if (desc.writes[i].ptr != nullptr && !saved[i].empty()) {
        TS_RETURN_IF_ERROR(backend.CopyHostToDevice(desc.writes[i].ptr, saved[i].data(), saved[i].size()));
      }
    }
    return OkStatus();
  };
  // Before the first run, the buffers it writes (it may read them: in-place kernels).
  if (selected) TS_RETURN_IF_ERROR(save(before_));
  TS_ASSIGN_OR_RETURN(KernelRun first, run());
  ++tally->second.launches;
  tally->second.total_ns += first.end_ns - first.begin_ns;
  total_ns_ += first.end_ns - first.begin_ns;
  if (!selected) return OkStatus();

  TS_RETURN_IF_ERROR(save(after_));
  ProfiledLaunch p;
  p.id = id;
  p.invocation = invocation;
  p.kernel = std::string(desc.kernel);
  p.grid = desc.grid;
  p.block = desc.block;
  p.flops = desc.flops;
  p.bytes_read = desc.bytes_read;
  p.bytes_written = desc.bytes_written;
  p.pipe = std::string(desc.pipe);
  p.shared_bytes = desc.shared_bytes;
  p.workers = static_cast<int>(first.workers.size());
  p.device = first.device;
  p.device_timed = true;
  std::vector<std::vector<int64_t>> tasks;
  for (int pass = 0; pass < options_.passes; ++pass) {
    TS_RETURN_IF_ERROR(restore(before_));
    if (options_.flush_caches) TS_RETURN_IF_ERROR(backend.FlushCaches());
    TS_ASSIGN_OR_RETURN(KernelRun r, run());
    const int64_t dur = std::max<int64_t>(r.end_ns - r.begin_ns, 1);
    p.device_timed = p.device_timed && r.device_timed;
    int64_t busy = 0;
    std::vector<int64_t> per_worker;
    for (const WorkerSpan& w : r.workers) {
      busy += w.busy_ns;
      per_worker.push_back(w.tasks);
    }
    p.pass_ns.push_back(dur);
    if (!r.workers.empty()) {
      p.pass_busy.push_back(static_cast<double>(busy) /
                            (static_cast<double>(dur) * static_cast<double>(r.workers.size())));
    }
    tasks.push_back(std::move(per_worker));
  }
  TS_RETURN_IF_ERROR(restore(after_));  // exactly what the workload's own run produced
  std::vector<size_t> order(p.pass_ns.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p.pass_ns[a] < p.pass_ns[b]; });
  p.worker_tasks = tasks[order[order.size() / 2]];
  profiled_.push_back(std::move(p));
  return OkStatus();
}

std::vector<KernelTally> KernelInspector::Tallies() const {
  std::vector<KernelTally> out;
  for (const auto& [name, t] : tallies_) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const KernelTally& a, const KernelTally& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.kernel < b.kernel;
  });
  return out;
}

}  // namespace tierscope
