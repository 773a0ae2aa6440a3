// The streaming Kineto importer (kineto_stream.h): a window over JsonStream, a resumable
// byte-level splitter, and kineto::Reader for the runs.
#include "trace/kineto_stream.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "core/cpu_info.h"
#include "core/exceptions.h"
#include "core/spill_file.h"
#include "core/thread_pool.h"
#include "trace/json_input.h"
#include "trace/kineto_reader.h"
#include "trace/kineto_scan.h"
#include "trace/rocprof_import.h"

namespace tierscope {
namespace {

std::atomic<int64_t> g_budget{0};

constexpr size_t kMaxWindowBytes = size_t{1} << 30;

// The top-level members the reader reads (the others are skipped, never copied).
bool ReadsMember(std::string_view key) {
  return key == "deviceProperties" || key == "baseTimeNanoseconds" || key == "traceName" ||
         key == "distributedInfo";
}

// Cuts the input into traceEvents runs and the top-level members worth reading, across
// windows: its state survives the end of one window and resumes in the next. Positions
// are in window coordinates; Shift() moves them when the window drops its first bytes.
class Splitter {
 public:
  struct Sink {
    virtual ~Sink() = default;
    virtual bool Run(size_t begin, size_t end) = 0;  // [begin, end) of whole events
    virtual void Member(const std::string& key, size_t begin, size_t end) = 0;
  };
  explicit Splitter(size_t run_bytes) : run_bytes_(run_bytes) {}

  // Scans [pos, size) of `p`; false on an error (error(), error_at() in window terms) or
  // when the sink refused a run.
  bool Feed(const char* p, size_t size, Sink& sink);
  // The first byte still needed: the separator before the pending run, or the start of a
  // key or member being read.
  size_t Keep(size_t size) const {
    size_t keep = size;
    if (events_depth_ > 0) keep = std::min(keep, run_begin_ - 1);
    if (key_open_) keep = std::min(keep, key_begin_);
    if (capture_) keep = std::min(keep, value_begin_);
    return keep;
  }
  void Shift(size_t by) {
    pos_ -= by;
    run_begin_ -= std::min(run_begin_, by);
    key_begin_ -= std::min(key_begin_, by);
    value_begin_ -= std::min(value_begin_, by);
  }
  // At the end of the input: whether the top-level value closed.
  bool Finished() const { return top_ == Top::kDone && !in_string_; }
  bool saw_events() const { return saw_events_; }
  bool events_not_array() const { return events_not_array_; }
  const char* error() const { return error_; }
  size_t error_at() const { return error_at_; }
  const char* unfinished() const {
    if (in_string_) return "unclosed string";
    if (top_ == Top::kStart) return "no JSON value (empty input)";
    return "unclosed array or object";
  }

 private:
  enum class Top { kStart, kObject, kArray, kDone };
  enum class Expect { kKey, kColon, kValue, kInValue };
  bool Fail(size_t at, const char* what) {
    error_at_ = at;
    error_ = what;
    return false;
  }
  bool Member(const char* p, size_t k, Sink& sink);  // at the ',' or '}' that ends one
#ifdef __AVX2__
  // In traceEvents, from byte k, the 64-byte blocks that only move the depth go by fast
  // (as in the whole-file scanner): across the events of a run until a cut may be due (no
  // comma before run_begin_ + run_bytes_ cuts), then inside an event only. Returns the
  // first byte of the block that stops it (the array's ']', an event's end once a cut is
  // due, a backslash), which the slow way must see.
  size_t SkipBlocks(const char* p, size_t k, size_t size);
#endif

