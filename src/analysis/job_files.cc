// Finding a job's trace files (and skipping what is not one), assigning ranks and a rank's
// windows, and reading them in parallel within a memory budget.
#include "analysis/job_files.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "analysis/commands.h"
#include "analysis/table.h"
#include "core/allocator.h"
#include "core/cpu_info.h"
#include "core/exceptions.h"
#include "core/paths.h"
#include "trace/execution_trace.h"
#include "trace/json_input.h"
#include "trace/kineto_scan.h"
#include "trace/kineto_stream.h"

namespace tierscope {
namespace {

namespace fs = std::filesystem;

// rocprofv3 writes a run as CSV files or a database per process: its kernel trace (which
// reads the run's other files) or its database stands for the process.
bool IsTraceFile(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".sqlite") ||
         name.ends_with("_kernel_trace.csv") || name.ends_with("_results.db");
}

using kineto::EndsWithIgnoreCase;

// Why a file whose name is not a trace's is skipped.
std::string WhyNotByName(const std::string& name) {
  if (EndsWithIgnoreCase(name, ".csv")) return "CSV";
  if (EndsWithIgnoreCase(name, ".yml") || EndsWithIgnoreCase(name, ".yaml")) return "YAML";
  if (EndsWithIgnoreCase(name, ".nsys-rep") || EndsWithIgnoreCase(name, ".qdrep")) {
    return "Nsight Systems reports: export them with nsys export --type sqlite";
  }
  if (EndsWithIgnoreCase(name, ".et")) return "Chakra execution traces (operators, not a timeline)";
  return "not trace files (*.json, *.json.gz, *.sqlite)";
}

// What the first bytes of a JSON document say it is. Only a positive sign skips a file:
// anything unclear is left to the importer, which names what is wrong with it.
enum class JsonKind { kTrace, kExecutionTrace, kRocprof, kNoTraceEvents, kEmpty };

// A JSON string at s[i] (the opening quote): its end (past the closing quote), or npos.
size_t SkipString(std::string_view s, size_t i, std::string* out) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] == '"') return i + 1;
    if (out != nullptr && out->size() < 64) out->push_back(s[i]);
  }
  return std::string_view::npos;
}

