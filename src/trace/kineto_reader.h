// The Kineto importer's reader (internal to src/trace): parses runs of whole traceEvents
// entries with simdjson On-Demand into a Trace, one run at a time, from the whole file in
// memory (kineto_import.cc, on one or two cores) or from a window of a stream
// (kineto_stream.cc). Not a public interface.
#ifndef TIERSCOPE_TRACE_KINETO_READER_H_
#define TIERSCOPE_TRACE_KINETO_READER_H_

#include <simdjson.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/ascend_layout.h"
#include "trace/json_input.h"
#include "trace/kineto_scan.h"
#include "trace/trace.h"

namespace tierscope::kineto {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// A field of an event: absent, present but mistyped, or read.
enum class Got : uint8_t { kAbsent, kBad, kOk };

// What one traceEvents entry said.
struct RawEvent {
  std::string_view ph, cat, name, ts, dur;
  Got got_ph = Got::kAbsent, got_name = Got::kAbsent, got_ts = Got::kAbsent;
  Got got_dur = Got::kAbsent;
  bool has_cat = false, pid_ok = true, tid_ok = true, has_grid = false;
  bool pid_local = false, tid_local = false;  // reader-local string ids
  int32_t pid = 0, tid = 0;
  std::string_view pid_string;  // when the pid was a string
  // From args.
  std::string_view args;  // its members, without the braces
  std::string_view arg_name, arg_labels;
  int64_t external_id = 0, correlation = 0, addr = 0;
  int64_t connection_id = 0;  // torch_npu's correlation (Ascend)
  std::string_view flow_id;   // a flow's "id" (number text or string)
  int64_t kernel_correlation = -1;  // -1: absent
  double bytes = 0, total_allocated = 0, flops = 0, tasks = 0, busy_ns = 0;
};

// Reads a contiguous run of the event chunks. The primary reader builds the Trace; a
// secondary one gives string pids/tids reader-local ids and journals the first sight of
// each such string and each thread name, which Merge() replays into the primary in order.
class Reader {
 public:
  // `data` is writable: a run's neighbouring bytes are briefly turned into brackets.
  Reader(char* data, size_t size, size_t capacity, bool primary)
      : data_(data), size_(size), capacity_(capacity), primary_(primary) {}
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  // Parses with `parser` (the caller's, kept across readers: a stream's second reader
  // is made anew for each window, its parser's buffers are not).
  void ShareParser(od::parser* parser) { parser_ = parser; }

  // Reads chunks [first, last) of `chunks`. With `copy_first`, the first is parsed from a
  // copy, so its leading separator stays untouched for the previous reader. False on a
  // fatal error (error(), error_offset()). Returns early, true, once `stop` is set.
  // Room for events is reserved for `reserve_bytes` of input after the first chunk (the
  // primary reserves for the later readers' events too).
  bool Read(const std::vector<std::pair<size_t, size_t>>& chunks, size_t first, size_t last,
            bool copy_first, size_t reserve_bytes, const std::atomic<bool>& stop);
  void ReadField(const Layout::Field& field, std::string* trace_name);
  // On the primary, with the reader of the following chunks; `later`'s event store is left
  // empty but allocated, for another reader.
  void Merge(Reader& later);
  void Finish(const std::string& trace_name);
  // Finish()es and hands the Trace over, named for `source`, of `bytes` of input.
  Trace TakeTrace(const std::string& trace_name, const std::string& source, size_t bytes) {
    Finish(trace_name);
    Trace t = std::move(trace_);
    t.source = source;
    t.format = "kineto";
    t.stats.bytes = static_cast<int64_t>(bytes);
    return t;
  }

  // Streaming (kineto_stream.cc): the run [begin, end) of a window of the input (`data`,
  // `size` bytes followed by padding up to `capacity`), whose byte 0 is byte `offset` of
  // the input; data[begin - 1] is the '[' or ',' before the run. The first run sizes the
  // event store for `total_bytes` of input. With `copy`, the run is parsed from a copy (its
  // neighbouring bytes stay untouched for another reader). False on a fatal error, as Read.
  bool ReadWindowRun(char* data, size_t size, size_t capacity, size_t offset, size_t begin, size_t end,
                     size_t total_bytes, bool copy);
  // A top-level member's value, copied out of the stream (`value` is padded).
  void ReadFieldValue(std::string_view key, PaddedBuffer& value, std::string* trace_name);

  Trace& trace() { return trace_; }
  error_code error() const { return error_; }
  size_t error_offset() const { return input_offset_ + error_offset_; }
  void SetError(error_code e) { error_ = e; }