  size_t run_bytes_;
  size_t pos_ = 0;
  Top top_ = Top::kStart;
  Expect expect_ = Expect::kKey;
  int64_t depth_ = 0, events_depth_ = 0;
  bool in_string_ = false, escape_ = false, key_open_ = false, capture_ = false;
  bool value_closed_ = false, members_ = false, saw_events_ = false, events_not_array_ = false;
  size_t key_begin_ = 0, value_begin_ = 0, run_begin_ = 0;
  std::string key_;
  const char* error_ = "";
  size_t error_at_ = 0;
};

bool Splitter::Member(const char* p, size_t k, Sink& sink) {
  if (capture_) {
    size_t end = k;
    while (end > value_begin_ && kineto::IsSpace(p[end - 1])) --end;
    sink.Member(key_, value_begin_, end);
    capture_ = false;
  }
  members_ = true;
  return true;
}

#ifdef __AVX2__
size_t Splitter::SkipBlocks(const char* p, size_t k, size_t size) {
  size_t f = k;
  bool s = in_string_;
  const size_t due = run_begin_ + run_bytes_;
  for (; f + 64 <= size; f += 64) {
    const int64_t base = f + 64 <= due ? events_depth_ - 1 : events_depth_;
    if (depth_ <= base) break;
    uint64_t d = static_cast<uint64_t>(depth_ - base);
    if (!kineto::FastBlock(p + f, &d, &s)) break;
    depth_ = base + static_cast<int64_t>(d);
    in_string_ = s;
  }
  return f;
}
#endif

bool Splitter::Feed(const char* p, size_t size, Sink& sink) {
  size_t scalar_until = 0;
  for (size_t k = pos_; k < size; ++k) {
#ifdef __AVX2__
    if (k >= scalar_until && events_depth_ > 0 && depth_ >= events_depth_ && !escape_) {
      k = SkipBlocks(p, k, size);
      scalar_until = k + 64;  // the block that stopped it goes the slow way
      if (k >= size) break;
    }
#endif
    const char c = p[k];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
        if (key_open_) {
          key_.assign(p + key_begin_ + 1, k - key_begin_ - 1);
          key_open_ = false;
          expect_ = Expect::kColon;
        } else if (depth_ == 1 && top_ == Top::kObject) {
          value_closed_ = true;  // a string member closed
        }
      }
      continue;
    }
    if (kineto::IsSpace(c)) {
      // Whitespace ends a top-level member's scalar: another value after it is an error.
      if (depth_ == 1 && top_ == Top::kObject && expect_ == Expect::kInValue) value_closed_ = true;
      continue;
    }
    if (top_ == Top::kStart) {
      if (c == '{') {
        top_ = Top::kObject;
        expect_ = Expect::kKey;
      } else if (c == '[') {  // the legacy bare list of events
        top_ = Top::kArray;
        events_depth_ = 1;
        saw_events_ = true;
        run_begin_ = k + 1;
      } else {
        return Fail(k, "expected '{' or '[' (this is not a JSON trace)");
      }
      depth_ = 1;
      continue;
    }
    if (top_ == Top::kDone) return Fail(k, "unexpected content after the top-level value");
    if (depth_ == 1 && top_ == Top::kObject) {  // between the top-level members
      switch (expect_) {
        case Expect::kKey:
          if (c == '}' && !members_) {
            top_ = Top::kDone;
            depth_ = 0;
          } else if (c == '"') {
            in_string_ = key_open_ = true;
            key_begin_ = k;
          } else {
            return Fail(k, "expected a member name");
          }
          continue;
        case Expect::kColon:
          if (c != ':') return Fail(k, "expected ':'");
          expect_ = Expect::kValue;
          continue;
        case Expect::kValue:
          if (c == ']' || c == '}' || c == ',' || c == ':') return Fail(k, "expected a value");
          value_begin_ = k;
          value_closed_ = false;
          expect_ = Expect::kInValue;
          capture_ = ReadsMember(key_);
          if (key_ == "traceEvents") {
            capture_ = false;
            if (c != '[') {
              events_not_array_ = true;
              return Fail(k, "\"traceEvents\" is not an array");
            }
            saw_events_ = true;
            events_depth_ = 2;
            run_begin_ = k + 1;
          }
          if (c == '"') in_string_ = true;
          if (c == '{' || c == '[') ++depth_;
          continue;
        case Expect::kInValue:
          if (c == ',' || c == '}') {
            Member(p, k, sink);
            if (c == '}') {
              top_ = Top::kDone;
              depth_ = 0;
            } else {
              expect_ = Expect::kKey;
            }
          } else if (value_closed_ || c == '"' || c == '{' || c == '[' || c == ']' || c == ':') {
            return Fail(k, "expected ',' or '}'");
          }
          continue;
      }
    }
    switch (c) {
      case '"':
        in_string_ = true;
        break;
      case '{':
      case '[':
        // An event begins: its body goes the fast way from the next byte.
        if (++depth_ == events_depth_ + 1) scalar_until = k + 1;
        break;
      case '}':
      case ']':
        if (depth_ == events_depth_) {  // the end of traceEvents
          if (c != ']') return Fail(k, "expected ',' or ']'");
          size_t b = run_begin_;
          while (b < k && kineto::IsSpace(p[b])) ++b;
          if (b < k && !sink.Run(run_begin_, k)) return false;
          events_depth_ = 0;
        }
        if (--depth_ == 0) {
          top_ = Top::kDone;
        } else if (depth_ == 1 && top_ == Top::kObject) {
          value_closed_ = true;
        }
        break;
      case ',':
        if (depth_ == events_depth_ && k - run_begin_ >= run_bytes_) {
          if (!sink.Run(run_begin_, k)) return false;
          run_begin_ = k + 1;
        }
        break;
      default:
        break;
    }
  }
  pos_ = size;
  return true;
}

