// A small trace builder for the analyzer's tests: host events on pid 1 / tid 1 unless a
// thread is given, device events on pid 0 / stream 7 unless a stream is given.
#ifndef TIERSCOPE_TESTS_ANALYSIS_TRACE_BUILDER_H_
#define TIERSCOPE_TESTS_ANALYSIS_TRACE_BUILDER_H_

#include <cstdint>
#include <string>

#include "trace/trace.h"

namespace tierscope {

class Builder {
 public:
  Builder() { t_.device_units = 56; }
  void Unit(const std::string& name, int64_t ts, int64_t dur, int32_t tid = 1) {
    Host(EventKind::kAnnotation, name, ts, dur, 0, tid);
  }
  void Op(const char* name, int64_t ts, int64_t dur, int64_t ext, int32_t tid = 1) {
    Host(EventKind::kOp, name, ts, dur, ext, tid);
  }
  // A launch at `ts` (API duration `api`) and its kernel at `kts` for `kdur`.
  void Launch(const char* api_name, const char* kernel, int64_t ts, int64_t api, int64_t kts,
              int64_t kdur, int64_t ext, const char* grid = nullptr,
              EventKind kind = EventKind::kKernel, int32_t stream = 7, int32_t tid = 1) {
    const int64_t corr = ++corr_;
    Event& r = t_.Add(EventKind::kRuntime, api_name, ts, api);
    r.pid = 1;
    r.tid = tid;
    r.correlation = corr;
    r.external_id = ext;
    Event& k = t_.Add(kind, kernel, kts, kdur);
    k.pid = 0;
    k.tid = stream;
    k.correlation = corr;
    k.external_id = ext;
    if (grid) k.args = t_.strings.Intern(std::string("\"grid\": ") + grid + ", \"block\": [256, 1, 1]");
  }
  // A device-side range (gpu_user_annotation) on `stream`.
  void DeviceRange(const std::string& name, int64_t ts, int64_t dur, int32_t stream = 7) {
    Event& e = t_.Add(EventKind::kGpuAnnotation, name, ts, dur);
    e.pid = 0;
    e.tid = stream;
  }
  void Api(const char* name, int64_t ts, int64_t dur) { Host(EventKind::kRuntime, name, ts, dur, 0, 1); }
  // A kernel with no launch call (a device-only capture) on `stream`.
  void DeviceOnly(const char* kernel, int64_t ts, int64_t dur, int32_t stream = 7) {
    Event& e = t_.Add(EventKind::kKernel, kernel, ts, dur);
    e.pid = 0;
    e.tid = stream;
  }
  Trace& trace() { return t_; }

 private:
  void Host(EventKind k, const std::string& name, int64_t ts, int64_t dur, int64_t ext, int32_t tid) {
    Event& e = t_.Add(k, name, ts, dur);
    e.pid = 1;
    e.tid = tid;
    e.external_id = ext;
  }
  Trace t_;
  int64_t corr_ = 0;
};

}  // namespace tierscope

#endif  // TIERSCOPE_TESTS_ANALYSIS_TRACE_BUILDER_H_
