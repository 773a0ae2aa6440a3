// Profiler: turns scopes and backend callbacks into Trace events.
#include "profile/profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace tierscope {

Profiler::Profiler(const ProfilerOptions& options, const DeviceProps& device)
    : options_(options), start_ns_(MonotonicNs()),
      host_tid_(static_cast<int32_t>(syscall(SYS_gettid))) {
  trace_.base_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  trace_.host_pid = static_cast<int32_t>(getpid());
  trace_.source = "tierscope engine";
  trace_.format = "tierscope";
  trace_.runtime = "cpu";
  trace_.device_name = device.name;
  trace_.device_units = device.compute_units;
  trace_.device_memory = device.total_memory;
  trace_.thread_names.push_back({kStreamTid, "stream 7 (kernels)"});
  for (int w = 0; w < device.compute_units; ++w) {
    trace_.thread_names.push_back({kWorkerTidBase + w, "worker " + std::to_string(w) + " (tasks)"});
  }
}

int64_t Profiler::CurrentOpId() const {
  for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
    if (it->id != 0) return it->id;
  }
  return 0;
}

void Profiler::BeginScope(EventKind kind, std::string_view name, std::string_view args) {
  const int64_t now = Rel(MonotonicNs());
  if (!recording_) {
    open_.push_back({SIZE_MAX, 0});
    return;
  }
  Event& e = trace_.Add(kind, name, now, 0);
  e.pid = trace_.host_pid;
  e.tid = host_tid_;
  if (kind == EventKind::kOp) e.external_id = next_op_id_++;
  if (!args.empty()) e.args = trace_.strings.Intern(args);
  open_.push_back({trace_.events.size() - 1, e.external_id});
}

void Profiler::End() {
  if (open_.empty()) return;
  const Open o = open_.back();
  open_.pop_back();
  if (o.event == SIZE_MAX) return;
  Event& e = trace_.events[o.event];
  e.dur_ns = Rel(MonotonicNs()) - e.ts_ns;
}

void Profiler::RecordMemory(uintptr_t addr, double bytes, int64_t live_bytes) {
  if (!recording_ || !options_.profile_memory) return;
  Event& e = trace_.Add(EventKind::kMemory, "[memory]", Rel(MonotonicNs()), 0);
  e.pid = trace_.host_pid;
  e.tid = host_tid_;
  e.v0 = bytes;
  e.v1 = static_cast<double>(live_bytes);
  e.external_id = static_cast<int64_t>(addr);
}

void Profiler::OnAllocate(uintptr_t addr, size_t bytes, int64_t live_bytes) {
  RecordMemory(addr, static_cast<double>(bytes), live_bytes);
}

void Profiler::OnFree(uintptr_t addr, size_t bytes, int64_t live_bytes) {
  RecordMemory(addr, -static_cast<double>(bytes), live_bytes);
}

int64_t Profiler::AddLaunch(const LaunchDesc& desc, int64_t launch_begin_ns, int64_t launch_end_ns,
                            int64_t kernel_begin_ns, int64_t kernel_end_ns, int64_t* corr_out,
                            int64_t* op_out) {
  const int64_t corr = next_correlation_++;
  const int64_t op = CurrentOpId();
  Event& launch = trace_.Add(EventKind::kRuntime, "cudaLaunchKernel", Rel(launch_begin_ns),
                             launch_end_ns - launch_begin_ns);
  launch.pid = trace_.host_pid;
  launch.tid = host_tid_;
  launch.correlation = corr;
  launch.external_id = op;

  char args[256];
  std::snprintf(args, sizeof(args),
                "\"grid\": [%lld, %lld, %lld], \"block\": [%lld, %lld, %lld]",
                static_cast<long long>(desc.grid.x), static_cast<long long>(desc.grid.y),
                static_cast<long long>(desc.grid.z), static_cast<long long>(desc.block.x),
                static_cast<long long>(desc.block.y), static_cast<long long>(desc.block.z));
  const int32_t args_id = trace_.strings.Intern(args);
  Event& k = trace_.Add(EventKind::kKernel, desc.kernel, Rel(kernel_begin_ns),
                        kernel_end_ns - kernel_begin_ns);
  k.pid = kDevicePid;
  k.tid = kStreamTid;
  k.correlation = corr;
  k.external_id = op;
  k.v0 = desc.flops;
  k.v1 = desc.bytes_read + desc.bytes_written;
  k.args = args_id;
  if (corr_out) *corr_out = corr;
  if (op_out) *op_out = op;
  return static_cast<int64_t>(trace_.events.size()) - 1;
}