// A JSON value at s[i]: its end, or npos when the prefix ends inside it.
size_t SkipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return SkipString(s, i, nullptr);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    for (; i < s.size(); ++i) {
      if (s[i] == '"') {
        i = SkipString(s, i, nullptr);
        if (i == std::string_view::npos) return i;
        --i;
      } else if (s[i] == '{' || s[i] == '[') {
        ++depth;
      } else if ((s[i] == '}' || s[i] == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return std::string_view::npos;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
  return i < s.size() ? i : std::string_view::npos;
}

// The top-level keys of `prefix` (the whole document when `whole`), read until one tells.
JsonKind ClassifyJson(std::string_view s, bool whole) {
  size_t i = 0;
  if (s.starts_with("\xEF\xBB\xBF")) i = 3;
  const auto ws = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  };
  ws();
  if (i >= s.size()) return whole ? JsonKind::kEmpty : JsonKind::kTrace;
  if (s[i] != '{') return JsonKind::kTrace;  // a bare array of events, or not JSON at all
  ++i;
  for (bool first_key = true;; first_key = false) {
    ws();
    if (i >= s.size()) break;
    if (s[i] == '}') return JsonKind::kNoTraceEvents;  // the whole object read: it has none
    if (s[i] != '"') return JsonKind::kTrace;
    std::string key;
    i = SkipString(s, i, &key);
    if (i == std::string_view::npos) break;
    if (key == "traceEvents") return JsonKind::kTrace;
    if (key == "rocprofiler-sdk-tool") return JsonKind::kRocprof;
    // PyTorch's ExecutionTraceObserver and Chakra's JSON: {"schema": "1.0.1", "pid": ...,
    // "nodes": [...]} (Kineto's is "schemaVersion").
    if (key == "nodes" || (first_key && key == "schema")) return JsonKind::kExecutionTrace;
    ws();
    if (i >= s.size() || s[i] != ':') break;
    ++i;
    ws();
    i = SkipValue(s, i);
    if (i == std::string_view::npos) break;
    ws();
    if (i < s.size() && s[i] == ',') ++i;
  }
  return JsonKind::kTrace;
}

constexpr int kSniffBytes = 64 << 10;

JsonKind SniffJson(const std::string& path) {
  if (!IsRegularFile(path)) return JsonKind::kTrace;  // a FIFO would block; the importer refuses it
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (f == nullptr) return JsonKind::kTrace;
  std::string buf(kSniffBytes + 1, '\0');
  const int n = gzread(f, buf.data(), kSniffBytes + 1);
  gzclose(f);
  if (n < 0) return JsonKind::kTrace;  // a corrupt stream: the importer says where
  buf.resize(static_cast<size_t>(n));
  const bool whole = n <= kSniffBytes;
  JsonKind kind = ClassifyJson(buf, whole);
  if (kind == JsonKind::kTrace && buf.find("\"traceEvents\"") == std::string::npos) {
    // No sign either way: the names PyTorch's execution traces go by.
    const std::string name = std::filesystem::path(path).filename().string();
    for (const char* et : {"_et.json", "_et.json.gz", "_CPU_trace.json", "_CPU_trace.json.gz"}) {
      if (name.ends_with(et)) kind = JsonKind::kExecutionTrace;
    }
  }
  return kind;
}

const char* WhyNotTrace(JsonKind k) {
  switch (k) {
    case JsonKind::kExecutionTrace:
      return "PyTorch execution traces (operators, not a timeline)";
    case JsonKind::kRocprof:
      return "rocprofv3 results (rocprofiler-sdk-tool JSON, not a Kineto trace)";
    case JsonKind::kNoTraceEvents:
      return "JSON without traceEvents";
    case JsonKind::kEmpty:
      return "empty files";
    case JsonKind::kTrace:
      break;
  }
  return "";
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Order "report_2" before "report_10": runs of digits compare as numbers.
bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

namespace {

constexpr int kMaxDepth = 3;  // the job directory, rank_0/ and one level under it

// Lists `dir` (depth 0: the job directory itself) into `found` and `skipped`.
Status ListDirectory(const fs::path& dir, const std::string& shown, int depth, std::vector<std::pair<std::string, std::string>>& found,
                     std::vector<SkippedFile>& skipped, std::vector<std::string>& execution_traces) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string place = shown.empty() ? name : shown + "/" + name;
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) {
      // torch_npu names a rank's folder {host}_{pid}_{time}_ascend_pt (the rank is inside).
      const bool rank_dir = RankFromDirectoryName(name) >= 0 || name.ends_with("_ascend_pt");
      if (depth + 1 < kMaxDepth && (depth > 0 || rank_dir)) {
        TS_RETURN_IF_ERROR(ListDirectory(entry.path(), place, depth + 1, found, skipped, execution_traces));
      } else {
        skipped.push_back({entry.path().string() + "/", place + "/",
                           depth == 0 ? "directories not named for a rank (rank_N/)" : "directories nested too deep"});
      }
      continue;
    }
    if (!entry.is_regular_file(type_ec)) continue;
    if (!IsTraceFile(name)) {
      skipped.push_back({entry.path().string(), place, WhyNotByName(name)});
      continue;
    }
    const bool not_json = name.ends_with(".sqlite") || name.ends_with(".csv") || name.ends_with(".db");
    const JsonKind kind = not_json ? JsonKind::kTrace : SniffJson(entry.path().string());
    if (kind == JsonKind::kExecutionTrace) execution_traces.push_back(entry.path().string());
    if (kind != JsonKind::kTrace) {
      skipped.push_back({entry.path().string(), place, WhyNotTrace(kind)});
      continue;
    }
    found.push_back({place, entry.path().string()});
  }
  if (ec) return FailedPrecondition(dir.string() + ": cannot list: " + ec.message());
  return OkStatus();
}

}  // namespace

