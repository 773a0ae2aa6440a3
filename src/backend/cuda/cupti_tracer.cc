// CUPTI activity buffers, records, and their matching to launches.
#include "backend/cuda/cupti_tracer.h"

#if defined(TIERSCOPE_MUSA)
// MUSA has no CUPTI: tier 2 there uses the CUDA-event (musaEvent) fallback.
namespace tierscope {
StatusOr<std::unique_ptr<CuptiTracer>> CuptiTracer::Start() {
  return FailedPrecondition("a MUSA build has no CUPTI");
}
CuptiTracer::~CuptiTracer() = default;
void CuptiTracer::Push(uint64_t) {}
void CuptiTracer::Pop() {}
Status CuptiTracer::Flush(const std::function<void(uint64_t, int64_t, int64_t)>&) {
  return OkStatus();
}
}  // namespace tierscope
#else

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace tierscope {
namespace {

constexpr size_t kBufferBytes = 4 << 20;

// CUPTI calls these from its own threads; completed buffers wait here for Flush.
std::mutex g_mu;
std::vector<std::pair<uint8_t*, size_t>> g_completed;
bool g_active = false;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_completed.emplace_back(buffer, valid);
}

Status Cupti(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return OkStatus();
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  return FailedPrecondition(std::string("CUPTI ") + what + ": " + (msg ? msg : "error"));
}

}  // namespace

StatusOr<std::unique_ptr<CuptiTracer>> CuptiTracer::Start() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_active) return FailedPrecondition("CUPTI is already tracing in this process");
  }
  std::unique_ptr<CuptiTracer> t(new CuptiTracer());
  TS_RETURN_IF_ERROR(Cupti(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted),
                           "register buffers"));
  TS_RETURN_IF_ERROR(Cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                           "enable kernel records"));
  Status s = Cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enable memcpy records");
  if (s.ok()) {
    s = Cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION),
              "enable external correlation");
  }
  if (!s.ok()) {
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
    return s;
  }
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  t->clock_offset_ns_ = MonotonicNs() - static_cast<int64_t>(now);
  std::lock_guard<std::mutex> lock(g_mu);
  g_active = true;
  return t;
}

CuptiTracer::~CuptiTracer() {
  cuptiActivityFlushAll(1);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& [buffer, valid] : g_completed) std::free(buffer);
  g_completed.clear();
  g_active = false;
}

void CuptiTracer::Push(uint64_t id) {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiTracer::Pop() {
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

Status CuptiTracer::Flush(const std::function<void(uint64_t, int64_t, int64_t)>& deliver) {
  TS_RETURN_IF_ERROR(Cupti(cuptiActivityFlushAll(1), "flush"));
  std::vector<std::pair<uint8_t*, size_t>> buffers;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    buffers.swap(g_completed);
  }
  for (auto& [buffer, valid] : buffers) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
          record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        Span& s = kernels_[k->correlationId];
        s.begin = std::min(s.begin, static_cast<int64_t>(k->start) + clock_offset_ns_);
        s.end = std::max(s.end, static_cast<int64_t>(k->end) + clock_offset_ns_);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {  // CopyInto's device copies
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        Span& s = kernels_[m->correlationId];
        s.begin = std::min(s.begin, static_cast<int64_t>(m->start) + clock_offset_ns_);
        s.end = std::max(s.end, static_cast<int64_t>(m->end) + clock_offset_ns_);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
          external_[e->correlationId] = e->externalId;
        }
      }
    }
    std::free(buffer);
  }
  // One launch may have run several kernels (several correlation ids): span them all.
  std::unordered_map<uint64_t, Span> launches;
  for (auto it = kernels_.begin(); it != kernels_.end();) {
    auto ext = external_.find(it->first);
    if (ext == external_.end()) {
      ++it;  // its correlation record has not arrived yet
      continue;
    }
    Span& l = launches[ext->second];
    l.begin = std::min(l.begin, it->second.begin);
    l.end = std::max(l.end, it->second.end);
    external_.erase(ext);
    it = kernels_.erase(it);
  }
  for (const auto& [id, span] : launches) deliver(id, span.begin, span.end);
  return OkStatus();
}

}  // namespace tierscope

#endif  // TIERSCOPE_MUSA
