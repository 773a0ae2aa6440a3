// The in-memory Trace: what tierscope's profiler records and what importers of other
// tools' traces produce. Events are plain structs with interned names, so a trace of
// millions of events stays small and fast to scan.
#ifndef TIERSCOPE_TRACE_TRACE_H_
#define TIERSCOPE_TRACE_TRACE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tierscope {

class SpillFile;  // core/spill_file.h

// The event kinds a Kineto trace has, plus per-worker task spans of a CPU kernel.
enum class EventKind : uint8_t {
  kOp,             // cpu_op: an operator on the host (aten::linear)
  kAnnotation,     // user_annotation: a record_function scope (serial_bert_forward)
  kRuntime,        // a runtime or driver API call (cudaLaunchKernel, hipMemcpyAsync,
                   // musaLaunchKernel); a launch when a device event shares its correlation
  kKernel,         // kernel: device-side execution, from first task start to last task end
  kTask,           // one worker's share of a CPU kernel: first task start to last task end
  kMemcpy,         // gpu_memcpy
  kMemset,         // gpu_memset
  kSync,           // cuda_sync: stream / event / device synchronisation
  kMemory,         // cpu_instant_event [memory]: an allocation (+bytes) or free (-bytes)
  kGpuAnnotation,  // gpu_user_annotation: a scope on a device stream
  kOther,          // anything else with a duration (python_function, overhead, ...)
};

const char* EventKindName(EventKind k);

// Interns strings; ids are dense and stable, views stay valid for the table's life
// (moves included). The bytes live in a few large arena blocks and the index is a flat
// open-addressing table, so interning millions of names costs no allocation per string.
class StringTable {
 public:
  StringTable() = default;
  StringTable(StringTable&& other) noexcept { *this = std::move(other); }
  StringTable& operator=(StringTable&& other) noexcept;
  StringTable(const StringTable& other) { *this = other; }
  StringTable& operator=(const StringTable& other);

  int32_t Intern(std::string_view s);
  // Stores `s` without looking for an equal string first: for strings that are nearly
  // always unique (a kernel's args carry its correlation), where hashing buys nothing.
  int32_t Append(std::string_view s);
  // Takes over every string of `other` without copying its bytes: its id i becomes
  // the returned offset + i here. They are not indexed (Intern will not find them), so
  // this is for strings that were Append-ed; intern the others again.
  int32_t Adopt(StringTable&& other);
  std::string_view Get(int32_t id) const { return views_[static_cast<size_t>(id)]; }
  size_t size() const { return views_.size(); }

  // Appended strings (a trace's args) go to blocks of `file` (core/spill_file.h) from now
  // on: gathered in a block of memory, which is written to the file when full (the
  // strings then read from the file's mapping, paged in on use). Interned strings (names,
  // read by every report) stay in memory. Once the file cannot grow (its error() says
  // why), strings go to memory. A copy of the table holds every string in memory.
  // While a table spills, a view of an appended string is valid until the next Append or
  // Adopt (Get it again after); once FinishSpilling has put it in place, for the table's
  // life.
  void SpillTo(std::shared_ptr<SpillFile> file);
  // The block being gathered goes to the file and the memory it was gathered in is freed
  // (at the end of an import; a later append gathers a new block).
  void FinishSpilling();
  // The spilled blocks' pages leave resident memory now (after a pass that read them; the
  // strings stay as they are).
  void ReleaseSpilled() const;
  int64_t spilled_bytes() const;  // the bytes of spill files this table's strings are in

 private:
  // `spill`: into a spill block when there is a spill file.
  std::string_view Store(std::string_view s, bool spill);
  std::string_view StoreIn(char** free, size_t* free_size, std::string_view s);  // the block has room
  int32_t Add(std::string_view s, bool spill);
  void Rehash(size_t capacity);

  std::vector<std::unique_ptr<char[]>> blocks_;
  char* free_ = nullptr;  // the unused end of the last block
  size_t free_size_ = 0;
  // The spill block being filled is gathered in a stage (memory), then written to the file
  // and its strings' views moved to the block. Two stages take turns, so a view taken
  // just before a block is written still reads right while the next is gathered.
  void FlushSpill();
  std::shared_ptr<SpillFile> spill_to_;             // where appended strings go, or none
  char* spill_block_ = nullptr;                      // the spill block being gathered
  std::unique_ptr<char[]> spill_stages_[2];
  int stage_ = 0;                                    // the stage in use
  char* spill_free_ = nullptr;                       // the stage's unused end
  size_t spill_free_size_ = 0;
  size_t spill_first_id_ = 0;                        // ids from here may be in the stage
  std::vector<std::shared_ptr<SpillFile>> spills_;  // files some strings are in
  std::vector<std::string_view> views_;
  // Slots: (hash >> 32) << 32 | (id + 1); 0 is empty. Power-of-two size.
  std::vector<uint64_t> slots_;
  size_t indexed_ = 0;
};