StatusOr<JobFileList> FindJobFiles(const std::vector<std::string>& inputs) {
  JobFileList out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) return NotFound(in + ": no such file or directory");
    if (!fs::is_directory(st)) {
      (IsExecutionTraceFile(in) ? out.execution_traces : out.files).push_back(in);
      continue;
    }
    std::vector<std::pair<std::string, std::string>> found;  // (place under `in`, path)
    const size_t skipped_before = out.skipped.size();
    TS_RETURN_IF_ERROR(ListDirectory(in, "", 0, found, out.skipped, out.execution_traces));
    if (found.empty()) {
      std::string why = in + ": no trace files in it (*.json, *.json.gz, *.sqlite, also under rank_N/)";
      const size_t n = out.skipped.size() - skipped_before;
      if (n > 0) {
        why += "; skipped " + std::to_string(n) + ": " + out.skipped[skipped_before].place + " (" +
               out.skipped[skipped_before].why + ")" + (n > 1 ? ", ..." : "");
      }
      return InvalidArgument(why);
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return NaturalLess(a.first, b.first); });
    for (auto& [place, path] : found) out.files.push_back(std::move(path));
  }
  if (out.files.empty()) return InvalidArgument("no trace files given");
  // A path given twice (./t.json and t.json, or a directory and a file in it) is not two
  // ranks. Two names of one file (links) are taken as given: a job built of links on purpose.
  std::map<fs::path, const std::string*> seen;
  for (const std::string& f : out.files) {
    std::error_code ec;
    const auto [at, fresh] = seen.try_emplace(fs::absolute(f, ec).lexically_normal(), &f);
    if (!fresh) {
      return InvalidArgument(*at->second + " and " + f + " are the same file: a job takes each rank's trace once");
    }
  }
  std::sort(out.skipped.begin(), out.skipped.end(),
            [](const SkippedFile& a, const SkippedFile& b) { return NaturalLess(a.path, b.path); });
  return out;
}

bool IsExecutionTraceFile(const std::string& path) {
  if (path.ends_with(".sqlite") || path.ends_with(".csv")) return false;
  return SniffJson(path) == JsonKind::kExecutionTrace;
}

std::vector<std::string> ExecutionTracesBeside(const std::string& trace_path) {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path dir = fs::path(trace_path).parent_path().empty() ? fs::path(".") : fs::path(trace_path).parent_path();
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entries.size() > 256) return {};
    std::error_code type_ec;
    if (entry.is_regular_file(type_ec) && IsTraceFile(entry.path().filename().string())) entries.push_back(entry.path());
  }
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    if (!fs::equivalent(p, trace_path, ec) && IsExecutionTraceFile(p.string())) out.push_back(p.string());
  }
  return out;
}

// The "pid" an execution trace's first 64 KiB give, or -1.
int64_t ExecutionTracePid(const std::string& path) {
  if (!IsRegularFile(path)) return -1;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return -1;
  std::string buf(kSniffBytes, '\0');
  const int n = gzread(f, buf.data(), kSniffBytes);
  gzclose(f);
  if (n <= 0) return -1;
  buf.resize(static_cast<size_t>(n));
  const size_t key = buf.find("\"pid\"");
  if (key == std::string::npos) return -1;
  size_t i = buf.find(':', key);
  if (i == std::string::npos) return -1;
  while (++i < buf.size() && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')) {
  }
  int64_t pid = 0;
  bool digits = false;
  for (; i < buf.size() && std::isdigit(static_cast<unsigned char>(buf[i])) && pid < (int64_t{1} << 40); ++i) {
    pid = pid * 10 + (buf[i] - '0');
    digits = true;
  }
  return digits ? pid : -1;
}

void AttachExecutionTraces(Trace& t, const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& path : candidates) {
    const int64_t pid = ExecutionTracePid(path);
    if (pid >= 0 && t.host_pid > 0 && pid != t.host_pid) {  // another process's run
      tried += (tried.empty() ? "" : "; ") + path + ": the execution trace of process " + std::to_string(pid) +
               ", the trace's is " + std::to_string(t.host_pid) + ": not the same run";
      continue;
    }
    StatusOr<ExecutionTrace> et = ReadExecutionTrace(path);
    Status joined = et.ok() ? JoinExecutionTrace(t, *et) : et.status();
    if (joined.ok()) return;
    tried += (tried.empty() ? "" : "; ") + std::string(joined.message());
  }
  if (!tried.empty()) t.execution_trace.note = "no execution trace joined: " + tried;
}