// The window and the readers, as the splitter's sink: a window's runs are queued, then
// parsed when the window is full, split by bytes between the primary reader and, on
// another core, a secondary one merged into it (as the whole-file path does once).
class StreamReader : public Splitter::Sink {
 public:
  StreamReader(PaddedBuffer& window, int64_t total, bool two) : window_(window), total_(total), two_(two) {}
  bool Run(size_t begin, size_t end) override {
    runs_.emplace_back(begin, end);
    return true;
  }
  void Member(const std::string& key, size_t begin, size_t end) override {
    if (!ParseRuns()) return;  // members in file order with the events around them
    PaddedBuffer value;
    if (!value.Reserve(end - begin)) return;  // an unreadable member is ignored, as in the whole-file path
    std::memcpy(value.data(), window_.data() + begin, end - begin);
    value.Grow(end - begin);
    value.Finish();
    primary_.ReadFieldValue(key, value, &trace_name_);
  }
  // Parses the queued runs; false on a fatal error (error, error_at; or thrown).
  bool ParseRuns();
  // The readers' strings go to `file` from now on.
  void SpillTo(std::shared_ptr<SpillFile> file) {
    spill_ = std::move(file);
    primary_.trace().strings.SpillTo(spill_);
  }
  // The second reader's parser and event store go (the trace is read).
  void FinishReading() {
    second_parser_ = simdjson::ondemand::parser();
    std::vector<Event>().swap(second_events_);
  }
  kineto::Reader& reader() { return primary_; }
  const std::string& trace_name() const { return trace_name_; }
  size_t offset_ = 0;  // the input byte of the window's first
  Status thrown;       // an exception a reader threw, as a Status
  simdjson::error_code error = simdjson::SUCCESS;
  size_t error_at = 0;  // in the input

 private:
  // `total`: the input bytes the reader's event store is sized for.
  bool ReadRuns(kineto::Reader& r, size_t first, size_t last, bool copy_first, size_t total) {
    for (size_t i = first; i < last; ++i) {
      const auto [b, e] = runs_[i];
      if (!r.ReadWindowRun(window_.data(), window_.size(), window_.capacity(), offset_, b, e, total,
                           copy_first && i == first)) {
        return false;
      }
    }
    return true;
  }

  size_t Total() const { return total_ > 0 ? static_cast<size_t>(total_) : 0; }

  PaddedBuffer& window_;
  int64_t total_;
  bool two_;
  std::vector<std::pair<size_t, size_t>> runs_;
  kineto::Reader primary_{nullptr, 0, 0, /*primary=*/true};
  simdjson::ondemand::parser second_parser_;  // the second reader's, kept across windows
  std::vector<Event> second_events_;          // its event store, emptied between windows
  std::string trace_name_;
  std::shared_ptr<SpillFile> spill_;
};

