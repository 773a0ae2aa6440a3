// Kineto-compatible Chrome trace writer (streamed; gzip via zlib).
#include "profile/chrome_trace.h"

#include <cstdarg>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "profile/profiler.h"
#include "profile/trace_sink.h"

namespace tierscope {
namespace {

void AppendF(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void AppendF(std::string& out, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n > 0) out.append(buf, static_cast<size_t>(std::min<int>(n, sizeof(buf) - 1)));
}

// Kineto's timestamps are microseconds; ns precision is kept with 3 decimals.
void AppendUs(std::string& out, int64_t ns) {
  const bool neg = ns < 0;
  const uint64_t a = neg ? static_cast<uint64_t>(-ns) : static_cast<uint64_t>(ns);
  AppendF(out, "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", a / 1000, a % 1000);
}

// Length of the valid UTF-8 sequence at s[i], or 0 if invalid.
size_t Utf8Len(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) { n = 2; cp = c & 0x1f; }
  else if ((c & 0xf0) == 0xe0) { n = 3; cp = c & 0x0f; }
  else if ((c & 0xf8) == 0xf0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;  // overlong, out of range, or a surrogate
  }
  return n;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') { out += "\\\""; ++i; continue; }
    if (c == '\\') { out += "\\\\"; ++i; continue; }
    if (c < 0x20) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default: AppendF(out, "\\u%04x", c);
      }
      ++i;
      continue;
    }
    if (c < 0x80) { out += static_cast<char>(c); ++i; continue; }
    const size_t n = Utf8Len(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  out += '"';
}

Status WriteChromeTrace(const Trace& t, const std::string& path) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<TraceSink> sink, TraceSink::Open(path));
  std::string& o = sink->buf();
  o += "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": ";
  AppendJsonString(o, t.device_name);
  AppendF(o, ", \"totalGlobalMem\": %lld, \"computeMajor\": 0, \"computeMinor\": 0, "
             "\"maxThreadsPerBlock\": 1, \"maxThreadsPerMultiprocessor\": 1, "
             "\"regsPerBlock\": 0, \"regsPerMultiprocessor\": 0, \"warpSize\": 1, "
             "\"sharedMemPerBlock\": 0, \"sharedMemPerMultiprocessor\": 0, "
             "\"numSms\": %d, \"sharedMemPerBlockOptin\": 0}\n  ],\n",
          static_cast<long long>(t.device_memory), t.device_units);
  o += "  \"distributedInfo\": {\"backend\": \"none\", \"rank\": 0, \"world_size\": 1},\n";
  o += "  \"traceName\": \"tierscope\",\n  \"displayTimeUnit\": \"ms\",\n";
  AppendF(o, "  \"baseTimeNanoseconds\": %lld,\n  \"traceEvents\": [\n",
          static_cast<long long>(t.base_time_ns));
  bool first = true;
  auto begin_event = [&]() {
    if (!first) o += ",\n";
    first = false;
    o += "  {";
  };
  // Process and thread names.
  begin_event();
  AppendF(o, "\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"tierscope host\"}}", t.host_pid);
  begin_event();
  o += "\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": ";
  AppendJsonString(o, t.device_name);
  o += "}}";
  begin_event();
  o += "\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 0, \"tid\": 0, \"args\": {\"labels\": \"device 0\"}}";
  for (const auto& [tid, name] : t.thread_names) {
    begin_event();
    AppendF(o, "\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": %d, \"args\": {\"name\": ", tid);
    AppendJsonString(o, name);
    o += "}}";
  }

  for (const Event& e : t.events) {
    begin_event();
    const std::string_view name = e.name >= 0 ? t.strings.Get(e.name) : std::string_view();
    if (e.kind == EventKind::kMemory) {
      AppendF(o, "\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": \"[memory]\", \"pid\": %d, \"tid\": %d, \"ts\": ", e.pid, e.tid);
      AppendUs(o, e.ts_ns);
      AppendF(o, ", \"args\": {\"Device Type\": 0, \"Device Id\": -1, \"Addr\": %lld, \"Bytes\": %.0f, \"Total Allocated\": %.0f, \"Total Reserved\": %.0f}}",
              static_cast<long long>(e.external_id), e.v0, e.v1, e.v1);
      sink->MaybeFlush();
      continue;
    }
    AppendF(o, "\"ph\": \"X\", \"cat\": \"%s\", \"name\": ", EventKindName(e.kind));
    AppendJsonString(o, name);
    AppendF(o, ", \"pid\": %d, \"tid\": %d, \"ts\": ", e.pid, e.tid);
    AppendUs(o, e.ts_ns);
    o += ", \"dur\": ";
    AppendUs(o, e.dur_ns);
    o += ", \"args\": {";
    switch (e.kind) {
      case EventKind::kOp:
        AppendF(o, "\"External id\": %lld, \"Record function id\": 0, \"Ev Idx\": 0",
                static_cast<long long>(e.external_id));
        break;
      case EventKind::kRuntime:  // CUPTI's callback ids: cudaLaunchKernel 211, cudaStreamSynchronize 131
        AppendF(o, "\"External id\": %lld, \"correlation\": %lld, \"cbid\": %d",
                static_cast<long long>(e.external_id), static_cast<long long>(e.correlation),
                name == "cudaStreamSynchronize" ? 131 : 211);
        break;
      case EventKind::kKernel:
        AppendF(o, "\"External id\": %lld, \"correlation\": %lld, \"device\": 0, \"stream\": %d, "
                   "\"context\": 1, \"flops\": %.0f, \"bytes\": %.0f",
                static_cast<long long>(e.external_id), static_cast<long long>(e.correlation),
                kStreamTid, e.v0, e.v1);
        // Kineto's occupancy fields; the device's own values when CUPTI reported them.
        if (e.args < 0 || t.strings.Get(e.args).find("\"registers per thread\"") == std::string_view::npos) {
          o += ", \"registers per thread\": 0, \"shared memory\": 0, \"warps per SM\": 0, "
               "\"est. achieved occupancy %\": 0";
        }
        break;
      case EventKind::kSync:
        AppendF(o, "\"correlation\": %lld, \"device\": 0, \"stream\": %d, \"context\": 1, "
                   "\"cuda_sync_kind\": \"stream_sync\"",
                static_cast<long long>(e.correlation), kStreamTid);
        break;
      case EventKind::kTask:
        AppendF(o, "\"kernel correlation\": %lld, \"tasks\": %.0f, \"busy ns\": %.0f",
                static_cast<long long>(e.correlation), e.v0, e.v1);
        break;
      default:
        break;
    }
    if (e.args >= 0) {
      if (o.back() != '{') o += ", ";
      o += t.strings.Get(e.args);
    }
    o += "}}";
    // A flow from each launch to its kernel, as Kineto's ac2g.
    if (e.kind == EventKind::kRuntime && name != "cudaStreamSynchronize") {
      AppendF(o, ",\n  {\"ph\": \"s\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": ",
              static_cast<long long>(e.correlation), e.pid, e.tid);
      AppendUs(o, e.ts_ns);
      o += ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}";
    } else if (e.kind == EventKind::kKernel) {
      AppendF(o, ",\n  {\"ph\": \"f\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": ",
              static_cast<long long>(e.correlation), e.pid, e.tid);
      AppendUs(o, e.ts_ns);
      o += ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}";
    }
    sink->MaybeFlush();
  }
  o += "\n  ]\n}\n";
  return sink->Close(path);
}

}  // namespace tierscope