StatusOr<std::vector<std::string>> JobFiles(const std::vector<std::string>& inputs) {
  TS_ASSIGN_OR_RETURN(JobFileList list, FindJobFiles(inputs));
  return std::move(list.files);
}

std::vector<std::string> SkippedNotes(const std::vector<SkippedFile>& skipped) {
  using Key = std::pair<std::string, std::string>;  // (job directory, why)
  std::map<Key, std::vector<std::string>> by_why;
  std::vector<Key> order;
  for (const SkippedFile& f : skipped) {
    const size_t cut = f.path.size() > f.place.size() ? f.path.size() - f.place.size() - 1 : 0;
    auto [it, fresh] = by_why.try_emplace(Key{f.path.substr(0, cut), f.why});
    if (fresh) order.push_back(it->first);
    it->second.push_back(f.place);
  }
  std::vector<std::string> notes;
  constexpr size_t kNamed = 8;
  for (const Key& key : order) {
    const std::vector<std::string>& places = by_why.at(key);
    std::string note = "Skipped, not traces (" + key.second + "): ";
    for (size_t i = 0; i < places.size() && i < kNamed; ++i) note += (i ? ", " : "") + places[i];
    if (places.size() > kNamed) note += " and " + std::to_string(places.size() - kNamed) + " more";
    notes.push_back(note + " (in " + key.first + ")");
  }
  return notes;
}

int RankFromFileName(std::string_view path) {
  const std::string_view name = BaseName(path);
  for (size_t i = 0; i + 4 < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) != 'r' ||
        std::tolower(static_cast<unsigned char>(name[i + 1])) != 'a' ||
        std::tolower(static_cast<unsigned char>(name[i + 2])) != 'n' ||
        std::tolower(static_cast<unsigned char>(name[i + 3])) != 'k') {
      continue;
    }
    size_t j = i + 4;
    if (j < name.size() && (name[j] == '-' || name[j] == '_')) ++j;
    int64_t rank = -1;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j])) && rank < (1 << 24)) {
      rank = (rank < 0 ? 0 : rank * 10) + (name[j] - '0');
      ++j;
    }
    if (rank >= 0 && rank < (1 << 24)) return static_cast<int>(rank);
  }
  return -1;
}

int NumberInFileName(std::string_view path) {
  std::string_view stem = BaseName(path);
  stem = stem.substr(0, stem.find('.'));
  size_t end = stem.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(stem[end - 1]))) --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(stem[begin - 1]))) --begin;
  if (begin == end || end - begin > 7) return -1;
  int n = 0;
  for (size_t k = begin; k < end; ++k) n = n * 10 + (stem[k] - '0');
  return n;
}