bool StreamReader::ParseRuns() {
  if (error != simdjson::SUCCESS || !thrown.ok()) return false;
  const size_t n = runs_.size();
  size_t bytes = 0;
  for (const auto& [b, e] : runs_) bytes += e - b;
  const auto failed = [&](const kineto::Reader& r) {
    error = r.error();
    error_at = r.error_offset();
  };
  if (!two_ || n < 4) {
    bool ok = true;
    thrown = CatchAll("", [&]() -> Status {
      ok = ReadRuns(primary_, 0, n, false, Total());
      return OkStatus();
    });
    if (!ok) failed(primary_);
  } else {
    size_t split = 0, half = 0;
    while (split + 1 < n && half < bytes / 2) {
      half += runs_[split].second - runs_[split].first;
      ++split;
    }
    // A new reader a window, with the last one's parser and (emptied) event store.
    kineto::Reader second(nullptr, 0, 0, /*primary=*/false);
    second.ShareParser(&second_parser_);
    second.trace().events = std::move(second_events_);
    if (spill_ != nullptr) second.trace().strings.SpillTo(spill_);
    bool ok = true, ok2 = true;
    Status failed1, failed2;
    {
      // No exception leaves either reader (the worker's would end the process).
      std::jthread worker([&] {
        try {
          ok2 = ReadRuns(second, split, n, /*copy_first=*/true, bytes - half);
        } catch (...) {
          failed2 = StatusFromCurrentException("");
          ok2 = false;
        }
      });
      try {
        ok = ReadRuns(primary_, 0, split, false, Total());
      } catch (...) {
        failed1 = StatusFromCurrentException("");
        ok = false;
      }
    }
    thrown = !failed1.ok() ? failed1 : failed2;
    if (!ok) failed(primary_);  // the first error in file order
    else if (!ok2) failed(second);
    else primary_.Merge(second);
    second_events_ = std::move(second.trace().events);
    second_events_.clear();
  }
  runs_.clear();
  return error == simdjson::SUCCESS && thrown.ok();
}

// A choice forced by environment variable `var`: true for "always", false for "never",
// none otherwise (tests force each path).
std::optional<bool> Forced(const char* var) {
  const char* v = std::getenv(var);
  if (v == nullptr) return std::nullopt;
  if (std::strcmp(v, "always") == 0) return true;
  if (std::strcmp(v, "never") == 0) return false;
  return std::nullopt;
}

Status JsonErrorAt(const std::string& path, size_t offset, bool at_end, std::string_view what) {
  std::string msg = path + ": invalid JSON at byte " + std::to_string(offset);
  if (at_end) msg += " (the end of the input: truncated?)";
  return DataLoss(msg + ": " + std::string(what));
}

// Maps the input into `window` when it is a plain file the system lets us map.
bool MapPlainFile(const JsonStream& in, PaddedBuffer& window) {
  struct stat st;
  return !in.gzip() && in.fd() >= 0 && ::fstat(in.fd(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
         window.Map(in.fd(), static_cast<size_t>(st.st_size));
}

// After the splitter and the readers went over more input: the error that stops the
// import, if any.
Status StepStatus(const std::string& path, const Splitter& splitter, const StreamReader& sink, bool fed,
                  bool parsed) {
  if (!sink.thrown.ok()) return Status(sink.thrown.code(), path + sink.thrown.message());
  if (sink.error == simdjson::MEMALLOC) return ResourceExhausted(path + ": out of memory");
  if (sink.error != simdjson::SUCCESS) {
    return JsonErrorAt(path, sink.error_at, false, simdjson::error_message(sink.error));
  }
  if (!fed || !parsed) {
    if (splitter.events_not_array()) return InvalidArgument(path + ": \"traceEvents\" is not an array");
    return JsonErrorAt(path, sink.offset_ + splitter.error_at(), false, splitter.error());
  }
  return OkStatus();
}

Status EventTooLarge(const std::string& path, size_t near, size_t bytes) {
  return ResourceExhausted(path + ": an event or top-level member near byte " + std::to_string(near) + " is over " +
                           std::to_string(bytes) + " bytes");
}

// A plain file mapped whole: the splitter and readers go over it a window's bytes at a
// time, in place (no copy into a window), and the pages behind the pending run are given
// back as they go. A file cut shorter meanwhile (a profiler rewriting it) is an error
// before its next window is touched. Returns the input's size.
StatusOr<size_t> FeedMapped(const std::string& path, int fd, PaddedBuffer& file, size_t window_bytes,
                            Splitter& splitter, StreamReader& sink) {
  const size_t n = file.size();
  for (size_t upto = 0; upto < n;) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < n) {
      return DataLoss(path + ": the file was cut to " + std::to_string(st.st_size) + " bytes from " +
                      std::to_string(n) + " while it was read");
    }
    upto = std::min(n, upto + window_bytes);
    const bool fed = splitter.Feed(file.data(), upto, sink);
    const bool parsed = sink.ParseRuns();
    TS_RETURN_IF_ERROR(StepStatus(path, splitter, sink, fed, parsed));
    const size_t keep = splitter.Keep(upto);
    if (upto - keep >= kMaxWindowBytes) return EventTooLarge(path, keep, kMaxWindowBytes);
    file.DropPagesBefore(keep);
  }
  return n;
}

