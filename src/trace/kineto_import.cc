// Kineto Chrome trace importer. The whole (gunzipped) file is read into one padded
// buffer (a plain file is mapped); a light scan (kineto_scan) finds traceEvents and cuts
// it into ~1 MiB runs of whole events, each parsed in place with simdjson On-Demand by a
// reused parser, so the structural index stays small (a whole-file index alone would cost
// ~0.8x the input), and the pages of input already parsed go back to the system. The runs
// are split between two readers on two cores; the second keeps reader-local ids that are
// translated when it is merged, so the Trace is the same as one reader's. Strings are
// viewed in place (unescaped only when they have escapes), timestamps are parsed from
// their decimal text so ns are exact, and a bad event is counted, never fatal.
#include "trace/kineto_import.h"

#include "core/exceptions.h"
#include "core/thread_pool.h"
#include "trace/args.h"
#include "trace/json_input.h"
#include "trace/rocprof_import.h"
#include "trace/kineto_reader.h"
#include "trace/kineto_scan.h"
#include "trace/kineto_stream.h"
#include "trace/kineto_values.h"

#include <simdjson.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tierscope {
namespace {

using kineto::Layout;
using kineto::Reader;

// ---------------------------------------------------------------------------------------
// The importer: scan, read the runs on one or two cores, merge.

int ReaderCount(int threads, size_t chunks) {
  if (threads <= 0) threads = ThreadPool::HardwareThreads();
  // Two readers at most (the merge is serial), and only when each gets a few runs.
  return chunks >= 4 && threads >= 2 ? 2 : 1;
}

Status JsonError(const std::string& source, size_t size, size_t offset, std::string_view what) {
  std::string msg = source + ": invalid JSON at byte " + std::to_string(offset);
  if (offset >= size) msg += " (the end of the input: truncated?)";
  return DataLoss(msg + ": " + std::string(what));
}

StatusOr<Trace> Import(PaddedBuffer& buf, const std::string& source, int threads) {
  char* data = buf.data();
  const size_t size = buf.size(), capacity = buf.capacity();
  Layout layout;
  kineto::Scanner scanner(data, size);
  if (!scanner.Scan(&layout)) return JsonError(source, size, scanner.error_offset, scanner.error);
  if (layout.events_not_array) {
    return InvalidArgument(source + ": \"traceEvents\" is not an array");
  }
  if (!layout.has_events) {
    return InvalidArgument(source + ": not a Kineto trace: no \"traceEvents\" array");
  }
  Reader first(data, size, capacity, /*primary=*/true);
  std::string trace_name;
  for (const Layout::Field& field : layout.fields) first.ReadField(field, &trace_name);

  const size_t n = layout.chunks.size();
  std::atomic<bool> stop{false};
  bool ok = true, ok2 = true;
  std::unique_ptr<Reader> second;
  size_t total = 0;
  for (const auto& [b, e] : layout.chunks) total += e - b;
  if (ReaderCount(threads, n) == 1) {
    TS_RETURN_IF_ERROR(CatchAll(source, [&]() -> Status {
      ok = first.Read(layout.chunks, 0, n, false, total, stop);
      return OkStatus();
    }));
  } else {
    // Split the runs by bytes; the second reader takes the later half on another thread.
    size_t half = 0, split = 0;
    while (split + 1 < n && half < total / 2) {
      half += layout.chunks[split].second - layout.chunks[split].first;
      ++split;
    }
    second = std::make_unique<Reader>(data, size, capacity, /*primary=*/false);
    // No exception leaves either reader: the worker's would end the process, and the
    // first's would destroy a joinable thread. jthread joins on every path.
    Status failed2, failed1;
    {
      std::jthread worker([&] {
        try {
          ok2 = second->Read(layout.chunks, split, n, /*copy_first=*/true, total - half, stop);
        } catch (...) {
          failed2 = StatusFromCurrentException(source);
          ok2 = false;
          stop = true;
        }
      });
      try {
        ok = first.Read(layout.chunks, 0, split, false, total, stop);
      } catch (...) {
        failed1 = StatusFromCurrentException(source);
        ok = false;
      }
      if (!ok) stop = true;
    }
    if (!failed1.ok()) return failed1;
    if (!failed2.ok()) return failed2;
  }
  for (Reader* r : {&first, second.get()}) {  // the first error in file order
    if (r == nullptr || (r == &first ? ok : ok2)) continue;
    if (r->error() == simdjson::MEMALLOC) return ResourceExhausted(source + ": out of memory");
    return JsonError(source, size, r->error_offset(), simdjson::error_message(r->error()));
  }
  if (second != nullptr) first.Merge(*second);

  return first.TakeTrace(trace_name, source, size);
}

}  // namespace

StatusOr<Trace> ImportKinetoJson(std::string_view json, const std::string& source, int threads) {
  if (json.size() > kMaxJsonBytes) return ResourceExhausted(source + ": larger than 4 GiB");
  const bool rocprof = LooksLikeRocprofJson(json.substr(0, 256));
  PaddedBuffer buf;
  if (!buf.Reserve(json.size())) return ResourceExhausted(source + ": out of memory");
  if (!json.empty()) std::memcpy(buf.data(), json.data(), json.size());
  buf.Grow(json.size());
  buf.Finish();
  if (rocprof) return ImportRocprofJson(std::string_view(buf.data(), buf.size()), source);
  return Import(buf, source, threads);
}

namespace {
// Whether the file's JSON starts as rocprofv3's does (its importer reads whole documents).
bool RocprofFile(const std::string& path) {
  StatusOr<std::unique_ptr<JsonStream>> in = JsonStream::Open(path);
  if (!in.ok()) return false;
  char head[256];
  size_t n = 0;
  while (n < sizeof(head)) {
    StatusOr<size_t> got = (*in)->Read(head + n, sizeof(head) - n);
    if (!got.ok() || *got == 0) break;
    n += *got;
  }
  return LooksLikeRocprofJson(std::string_view(head, n));
}
}  // namespace

StatusOr<Trace> ImportKinetoTrace(const std::string& path, int threads) {
  if (ShouldStream(path) && !RocprofFile(path)) return ImportKinetoStream(path, StreamWindowBytes(), threads);
  std::string ignored;
  StatusOr<PaddedBuffer> read = ReadJsonInput(path, &ignored);
  if (!read.ok() && IsOverJsonLimit(read.status())) return ImportKinetoStream(path, StreamWindowBytes(), threads);
  if (!read.ok()) return read.status();
  PaddedBuffer buf = std::move(*read);
  // AMD's rocprofv3 writes JSON too, of its own shape.
  StatusOr<Trace> trace = LooksLikeRocprofJson(std::string_view(buf.data(), std::min<size_t>(buf.size(), 256)))
                              ? ImportRocprofJson(std::string_view(buf.data(), buf.size()), path)
                              : Import(buf, path, threads);
  if (trace.ok() && !ignored.empty()) trace->import_notes.push_back(std::move(ignored));
  return trace;
}

}  // namespace tierscope