LoadPlan PlanLoad(const std::vector<int64_t>& rank_bytes, int threads, int64_t budget_bytes, bool spill) {
  LoadPlan p;
  threads = std::max(1, threads);
  bool past_limit = false;  // a rank past 4 GiB: streamed whatever the budget
  for (int64_t b : rank_bytes) {
    p.largest_bytes = std::max(p.largest_bytes, b);
    past_limit = past_limit || static_cast<uint64_t>(b) > kMaxJsonBytes;
  }
  const int n = std::max(1, static_cast<int>(rank_bytes.size()));
  // A streamed rank is read on two threads (kineto_stream.h).
  const auto two_each = [&] { return std::max(1, std::min(threads / 2, n)); };
  const auto ranks_text = [](int k) { return std::to_string(k) + (k == 1 ? " rank" : " ranks"); };
  p.in_flight = std::min(threads, n);
  p.why = std::to_string(p.in_flight) + (p.in_flight == 1 ? " thread" : " threads");
  p.budget_bytes = budget_bytes;
  if (budget_bytes <= 0 || p.largest_bytes <= 0) {
    if (past_limit) {
      p.streamed = true;
      p.in_flight = two_each();
      p.why = ranks_text(p.in_flight) + " at once, streamed (memory unknown)";
    }
    return p;
  }
  // A rank read whole takes its JSON and its trace, about 1.5x the JSON (bench/ingest_bench.sh);
  // one the budget cannot hold whole, or past 4 GiB, is streamed: its trace, index and the
  // window, its args spilled to disk where they can be (kineto_stream.h). The plan prices
  // every rank at the dearest rank's cost.
  bool any_streamed = false;
  for (int64_t b : rank_bytes) {
    int64_t cost = b + b / 2;
    const bool streamed = cost > budget_bytes || static_cast<uint64_t>(b) > kMaxJsonBytes;
    if (streamed) cost = StreamedTraceBytes(b, spill);
    any_streamed = any_streamed || streamed;
    if (cost > p.per_rank_bytes) {
      p.per_rank_bytes = cost;
      p.streamed = streamed;
      p.spilled = streamed && spill;
    }
  }
  const int64_t fit = std::max<int64_t>(1, budget_bytes / p.per_rank_bytes);
  if (fit < p.in_flight || any_streamed) {
    const int by_threads = any_streamed ? two_each() : p.in_flight;
    p.in_flight = static_cast<int>(std::min<int64_t>(fit, by_threads));
    const std::string how = p.spilled ? ", streamed, args spilled to disk" : any_streamed ? ", streamed" : "";
    if (fit <= by_threads) {
      p.why = "memory for " + ranks_text(p.in_flight) + " of " + FormatBytes(static_cast<double>(p.largest_bytes)) +
              " at once in a budget of " + FormatBytes(static_cast<double>(budget_bytes)) + how;
    } else if (by_threads < n) {
      p.why = ranks_text(p.in_flight) + " at once, " +
              (threads >= 2 ? "each streamed on two of the " + std::to_string(threads) + " threads" : "streamed on one thread") +
              (p.spilled ? ", args spilled to disk" : "");
    } else {
      p.why = ranks_text(p.in_flight) + " at once (every rank)" + how;
    }
    if (p.per_rank_bytes > budget_bytes) {
      p.why += "; the largest rank's trace alone (about " + FormatBytes(static_cast<double>(p.per_rank_bytes)) +
               ") passes the budget";
    }
  }
  return p;
}

Status ForEachRankTrace(const std::vector<std::string>& files, const LoadPlan& plan,
                        const std::function<Status(size_t, Trace&)>& reduce,
                        const std::function<void(size_t, size_t, const std::string&)>& progress) {
  // Large blocks (a rank's events, strings, input) straight from the system and back to
  // it when freed: glibc would otherwise raise its mmap threshold after the first rank and
  // keep later ranks' blocks in its arenas.
  MapBlocksFrom(size_t{1} << 20);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  size_t done = 0;
  Status first_error;
  size_t first_error_index = files.size();
  const auto work = [&] {
    while (!stop.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= files.size()) return;
      Status s;
      try {
        StatusOr<Trace> t = LoadTrace(files[i]);
        if (t.ok()) {
          s = reduce(i, *t);
        } else {
          s = t.status();
        }
      } catch (...) {
        s = StatusFromCurrentException(files[i]);
      }
      // The trace is gone: hand its pages back now, or the allocator keeps them for the
      // next rank in another arena and the job's peak grows with every rank.
      ReleaseFreedMemory();
      std::lock_guard<std::mutex> lock(mu);
      if (!s.ok()) {
        if (i < first_error_index) {
          first_error = s;
          first_error_index = i;
        }
        stop.store(true);
        return;
      }
      ++done;
      if (progress) progress(done, files.size(), files[i]);
    }
  };
  std::vector<std::jthread> workers;
  for (int w = 1; w < plan.in_flight; ++w) {
    try {
      workers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // fewer threads: the rest still runs on this one
    }
  }
  work();
  workers.clear();  // joins
  return first_error;
}