int64_t Profiler::OnLaunchAsync(const LaunchDesc& desc, int64_t launch_begin_ns,
                                int64_t launch_end_ns) {
  if (!recording_) return -1;
  // The kernel's times are not known yet: it starts where the launch ends, for now.
  return AddLaunch(desc, launch_begin_ns, launch_end_ns, launch_end_ns, launch_end_ns, nullptr,
                   nullptr);
}

void Profiler::OnKernelTimes(int64_t token, int64_t kernel_begin_ns, int64_t kernel_end_ns,
                             const DeviceKernelInfo* info) {
  if (token < 0 || token >= static_cast<int64_t>(trace_.events.size())) return;
  Event& k = trace_.events[static_cast<size_t>(token)];
  if (k.kind != EventKind::kKernel) return;
  k.ts_ns = Rel(kernel_begin_ns);
  k.dur_ns = kernel_end_ns - kernel_begin_ns;
  if (info == nullptr) return;
  // The device's own grid replaces the descriptor's; its kernel name goes beside ours.
  std::string name;
  for (char c : info->name) {
    if (c == '"' || c == '\\') name += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) name += c;
  }
  char args[256];
  std::snprintf(args, sizeof(args),
                "\"grid\": [%lld, %lld, %lld], \"block\": [%lld, %lld, %lld], \"kernels\": %d, "
                "\"registers per thread\": %d, \"shared memory\": %lld",
                static_cast<long long>(info->grid.x), static_cast<long long>(info->grid.y),
                static_cast<long long>(info->grid.z), static_cast<long long>(info->block.x),
                static_cast<long long>(info->block.y), static_cast<long long>(info->block.z),
                info->kernels, info->registers_per_thread,
                static_cast<long long>(info->shared_bytes));
  k.args = trace_.strings.Intern(std::string(args) + ", \"device_kernel\": \"" + name + "\"");
}

void Profiler::OnSynchronize(int64_t begin_ns, int64_t end_ns) {
  if (!recording_) return;
  const int64_t corr = next_correlation_++;
  Event& call = trace_.Add(EventKind::kRuntime, "cudaStreamSynchronize", Rel(begin_ns), end_ns - begin_ns);
  call.pid = trace_.host_pid;
  call.tid = host_tid_;
  call.correlation = corr;
  call.external_id = CurrentOpId();
  Event& sync = trace_.Add(EventKind::kSync, "Stream Sync", Rel(begin_ns), end_ns - begin_ns);
  sync.pid = kDevicePid;
  sync.tid = kStreamTid;
  sync.correlation = corr;
}

void Profiler::OnLaunch(const LaunchDesc& desc, int64_t launch_begin_ns, int64_t launch_end_ns,
                        int64_t kernel_begin_ns, int64_t kernel_end_ns,
                        const std::vector<WorkerSpan>& workers) {
  if (!recording_) return;
  int64_t corr = 0, op = 0;
  AddLaunch(desc, launch_begin_ns, launch_end_ns, kernel_begin_ns, kernel_end_ns, &corr, &op);
  if (!options_.record_tasks) return;
  for (size_t w = 0; w < workers.size(); ++w) {
    const WorkerSpan& s = workers[w];
    if (s.tasks == 0) continue;
    Event& t = trace_.Add(EventKind::kTask, desc.kernel, Rel(s.begin_ns), s.end_ns - s.begin_ns);
    t.pid = kDevicePid;
    t.tid = kWorkerTidBase + static_cast<int32_t>(w);
    t.correlation = corr;
    t.external_id = op;
    t.v0 = static_cast<double>(s.tasks);
    t.v1 = static_cast<double>(s.busy_ns);
  }
}

}  // namespace tierscope
