// Kineto traces of any size in bounded memory: the (gunzipped) input passes through a
// window, a byte-level splitter cuts traceEvents into runs of whole events as they arrive,
// and the same reader as the whole-file path (kineto_reader.h) parses each run, so the
// Trace is the same; only the window and the event store are in memory. The importer
// streams a file when reading it whole would pass 4 GiB (simdjson's document limit, which
// the whole-file path keeps) or the memory budget.
#ifndef TIERSCOPE_TRACE_KINETO_STREAM_H_
#define TIERSCOPE_TRACE_KINETO_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

constexpr size_t kStreamWindowBytes = size_t{64} << 20;

// How the input reaches the readers. kAuto: a plain file is mapped and read in place, a
// window's bytes at a time (no copy into a window); gzip, and a file the system will not
// map, are read through the window. kMapped: mapped or an error (tests); kRead: read.
enum class StreamInput { kAuto, kMapped, kRead };

// Streams `path` (plain or gzip) through a window of `window_bytes` (grown only for a
// single event or top-level member larger than it, up to 1 GiB). Errors as
// ImportKinetoTrace's: DataLoss naming the byte offset of invalid JSON or of a truncated
// input, InvalidArgument for JSON that is not a trace.
// `threads`: readers (0: as many as this process may run on, at most two). A file mapped
// must not shrink while it is read (as for the whole-file path's mapping).
StatusOr<Trace> ImportKinetoStream(const std::string& path, size_t window_bytes = kStreamWindowBytes,
                                   int threads = 0, StreamInput input = StreamInput::kAuto);

// The window the importer streams through: kStreamWindowBytes, or TIERSCOPE_STREAM_WINDOW
// bytes (tests cut traces at many places with small windows).
size_t StreamWindowBytes();

// The memory a trace import may use, in bytes: set by --memory-budget; by default half of
// what is available now (MemAvailable). Read by the importer's choice of path and by the
// job's plan of how many ranks to read at once.
void SetMemoryBudget(int64_t bytes);  // <= 0: the default
int64_t MemoryBudget();

// Whether `path` is streamed rather than read whole: its JSON passes 4 GiB (or, gzip, may:
// past 512 MiB compressed, or its first MiB promises more than its trailer), or the whole-file path
// (input plus trace, about 1.5x the JSON) would pass the budget. TIERSCOPE_STREAM=always|never
// overrides (tests force each path).
bool ShouldStream(const std::string& path);

// What a streamed trace keeps resident per byte of its JSON (its events, names, index and
// reports, and its args unless they are spilled; bench/job/big_job_bench.sh: 5 GB and
// 1 GB ranks of a DDP trace), and that in bytes with the window (which fills no further
// than the JSON).
inline constexpr double kStreamedTraceBytesPerJsonByte = 0.95;
inline constexpr double kSpilledTraceBytesPerJsonByte = 0.62;
int64_t StreamedTraceBytes(int64_t json_bytes, bool spilled);
// Whether a streamed trace spills its args (most of its bytes, read by few reports) to a
// file in SpillDirectory() (core/spill_file.h): yes where SpillFile::WhyNotSpillIn has
// nothing against it (a disk's ext4 or xfs: not tmpfs, where it would save nothing, nor a
// file system where a full disk could end the process). On a 5 GB rank it takes a third
// off the peak and was no slower (bench/job/big_job_bench.sh); it writes the args to disk
// (about a third of the JSON), in a file with no name, gone with the process.
// TIERSCOPE_SPILL=always|never overrides (tests force each). When the args stay in memory
// and that passes the budget, or the file fills, the trace's import notes say why.
bool SpillsStrings();

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_KINETO_STREAM_H_
