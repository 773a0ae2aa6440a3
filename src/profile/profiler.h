// Profiler: records tier-1 (operators, user scopes, memory) and tier-2 (launches,
// kernels, per-worker task spans) events of the engine into a Trace. Operator scopes
// come from the model (see OpScope); launches and allocations from the backend, as its
// BackendObserver. Recording can be paused and resumed for a steady-state window.
#ifndef TIERSCOPE_PROFILE_PROFILER_H_
#define TIERSCOPE_PROFILE_PROFILER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "trace/trace.h"

namespace tierscope {

struct ProfilerOptions {
  bool record_shapes = true;   // "Input Dims" / "Input type" on operators
  bool profile_memory = true;  // [memory] events for every allocation and free
  bool record_tasks = true;    // per-worker task spans of every kernel
};

// Kineto's conventions for where device events go.
constexpr int32_t kDevicePid = 0;      // device 0
constexpr int32_t kStreamTid = 7;      // the default stream, as PyTorch shows it
constexpr int32_t kWorkerTidBase = 100;  // worker w's task spans: tid 100 + w

class Profiler : public BackendObserver {
 public:
  Profiler(const ProfilerOptions& options, const DeviceProps& device);

  const ProfilerOptions& options() const { return options_; }
  // Recording on/off (events outside a recording window are dropped).
  void set_recording(bool on) { recording_ = on; }
  bool recording() const { return recording_; }

  // Operator and user-annotation scopes on the host thread. `args` is a fragment of
  // JSON object members (e.g. "\"Input Dims\": [[2, 3]]"), or empty.
  void BeginOp(std::string_view name, std::string_view args) {
    BeginScope(EventKind::kOp, name, args);
  }
  void BeginAnnotation(std::string_view name) { BeginScope(EventKind::kAnnotation, name, {}); }
  void End();  // closes the innermost open scope

  // BackendObserver.
  void OnAllocate(uintptr_t addr, size_t bytes, int64_t live_bytes) override;
  void OnFree(uintptr_t addr, size_t bytes, int64_t live_bytes) override;
  int64_t OnLaunchAsync(const LaunchDesc& desc, int64_t launch_begin_ns,
                        int64_t launch_end_ns) override;
  void OnKernelTimes(int64_t token, int64_t kernel_begin_ns, int64_t kernel_end_ns,
                     const DeviceKernelInfo* info) override;
  void OnLaunch(const LaunchDesc& desc, int64_t launch_begin_ns, int64_t launch_end_ns,
                int64_t kernel_begin_ns, int64_t kernel_end_ns,
                const std::vector<WorkerSpan>& workers) override;
  // A cudaStreamSynchronize runtime event on the host and, as Kineto writes CUPTI's
  // synchronization records, a cuda_sync "Stream Sync" event on the stream.
  void OnSynchronize(int64_t begin_ns, int64_t end_ns) override;

  Trace& trace() { return trace_; }
  const Trace& trace() const { return trace_; }

 private:
  struct Open {
    size_t event;  // index into trace_.events
    int64_t id;    // External id (0 for annotations)
  };
  int64_t Rel(int64_t ns) const { return ns - start_ns_; }
  // Adds the runtime launch and its kernel event; returns the kernel event's index.
  int64_t AddLaunch(const LaunchDesc& desc, int64_t launch_begin_ns, int64_t launch_end_ns,
                    int64_t kernel_begin_ns, int64_t kernel_end_ns, int64_t* corr, int64_t* op);
  void BeginScope(EventKind kind, std::string_view name, std::string_view args);
  void RecordMemory(uintptr_t addr, double bytes, int64_t live_bytes);
  int64_t CurrentOpId() const;

  ProfilerOptions options_;
  Trace trace_;
  int64_t start_ns_;
  bool recording_ = true;
  std::vector<Open> open_;
  int64_t next_op_id_ = 1;
  int64_t next_correlation_ = 1;
  int32_t host_tid_;
};

// RAII operator scope used by the model, compiled away when kOn is false so that a
// forward without a profiler pays nothing per op.
template <bool kOn>
class OpScope;

template <>
class OpScope<false> {
 public:
  template <typename ArgsFn>
  OpScope(Profiler*, std::string_view, ArgsFn&&) {}
  OpScope(Profiler*, std::string_view) {}
};

template <>
class OpScope<true> {
 public:
  template <typename ArgsFn>
  OpScope(Profiler* p, std::string_view name, ArgsFn&& args) : p_(p) {
    p_->BeginOp(name, p_->options().record_shapes ? std::string(args()) : std::string());
  }
  OpScope(Profiler* p, std::string_view name) : p_(p) { p_->BeginOp(name, {}); }
  ~OpScope() { p_->End(); }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  Profiler* p_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_PROFILE_PROFILER_H_