struct Event {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = 0;  // joins a launch to its kernel (and task spans)
  int64_t external_id = 0;  // joins an operator to the launches it made
  // Kind-specific values. kKernel: FLOPs and bytes moved (cost model); kTask: tasks
  // run and busy ns; kMemory: bytes (negative for a free) and total allocated after.
  double v0 = 0, v1 = 0;
  int32_t name = -1;
  int32_t args = -1;  // interned JSON members for "args" (no braces), or -1
  int32_t cat = -1;   // the category as written in an imported file, or -1
  int32_t pid = 0, tid = 0;
  EventKind kind = EventKind::kOp;
  // Which keys `args` has, where the importer noted them (kArgKeysKnown): a report then
  // need not search the text (a big trace's args are spilled to disk). Whoever replaces
  // `args` clears it.
  uint8_t arg_keys = 0;
};
inline constexpr uint8_t kArgKeysKnown = 1, kArgHasGrid = 2;

// The times an importer keeps, in ns: starts in [-2^61, 2^62), lengths in [0, 2^61)
// (73 years). Every end, and every difference of two starts or ends, then fits in an
// int64; an event outside is counted as malformed ("time out of range").
inline constexpr int64_t kMinTraceNs = -(int64_t{1} << 61);
inline constexpr int64_t kMaxTraceNs = int64_t{1} << 62;
inline constexpr int64_t kMaxTraceDurNs = int64_t{1} << 61;
inline bool TimeInRange(int64_t ts_ns, int64_t dur_ns) {
  return ts_ns >= kMinTraceNs && ts_ns < kMaxTraceNs && dur_ns >= 0 && dur_ns < kMaxTraceDurNs;
}

// What an importer saw: never fatal per event; malformed ones are counted here.
struct ImportStats {
  int64_t bytes = 0;             // uncompressed input size
  int64_t events_read = 0;       // entries in traceEvents / rows read
  int64_t events_kept = 0;       // became Trace events
  int64_t metadata = 0;          // ph M, flows and other non-timeline entries
  int64_t malformed = 0;         // skipped: missing or mistyped fields
  int64_t invalid_utf8 = 0;      // ill-formed UTF-8 sequences read as U+FFFD
  int64_t range_begins = 0;      // ranges begun (ph B; not read: Kineto writes X events)
  int64_t open_ranges = 0;       // of them, beyond those ended (ph E)
  std::map<std::string, int64_t> malformed_reasons;  // reason -> count
  std::map<std::string, int64_t> by_category;        // category as written -> count
  // A vendor's layout read into the common kinds (what became what, what was left out as
  // a duplicate of other events): description -> count.
  std::map<std::string, int64_t> layout;
};

struct Trace {
  std::string source;          // file it came from, or "tierscope engine"
  std::string format;          // "kineto", "nsys-sqlite", "tierscope"
  std::string runtime;         // "cuda", "hip", "musa", "cpu" (launch API family)
  ImportStats stats;
  StringTable strings;
  std::vector<Event> events;
  // Metadata.
  int64_t base_time_ns = 0;   // wall-clock ns of ts 0 (Kineto's baseTimeNanoseconds)
  int32_t host_pid = 0;
  std::string device_name;     // "cpu: AMD EPYC (2 threads)"
  int32_t device_units = 0;    // workers / SMs
  int64_t device_memory = 0;
  // The process group (Kineto's distributedInfo): this trace's rank, the job's size and
  // the collective backend; -1 / 0 / "" when the trace does not say.
  int32_t rank = -1;
  int32_t world_size = 0;
  std::string collective_backend;  // "nccl", "gloo", "rccl", ...
  std::vector<std::pair<int32_t, std::string>> thread_names;  // tid -> name (device pid)
  std::vector<std::pair<int32_t, std::string>> process_names;  // pid -> name
  // A PyTorch execution trace joined to the operators (execution_trace.h); empty source:
  // none.
  struct ExecutionTraceJoin {
    std::string source;
    int64_t nodes = 0;         // operator nodes in it
    int64_t ops = 0;           // the trace's operators and annotations it could join
    int64_t joined = 0;        // of them, joined to a node by record id
    int64_t shapes_added = 0;  // of those, given input shapes and types the trace lacked
    std::string note;          // why none joined, when some were tried
  } execution_trace;
  // What an importer could not join or read beside the trace (one line each).
  std::vector<std::string> import_notes;

  Event& Add(EventKind kind, std::string_view name, int64_t ts_ns, int64_t dur_ns) {
    Event e;
    e.kind = kind;
    e.name = strings.Intern(name);
    e.ts_ns = ts_ns;
    e.dur_ns = dur_ns;
    events.push_back(e);
    return events.back();
  }
};

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_TRACE_H_