 private:
  enum class Journaled : uint8_t { kStringId, kThreadName, kProcessName };
  struct JournalEntry {
    Journaled what;
    bool local;  // `id` is reader-local
    int32_t id;  // the string's id, or the named thread or process
    std::string text;
  };
  struct Fixup {  // an event whose pid and/or tid is a reader-local id
    size_t event;
    bool pid, tid;
  };

  // Room for `n` events, the untouched part in huge pages (core/allocator.h).
  void ReserveEvents(size_t n);
  bool Fail(error_code e);  // records a fatal error at the parser's position
  // Hands the pages of the input before `offset`, never read again, back to the system,
  // so the input shrinks while the trace grows (peak memory ~1x the input, not ~2x).
  void ReleaseInput(size_t offset) {
#ifdef MADV_DONTNEED
    static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t base = reinterpret_cast<uintptr_t>(data_);
    const uintptr_t from = (base + released_ + page - 1) & ~(page - 1);
    const uintptr_t to = (base + offset) & ~(page - 1);
    if (to < from + (uintptr_t{1} << 20)) return;
    madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
    released_ = to - base;
#endif
  }
  // A category as last seen: its text (a view of the interned string), id, kind and count.
  struct SeenCategory {
    std::string_view text;
    int32_t id = -1;
    EventKind kind = EventKind::kOther;
    int64_t* count = nullptr;  // in categories_ (node-based: stays put)
  };
  // The category `cat`, interned and counted in categories_ the first time, then found
  // among the last few seen without hashing (a trace has a handful, interleaved).
  const SeenCategory& Category(std::string_view cat);

  bool ReadChunk(size_t begin, size_t end, bool copy);
  bool ReadEvent(od::value v);
  bool ReadArgs(od::value& v, RawEvent& ev);
  bool ReadId(od::value& v, int32_t* id, bool* local, std::string_view* as_string);
  int32_t IdForString(std::string_view s, bool* local);
  void AddFlowEnd(const RawEvent& ev, bool start);  // an async_npu flow's end, when usable
  bool Malformed(const char* reason) {  // counts it; true: go on
    ++trace_.stats.malformed;
    ++trace_.stats.malformed_reasons[reason];
    return true;
  }
  void AddThreadName(int32_t tid, bool local, std::string_view name) {
    if (!primary_) {
      journal_.push_back({Journaled::kThreadName, local, tid, std::string(name)});
      return;
    }
    auto key = std::make_pair(tid, std::string(name));
    if (named_threads_.insert(key).second) trace_.thread_names.push_back(std::move(key));
  }
  void AddProcessName(int32_t pid, bool local, std::string_view name) {
    if (!primary_) {
      journal_.push_back({Journaled::kProcessName, local, pid, std::string(name)});
      return;
    }
    auto key = std::make_pair(pid, std::string(name));
    if (named_processes_.insert(key).second) trace_.process_names.push_back(std::move(key));
  }

  std::string compact_;  // the args of the event being added, compacted
  char* data_;
  size_t size_, capacity_;
  bool primary_;
  od::parser own_parser_;
  od::parser* parser_ = &own_parser_;  // own_parser_, or one shared (ShareParser)
  od::document doc_;
  PaddedBuffer copy_;  // the first chunk, when it is copied
  const char* base_ = nullptr;  // the current chunk's '[' and its offset in the input
  const char* chunk_end_ = nullptr;
  size_t base_offset_ = 0;
  error_code error_ = simdjson::SUCCESS;
  size_t error_offset_ = 0, released_ = 0;
  size_t input_offset_ = 0;  // the input byte of data_[0] (streaming: the window's)
  bool sized_ = false;       // the event store was reserved

  Trace trace_;
  std::unordered_map<int32_t, std::pair<EventKind, int64_t>> categories_;  // kind, count
  std::array<SeenCategory, 4> seen_categories_;
  size_t next_seen_category_ = 0;
  int64_t no_category_ = 0;
  std::map<std::string, std::pair<int32_t, bool>, std::less<>> string_ids_;  // id, local
  int32_t next_string_id_ = -2;
  std::set<std::pair<int32_t, std::string>> named_threads_, named_processes_;
  std::vector<ascend::FlowEnd> flows_;  // torch_npu's op-to-task flows (async_npu)
  std::vector<JournalEntry> journal_;
  std::vector<Fixup> fixups_;
  int64_t hip_ = 0, musa_ = 0, cuda_ = 0;  // runtime call names by prefix
  // B/E ranges (not read: Kineto writes X events): those still open at the end.
  int64_t range_begins_ = 0, range_ends_ = 0;
  bool host_pid_set_ = false, host_pid_local_ = false, saw_op_ = false, first_op_local_ = false;
  int32_t host_pid_ = 0, first_op_pid_ = 0, memory_name_ = -1;
};

}  // namespace tierscope::kineto

#endif  // TIERSCOPE_TRACE_KINETO_READER_H_