int RankFromDirectoryName(std::string_view name) {
  if (name.size() < 5) return -1;
  for (size_t i = 0; i < 4; ++i) {
    if (std::tolower(static_cast<unsigned char>(name[i])) != "rank"[i]) return -1;
  }
  size_t j = 4;
  if (name[j] == '-' || name[j] == '_') ++j;
  int64_t rank = -1;
  while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j])) && rank < (1 << 24)) {
    rank = (rank < 0 ? 0 : rank * 10) + (name[j] - '0');
    ++j;
  }
  return rank >= 0 && rank < (1 << 24) ? static_cast<int>(rank) : -1;
}

namespace {

// The rank of the nearest directory above `path` named for one (up to kMaxDepth), or -1.
int RankOfDirectory(std::string_view path) {
  fs::path p = fs::path(path).parent_path();
  for (int up = 0; up < kMaxDepth && !p.empty() && p.has_filename(); ++up, p = p.parent_path()) {
    const int r = RankFromDirectoryName(p.filename().string());
    if (r >= 0) return r;
  }
  return -1;
}

// tensorboard_trace_handler names its files WORKER.TIME.pt.trace.json(.gz), WORKER being
// host_pid by default: WORKER, or "" for another name.
std::string WorkerOf(std::string_view path) {
  std::string_view name = BaseName(path);
  bool matched = false;
  for (std::string_view ext : {std::string_view(".pt.trace.json.gz"), std::string_view(".pt.trace.json")}) {
    if (!matched && name.ends_with(ext)) {
      name.remove_suffix(ext.size());
      matched = true;
    }
  }
  const size_t dot = name.rfind('.');
  if (!matched || dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return "";
  for (char c : name.substr(dot + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return "";
  }
  return std::string(name.substr(0, dot));
}

// Every file numbered from one source; with `windows`, several files may share a rank.
RankAssignment NumberFiles(const std::vector<std::string>& files, const std::vector<int>& trace_ranks,
                           bool windows) {
  RankAssignment a;
  a.rank.resize(files.size());
  a.from.resize(files.size());
  const auto every = [&](const auto& rank_of) {
    return std::all_of(files.begin(), files.end(), [&](const std::string& f) { return rank_of(f) >= 0; });
  };
  const bool all_info = std::all_of(trace_ranks.begin(), trace_ranks.end(), [](int r) { return r >= 0; });
  const bool all_names = every(RankFromFileName);
  // rank_0/ ... rank_N/: only when the directories tell ranks apart (one directory named
  // rank3_runs/ holding a whole job says nothing about its files).
  std::set<int> dir_ranks;
  for (const std::string& f : files) dir_ranks.insert(RankOfDirectory(f));
  const bool all_dirs = every(RankOfDirectory) && dir_ranks.size() >= 2;
  // nsys -o report_%q{RANK} names files report_0 ... report_N-1: a number in every name,
  // trusted only when the numbers are exactly 0..N-1 (not pids or timestamps).
  std::vector<int> numbers;
  for (const std::string& f : files) numbers.push_back(NumberInFileName(f));
  std::vector<int> sorted_numbers = numbers;
  std::sort(sorted_numbers.begin(), sorted_numbers.end());
  bool numbered = !files.empty();
  for (size_t i = 0; i < sorted_numbers.size(); ++i) numbered = numbered && sorted_numbers[i] == static_cast<int>(i);
  // One process's profiler cycles, as tensorboard_trace_handler names them.
  std::map<std::string, int, decltype([](const std::string& x, const std::string& y) { return NaturalLess(x, y); })>
      workers;
  bool by_worker = windows;
  for (const std::string& f : files) {
    const std::string w = WorkerOf(f);
    by_worker = by_worker && !w.empty();
    ++workers[w];
  }
  by_worker = by_worker && workers.size() < files.size();
  int next_worker = 0;
  for (auto& [w, n] : workers) n = next_worker++;
  for (size_t i = 0; i < files.size(); ++i) {
    if (all_info) {
      a.rank[i] = trace_ranks[i];
      // torch_npu writes no distributedInfo: its rank is profiler_info_N.json's.
      const bool npu = files[i].ends_with("trace_view.json") || files[i].ends_with("trace_view.json.gz");
      a.from[i] = npu ? "profiler_info" : "distributedInfo";
    } else if (all_names) {
      a.rank[i] = RankFromFileName(files[i]);
      a.from[i] = "file name";
    } else if (all_dirs) {
      a.rank[i] = RankOfDirectory(files[i]);
      a.from[i] = "directory name";
    } else if (numbered) {
      a.rank[i] = numbers[i];
      a.from[i] = "number in the file name";
    } else if (by_worker) {
      a.rank[i] = workers.at(WorkerOf(files[i]));
      a.from[i] = "worker name";
    } else {
      a.rank[i] = static_cast<int>(i);
      a.from[i] = "order";
    }
  }
  const auto with_info = std::count_if(trace_ranks.begin(), trace_ranks.end(), [](int r) { return r >= 0; });
  if (!all_info && with_info > 0) {
    a.note = "distributedInfo names a rank in " + std::to_string(with_info) + " of " + std::to_string(files.size()) +
             " traces only: every rank is numbered by " + a.from.front() + " instead";
  }
  return a;
}

}  // namespace

StatusOr<RankAssignment> AssignRanks(const std::vector<std::string>& files,
                                     const std::vector<int>& trace_ranks) {
  RankAssignment a = NumberFiles(files, trace_ranks, /*windows=*/false);
  std::map<int, size_t> seen;
  for (size_t i = 0; i < files.size(); ++i) {
    auto [it, fresh] = seen.emplace(a.rank[i], i);
    if (!fresh) {
      return InvalidArgument("two traces are rank " + std::to_string(a.rank[i]) + " (by " + a.from[i] +
                             "): " + files[it->second] + " and " + files[i]);
    }
  }
  for (const auto& [rank, i] : seen) a.windows.push_back({i});
  return a;
}

TraceWindow WindowOf(const Trace& t) {
  TraceWindow w;
  w.trace_rank = t.rank;
  if (t.events.empty()) return w;
  int64_t begin = t.events.front().ts_ns, end = begin;
  for (const Event& e : t.events) {
    begin = std::min(begin, e.ts_ns);
    end = std::max(end, e.ts_ns + e.dur_ns);
  }
  w.begin_ns = t.base_time_ns + begin;
  w.end_ns = t.base_time_ns + end;
  return w;
}

StatusOr<RankAssignment> AssignRankWindows(const std::vector<std::string>& files,
                                           const std::vector<TraceWindow>& windows) {
  if (windows.size() != files.size()) {
    return InvalidArgument("a job needs one window per file (" + std::to_string(windows.size()) + " windows, " +
                           std::to_string(files.size()) + " files)");
  }
  std::vector<int> trace_ranks;
  for (const TraceWindow& w : windows) trace_ranks.push_back(w.trace_rank);
  RankAssignment a = NumberFiles(files, trace_ranks, /*windows=*/true);
  std::map<int, std::vector<size_t>> by_rank;
  for (size_t i = 0; i < files.size(); ++i) by_rank[a.rank[i]].push_back(i);
  for (auto& [rank, group] : by_rank) {
    std::stable_sort(group.begin(), group.end(),
                     [&](size_t x, size_t y) { return windows[x].begin_ns < windows[y].begin_ns; });
    // Successive profiler cycles follow one another; two runs' traces of one rank overlap.
    for (size_t p = 0; p < group.size(); ++p) {
      for (size_t q = p + 1; q < group.size(); ++q) {
        const TraceWindow &x = windows[group[p]], &y = windows[group[q]];
        const int64_t both = std::min(x.end_ns, y.end_ns) - std::max(x.begin_ns, y.begin_ns);
        const int64_t shorter = std::min(x.end_ns - x.begin_ns, y.end_ns - y.begin_ns);
        if (both > 0 && both > shorter / 10) {
          return InvalidArgument("two traces are rank " + std::to_string(rank) + " (by " + a.from[group[p]] +
                                 ") and overlap in time (" + FormatNs(static_cast<double>(both)) + " of " +
                                 FormatNs(static_cast<double>(shorter)) + "), so they are not windows of one run: " +
                                 files[group[p]] + " and " + files[group[q]]);
        }
      }
    }
    a.windows.push_back(std::move(group));
  }
  return a;
}

}  // namespace tierscope
