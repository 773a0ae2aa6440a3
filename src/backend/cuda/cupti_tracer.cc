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
Status CuptiTracer::Flush(const Deliver&) { return OkStatus(); }
}  // namespace tierscope
#else

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <memory>
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

// CUPTI stamps records with MonotonicNs's clock itself, so no offset can drift.
uint64_t CUPTIAPI Timestamp() { return static_cast<uint64_t>(MonotonicNs()); }

// Kernels and device copies carry the times; runtime and driver records must be on for
// CUPTI to write the external-correlation records (launches through <<<>>> are runtime
// calls, cuBLASLt's are driver calls); their own records are skipped.
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,            CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

// Kernel names as a reader wants them (CUPTI gives the mangled symbol), as Kineto does.
std::string Demangle(const char* name) {
  if (name == nullptr) return "";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && d != nullptr ? std::string(d.get()) : std::string(name);
}

void DisableAll() {
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
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
  if (cuptiActivityRegisterTimestampCallback(Timestamp) != CUPTI_SUCCESS) {
    uint64_t now = 0;  // CUPTI's own clock (CLOCK_REALTIME): one offset, taken now
    cuptiGetTimestamp(&now);
    t->clock_offset_ns_ = MonotonicNs() - static_cast<int64_t>(now);
  }
  for (CUpti_ActivityKind k : kKinds) {
    Status s = Cupti(cuptiActivityEnable(k), "enable activity records");
    if (!s.ok()) {
      DisableAll();
      return s;
    }
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_active = true;
  return t;
}

CuptiTracer::~CuptiTracer() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  DisableAll();
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

Status CuptiTracer::Flush(const Deliver& deliver) {
  TS_RETURN_IF_ERROR(Cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush"));
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
        if (k->start == 0 && k->end == 0) continue;  // CUPTI could not time it
        DeviceKernelInfo info;
        info.name = Demangle(k->name);
        info.grid = Dim3{k->gridX, k->gridY, k->gridZ};
        info.block = Dim3{k->blockX, k->blockY, k->blockZ};
        info.registers_per_thread = k->registersPerThread;
        info.shared_bytes = static_cast<int64_t>(k->staticSharedMemory) + k->dynamicSharedMemory;
        correlator_.AddKernel(k->correlationId, static_cast<int64_t>(k->start) + clock_offset_ns_,
                              static_cast<int64_t>(k->end) + clock_offset_ns_, std::move(info));
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {  // CopyInto's device copies
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        if (m->start == 0 && m->end == 0) continue;
        // Its correlation id is the driver call's; the runtime call's is kept beside it.
        for (uint32_t id : {m->correlationId, m->runtimeCorrelationId}) {
          if (id == 0) continue;
          correlator_.AddCopy(id, static_cast<int64_t>(m->start) + clock_offset_ns_,
                              static_cast<int64_t>(m->end) + clock_offset_ns_);
        }
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        // A memset a launch issues joins that launch's span (none of the engine's ops
        // issues one today; tier 3's cache flush is deliberately not bracketed). Its
        // correlation id is the driver call's: DRIVER activity is on for this.
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        if ((m->start == 0 && m->end == 0) || m->correlationId == 0) continue;
        correlator_.AddCopy(m->correlationId, static_cast<int64_t>(m->start) + clock_offset_ns_,
                            static_cast<int64_t>(m->end) + clock_offset_ns_);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
          correlator_.AddExternal(e->correlationId, e->externalId);
        }
      }
    }
    std::free(buffer);
  }
  correlator_.Drain(deliver);
  return OkStatus();
}

}  // namespace tierscope

#endif  // TIERSCOPE_MUSA
