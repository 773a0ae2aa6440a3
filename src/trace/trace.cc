// StringTable and event-kind names.
#include "trace/trace.h"

namespace tierscope {

const char* EventKindName(EventKind k) {
  switch (k) {
    case EventKind::kOp: return "cpu_op";
    case EventKind::kAnnotation: return "user_annotation";
    case EventKind::kRuntime: return "cuda_runtime";
    case EventKind::kKernel: return "kernel";
    case EventKind::kTask: return "kernel_task";
    case EventKind::kMemcpy: return "gpu_memcpy";
    case EventKind::kMemset: return "gpu_memset";
    case EventKind::kSync: return "cuda_sync";
    case EventKind::kMemory: return "cpu_instant_event";
    case EventKind::kGpuAnnotation: return "gpu_user_annotation";
    case EventKind::kOther: return "other";
  }
  return "unknown";
}

int32_t StringTable::Intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  strings_.emplace_back(s);
  const int32_t id = static_cast<int32_t>(strings_.size() - 1);
  index_.emplace(strings_.back(), id);
  return id;
}

int32_t StringTable::Append(std::string_view s) {
  strings_.emplace_back(s);
  return static_cast<int32_t>(strings_.size() - 1);
}

}  // namespace tierscope