// Any other input (gzip, a pipe, a file the system would not map) read into a window that
// keeps the bytes still needed and grows only for an event larger than it.
StatusOr<size_t> FeedRead(const std::string& path, JsonStream& in, PaddedBuffer& window, Splitter& splitter,
                          StreamReader& sink) {
  size_t total = 0;
  for (;;) {
    if (window.room() == 0) {  // one event or member fills the window: grow it
      const size_t want = std::min(window.size() * 2, kMaxWindowBytes);
      if (window.size() >= kMaxWindowBytes || !window.Reserve(want)) {
        return EventTooLarge(path, sink.offset_, window.size());
      }
    }
    TS_ASSIGN_OR_RETURN(const size_t got, in.Read(window.data() + window.size(), window.room()));
    window.Grow(got);
    window.Finish();
    total += got;
    const bool fed = splitter.Feed(window.data(), window.size(), sink);
    const bool parsed = sink.ParseRuns();
    TS_RETURN_IF_ERROR(StepStatus(path, splitter, sink, fed, parsed));
    if (got == 0) break;
    const size_t keep = splitter.Keep(window.size());
    if (keep > 0) {
      std::memmove(window.data(), window.data() + keep, window.size() - keep);
      window.Truncate(window.size() - keep);
      splitter.Shift(keep);
      sink.offset_ += keep;
    }
  }
  return total;
}

StatusOr<Trace> Stream(const std::string& path, size_t window_bytes, int threads, StreamInput input) {
  TS_ASSIGN_OR_RETURN(std::unique_ptr<JsonStream> in, JsonStream::Open(path));
  PaddedBuffer window;
  window_bytes = std::clamp<size_t>(window_bytes, 64, kMaxWindowBytes);
  const bool mapped = input != StreamInput::kRead && MapPlainFile(*in, window);
  if (input == StreamInput::kMapped && !mapped) {
    return FailedPrecondition(path + ": cannot be mapped (gzip, not a plain file, empty, or refused by the system)");
  }
  if (!mapped && !window.Reserve(window_bytes)) {
    return ResourceExhausted(path + ": out of memory for the stream's window");
  }
  const int64_t input_bytes = EstimatedInputBytes(path);
  StreamReader sink(window, input_bytes, threads >= 2);
  // The args go to a spill file where that is safe and saves memory; when they stay in
  // memory past the budget, or the file fills, the trace says so.
  std::string spill_note;
  std::shared_ptr<SpillFile> spill;
  const int64_t budget = MemoryBudget();  // once: the default (half of what is available) falls as this reads
  const bool over_budget = budget > 0 && StreamedTraceBytes(input_bytes, false) > budget;
  const std::string dir = SpillDirectory();
  if (SpillsStrings()) {
    StatusOr<std::shared_ptr<SpillFile>> file = SpillFile::Create(dir);
    if (file.ok()) {
      spill = *file;
      sink.SpillTo(spill);
    } else if (over_budget) {
      spill_note = "its args kept in memory past the memory budget: " + file.status().message();
    }
  } else if (over_budget) {
    spill_note = "its args kept in memory past the memory budget: " +
                 (Forced("TIERSCOPE_SPILL") == false
                      ? std::string("TIERSCOPE_SPILL=never")
                      : "the spill directory " + dir + " " + SpillFile::WhyNotSpillIn(dir) +
                            "; --spill-dir DIR on ext4 or xfs spills them");
  }
  // Runs of a sixteenth of the window (1 MiB at most, as the whole-file path's), so a window
  // holds enough for two readers; never under 256 bytes, past simdjson's reads beyond a run.
  Splitter splitter(std::clamp<size_t>(window_bytes / 16, 256, kineto::kChunkBytes));
  TS_ASSIGN_OR_RETURN(const size_t total, mapped ? FeedMapped(path, in->fd(), window, window_bytes, splitter, sink)
                                                 : FeedRead(path, *in, window, splitter, sink));
  if (!splitter.Finished()) return JsonErrorAt(path, total, true, splitter.unfinished());
  if (!splitter.saw_events()) return InvalidArgument(path + ": not a Kineto trace: no \"traceEvents\" array");
  sink.FinishReading();
  Trace trace = sink.reader().TakeTrace(sink.trace_name(), path, total);
  trace.strings.FinishSpilling();
  trace.strings.ReleaseSpilled();
  if (spill != nullptr && !spill->error().empty()) spill_note = "some of its args kept in memory: " + spill->error();
  // A budget that not even a streamed read fits (--memory-budget 1) is not met silently.
  const bool spilled = spill != nullptr && spill->error().empty();
  const int64_t need = StreamedTraceBytes(input_bytes, spilled);
  if (spill_note.empty() && budget > 0 && need > budget) {
    spill_note = "read past the memory budget of " + FormatBytes(static_cast<double>(budget)) +
                 " (--memory-budget; by default half of what is available): streamed, the least any read of it "
                 "takes, it needs about " +
                 FormatBytes(static_cast<double>(need)) + (spilled ? " with its args spilled to disk" : "");
  }
  if (!spill_note.empty()) trace.import_notes.push_back(std::move(spill_note));
  if (!in->ignored().empty()) trace.import_notes.push_back(in->ignored());
  return trace;
}

}  // namespace

StatusOr<Trace> ImportKinetoStream(const std::string& path, size_t window_bytes, int threads, StreamInput input) {
  if (threads <= 0) threads = ThreadPool::HardwareThreads();
  return CatchAll(path, [&]() -> StatusOr<Trace> { return Stream(path, window_bytes, threads, input); });
}

size_t StreamWindowBytes() {
  if (const char* w = std::getenv("TIERSCOPE_STREAM_WINDOW")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(w, &end, 10);
    if (end != w && *end == '\0' && v > 0) return static_cast<size_t>(v);
  }
  return kStreamWindowBytes;
}

void SetMemoryBudget(int64_t bytes) { g_budget = bytes > 0 ? bytes : 0; }

int64_t MemoryBudget() {
  const int64_t set = g_budget.load();
  if (set > 0) return set;
  const int64_t available = AvailableMemoryBytes();
  return available > 0 ? available / 2 : 0;
}

int64_t StreamedTraceBytes(int64_t json_bytes, bool spilled) {
  const double per_byte = spilled ? kSpilledTraceBytesPerJsonByte : kStreamedTraceBytesPerJsonByte;
  const int64_t json = std::max<int64_t>(0, json_bytes);
  return static_cast<int64_t>(per_byte * static_cast<double>(json)) +
         std::min(json, static_cast<int64_t>(kStreamWindowBytes));  // a window fills no further than the file
}

bool SpillsStrings() {
  if (const std::optional<bool> force = Forced("TIERSCOPE_SPILL")) return *force;
  return SpillFile::WhyNotSpillIn(SpillDirectory()).empty();
}

bool ShouldStream(const std::string& path) {
  if (const std::optional<bool> force = Forced("TIERSCOPE_STREAM")) return *force;
  const int64_t input_bytes = EstimatedInputBytes(path);
  if (input_bytes < 0) return false;  // unreadable: the whole-file path names the error
  if (static_cast<uint64_t>(input_bytes) > kMaxJsonBytes) return true;
  // A gzip trailer holds the size mod 4 GiB: past 512 MiB compressed (4 GiB at a typical
  // 8x), the JSON may pass the limit whatever it claims. (Smaller files that still do are
  // streamed when the whole-file path meets the limit: IsOverJsonLimit.)
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && static_cast<int64_t>(st.st_size) != input_bytes &&
      static_cast<uint64_t>(st.st_size) > kMaxJsonBytes / 8) {
    return true;
  }
  const int64_t budget = MemoryBudget();
  return budget > 0 && input_bytes + input_bytes / 2 > budget;
}

}  // namespace tierscope
