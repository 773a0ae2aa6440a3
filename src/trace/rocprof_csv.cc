// rocprofv3's CSV files read into a Trace: see rocprof_csv.h.
#include "trace/rocprof_csv.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "core/paths.h"
#include "trace/csv_reader.h"
#include "trace/rocm_devices.h"

namespace tierscope {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMaxCsvBytes = uintmax_t{4} << 30;

// The files of a run, by suffix; what each holds.
enum class FileKind { kKernels, kApi, kMarkers, kCopies, kAgents, kNotTimeline };
struct Known {
  const char* suffix;
  FileKind kind;
};
constexpr Known kKnown[] = {
    {"kernel_trace", FileKind::kKernels},      {"hip_api_trace", FileKind::kApi},
    {"hsa_api_trace", FileKind::kApi},         {"rccl_api_trace", FileKind::kApi},
    {"regions_trace", FileKind::kApi},         {"marker_api_trace", FileKind::kMarkers},
    {"memory_copy_trace", FileKind::kCopies},  {"agent_info", FileKind::kAgents},
    {"memory_allocation", FileKind::kNotTimeline}, {"memory_allocation_trace", FileKind::kNotTimeline},
    {"scratch_memory_trace", FileKind::kNotTimeline}, {"counter_collection", FileKind::kNotTimeline},
};

// The suffix `file` (a file name) ends with, "" for none. Longest first: "memory_allocation"
// is also the end of "..._memory_allocation_trace"'s stem.
std::string SuffixOf(std::string_view file) {
  if (!file.ends_with(".csv")) return {};
  file.remove_suffix(4);
  std::string best;
  for (const Known& k : kKnown) {
    const std::string_view s = k.suffix;
    const bool named = file == s || (file.size() > s.size() && file.ends_with(s) && file[file.size() - s.size() - 1] == '_');
    if (named && s.size() > best.size()) best = std::string(s);
  }
  return best;
}

FileKind KindOf(std::string_view suffix) {
  for (const Known& k : kKnown) {
    if (suffix == k.suffix) return k.kind;
  }
  return FileKind::kNotTimeline;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ParseInt(std::string_view s, int64_t* v) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return !s.empty() && std::from_chars(s.data(), s.data() + s.size(), *v).ptr == s.data() + s.size();
}

// One CSV file's rows with its columns found by name.
class Table {
 public:
  explicit Table(std::string_view text) : reader_(text.substr(0, 3) == "\xEF\xBB\xBF" ? text.substr(3) : text) {
    reader_.ReadRecord(&header_);
    for (size_t i = 0; i < header_.size(); ++i) columns_[Lower(header_[i])] = static_cast<int>(i);
  }
  int Column(std::string_view name) const {
    const auto it = columns_.find(Lower(name));
    return it == columns_.end() ? -1 : it->second;
  }
  // The next row; false at the end. `complete`: it has every column and its quotes closed.
  bool Next(bool* complete) {
    while (!reader_.AtEnd()) {
      const bool closed = reader_.ReadRecord(&row_);
      if (row_.size() == 1 && row_[0].empty()) continue;  // a blank line
      *complete = closed && row_.size() == header_.size();
      return true;
    }
    return false;
  }
  std::string_view Get(int column) const {
    return column >= 0 && static_cast<size_t>(column) < row_.size() ? std::string_view(row_[column]) : std::string_view();
  }
  bool Int(int column, int64_t* v) const { return column >= 0 && ParseInt(Get(column), v); }

 private:
  CsvReader reader_;
  std::vector<std::string> header_, row_;
  std::unordered_map<std::string, int> columns_;
};

using rocm::Gpu;

class Importer {
 public:
  explicit Importer(Trace& t) : t_(t) {}

  void Agents(std::string_view text) {
    Table a(text);
    const int node = a.Column("Node_Id"), logical = a.Column("Logical_Node_Id"), type = a.Column("Agent_Type");
    const int product = a.Column("Product_Name"), isa = a.Column("Name"), cus = a.Column("Cu_Count");
    struct Row {
      int64_t node, logical, cus;
      std::string name;
    };
    std::vector<Row> rows;
    bool complete = false;
    while (a.Next(&complete)) {
      Row r{-1, -1, 0, std::string(a.Get(product))};
      if (!complete || a.Get(type) != "GPU" || !a.Int(node, &r.node)) continue;
      if (!a.Int(logical, &r.logical)) r.logical = r.node;
      a.Int(cus, &r.cus);
      if (r.name.empty()) r.name = std::string(a.Get(isa));
      rows.push_back(std::move(r));
    }
    std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.logical < y.logical; });
    for (size_t i = 0; i < rows.size(); ++i) {
      auto gpu = std::make_shared<Gpu>(Gpu{static_cast<int32_t>(i), rows[i].name, rows[i].cus, 0});
      gpus_["Agent " + std::to_string(rows[i].logical)] = gpu;  // the default (logical) index
      gpus_["GPU " + std::to_string(i)] = gpu;                  // --agent-index type-relative
      gpus_[std::to_string(rows[i].node)] = gpu;                // ROCm 6.2: the node id
    }
    have_agents_ = !rows.empty();
  }

  void Kernels(std::string_view text, const std::string& file) {
    Table k(text);
    const int agent = k.Column("Agent_Id"), queue = k.Column("Queue_Id"), stream = k.Column("Stream_Id");
    const int name = k.Column("Kernel_Name"), corr = k.Column("Correlation_Id");
    const int start = k.Column("Start_Timestamp"), end = k.Column("End_Timestamp");
    int wg[3], grid[3];
    const char* axes[] = {"X", "Y", "Z"};
    for (int i = 0; i < 3; ++i) {
      wg[i] = k.Column(std::string("Workgroup_Size_") + axes[i]);
      grid[i] = k.Column(std::string("Grid_Size_") + axes[i]);
    }
    if (name < 0 || start < 0 || end < 0) return Unreadable(file, "Kernel_Name, Start_Timestamp and End_Timestamp");
    bool complete = false;
    while (k.Next(&complete)) {
      Event e;
      if (!Row(k, complete, corr, start, end, &e)) continue;
      Gpu* gpu = GpuOf(k.Get(agent));
      if (gpu == nullptr) {
        Malformed("unknown Agent_Id");
        continue;
      }
      int64_t s = 0, q = 0;
      const bool has_stream = k.Int(stream, &s) && s > 0;
      if (!has_stream) k.Int(queue, &q);
      e.kind = EventKind::kKernel;
      e.name = t_.strings.Intern(k.Get(name));
      e.pid = gpu->index;
      e.tid = static_cast<int32_t>(std::clamp<int64_t>(has_stream ? s : q, 0, INT32_MAX));
      ++gpu->kernels;
      int64_t items[3], workgroup[3];
      for (int i = 0; i < 3; ++i) {
        if (!k.Int(grid[i], &items[i])) items[i] = 1;
        if (!k.Int(wg[i], &workgroup[i])) workgroup[i] = 1;
      }
      e.args = t_.strings.Append(rocm::GridArgs(items, workgroup));
      Keep(e);
    }
  }

  void Api(std::string_view text, const std::string& file, bool markers) {
    Table a(text);
    const int domain = a.Column("Domain"), function = a.Column("Function"), pid = a.Column("Process_Id");
    const int tid = a.Column("Thread_Id"), corr = a.Column("Correlation_Id");
    const int start = a.Column("Start_Timestamp"), end = a.Column("End_Timestamp");
    if (function < 0 || start < 0 || end < 0) return Unreadable(file, "Function, Start_Timestamp and End_Timestamp");
    bool complete = false;
    while (a.Next(&complete)) {
      Event e;
      if (!Row(a, complete, corr, start, end, &e)) continue;
      const std::string_view d = a.Get(domain);
      const bool marker = markers || d.starts_with("MARKER");
      e.kind = marker ? EventKind::kAnnotation : EventKind::kRuntime;
      e.name = t_.strings.Intern(a.Get(function));
      int64_t p = 0, th = 0;
      a.Int(pid, &p);
      a.Int(tid, &th);
      e.pid = static_cast<int32_t>(std::clamp<int64_t>(p, 0, INT32_MAX));
      e.tid = static_cast<int32_t>(std::clamp<int64_t>(th, 0, INT32_MAX));
      if (t_.host_pid == 0 && e.pid > 0) t_.host_pid = e.pid;
      Keep(e);
    }
  }

  void Copies(std::string_view text, const std::string& file) {
    Table c(text);
    const int direction = c.Column("Direction"), stream = c.Column("Stream_Id"), corr = c.Column("Correlation_Id");
    const int src = c.Column("Source_Agent_Id"), dst = c.Column("Destination_Agent_Id");
    const int start = c.Column("Start_Timestamp"), end = c.Column("End_Timestamp");
    if (start < 0 || end < 0) return Unreadable(file, "Start_Timestamp and End_Timestamp");
    bool complete = false;
    int64_t copies = 0;
    while (c.Next(&complete)) {
      Event e;
      if (!Row(c, complete, corr, start, end, &e)) continue;
      // Without agent_info, only agents that ran kernels are GPUs (a copy's host side is not).
      Gpu* gpu = GpuOf(c.Get(dst), false);
      if (gpu == nullptr) gpu = GpuOf(c.Get(src), false);
      if (gpu == nullptr) {
        Malformed("memory copy with no GPU agent");
        continue;
      }
      const std::string_view d = c.Get(direction);
      int64_t s = 0;
      c.Int(stream, &s);
      e.kind = EventKind::kMemcpy;
      e.name = t_.strings.Intern(d.empty() ? "MEMORY_COPY" : d);
      e.pid = gpu->index;
      e.tid = static_cast<int32_t>(std::clamp<int64_t>(s, 0, INT32_MAX));
      Keep(e);
      ++copies;
    }
    if (copies > 0) t_.stats.layout["rocprofv3 CSV: copies without their bytes (the CSV has no size column)"] += copies;
  }

  void NotTimeline(std::string_view text, const std::string& suffix) {
    Table n(text);
    bool complete = false;
    int64_t rows = 0;
    while (n.Next(&complete)) ++rows;
    t_.stats.events_read += rows;
    t_.stats.metadata += rows;
    t_.stats.by_category[suffix] += rows;
  }

  void Finish() {
    std::vector<const Gpu*> gpus;
    for (const auto& [key, gpu] : gpus_) gpus.push_back(gpu.get());
    rocm::FinishTrace(t_, gpus);
  }

  void Count(const std::string& suffix, int64_t rows) { t_.stats.by_category[suffix] += rows; }

 private:
  void Malformed(const char* reason) {
    ++t_.stats.malformed;
    ++t_.stats.malformed_reasons[reason];
  }
  void Unreadable(const std::string& file, const char* columns) {
    t_.import_notes.push_back(file + ": not read (no " + std::string(columns) + " columns)");
  }
  void Keep(const Event& e) {
    t_.events.push_back(e);
    ++t_.stats.events_kept;
  }

  // The row's times and correlation; false (counted) when malformed.
  bool Row(const Table& r, bool complete, int corr, int start, int end, Event* e) {
    ++t_.stats.events_read;
    if (!complete) {
      Malformed("row with missing columns or an open quote");
      return false;
    }
    int64_t s = 0, f = 0, c = 0;
    if (!r.Int(start, &s) || !r.Int(end, &f)) {
      Malformed("Start_Timestamp / End_Timestamp not a number");
      return false;
    }
    if (s < kMinTraceNs || f >= kMaxTraceNs || f < s || !TimeInRange(s, f - s)) {  // no overflow in f - s
      Malformed("time out of range");
      return false;
    }
    e->ts_ns = s;
    e->dur_ns = f - s;
    if (r.Int(corr, &c) && c > 0) e->correlation = c;
    return true;
  }

  // The GPU an Agent_Id names; without agent_info, one per distinct id in order of sight
  // (`add`: ids not seen yet become GPUs).
  Gpu* GpuOf(std::string_view id, bool add = true) {
    if (id.empty()) return nullptr;
    const auto it = gpus_.find(std::string(id));
    if (it != gpus_.end()) return it->second.get();
    if (have_agents_ || !add) return nullptr;
    auto gpu = std::make_shared<Gpu>(Gpu{static_cast<int32_t>(unnamed_++), "", 0, 0});
    gpus_[std::string(id)] = gpu;
    return gpu.get();
  }

  Trace& t_;
  std::map<std::string, std::shared_ptr<Gpu>> gpus_;
  bool have_agents_ = false;
  int unnamed_ = 0;
};

}  // namespace

bool IsRocprofCsv(const std::string& path) {
  const std::string suffix = SuffixOf(fs::path(path).filename().string());
  if (suffix.empty() || !IsRegularFile(path)) return false;
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (f == nullptr) return false;
  char head[512] = {};
  const size_t n = std::fread(head, 1, sizeof(head) - 1, f.get());
  const std::string_view h(head, n);
  const std::string_view first = h.substr(0, h.find('\n'));
  // Every rocprofv3 CSV header quotes its names and has either timestamps or agent nodes.
  return first.find("\"Start_Timestamp\"") != std::string_view::npos ||
         first.find("\"Node_Id\"") != std::string_view::npos;
}

StatusOr<Trace> ImportRocprofCsvTexts(const std::map<std::string, std::string>& files, const std::string& source) {
  Trace t;
  t.source = source;
  t.format = "rocprofv3-csv";
  t.runtime = "hip";
  Importer importer(t);
  if (const auto a = files.find("agent_info"); a != files.end()) importer.Agents(a->second);
  // In kKnown's order: kernels before copies (without agent_info, kernels name the GPUs).
  for (const Known& k : kKnown) {
    const auto f = files.find(k.suffix);
    if (f == files.end()) continue;
    const std::string& suffix = f->first;
    const std::string& text = f->second;
    t.stats.bytes += static_cast<int64_t>(text.size());
    const std::string file = suffix + ".csv";
    switch (KindOf(suffix)) {
      case FileKind::kKernels: importer.Kernels(text, file); break;
      case FileKind::kApi: importer.Api(text, file, false); break;
      case FileKind::kMarkers: importer.Api(text, file, true); break;
      case FileKind::kCopies: importer.Copies(text, file); break;
      case FileKind::kNotTimeline: importer.NotTimeline(text, suffix); break;
      case FileKind::kAgents: break;
    }
  }
  importer.Finish();
  if (t.stats.events_read == 0 && t.events.empty()) {
    return InvalidArgument(source + ": no rocprofv3 trace rows (kernel, API, marker or copy)");
  }
  return t;
}

StatusOr<Trace> ImportRocprofCsv(const std::string& path) {
  const fs::path p(path);
  const std::string name = p.filename().string();
  const std::string suffix = SuffixOf(name);
  if (suffix.empty()) return InvalidArgument(path + ": not a rocprofv3 CSV file name (<prefix>_kernel_trace.csv, ...)");
  // The run's prefix: "<pid>_" (or "" when the file is just "kernel_trace.csv").
  const std::string prefix = name.substr(0, name.size() - suffix.size() - 4);
  std::map<std::string, std::string> files;
  std::error_code ec;
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    const std::string s = SuffixOf(n);
    if (s.empty() || n.size() != prefix.size() + s.size() + 4 || !n.starts_with(prefix)) continue;
    const uintmax_t size = it->file_size(ec);
    if (ec) continue;
    if (size > kMaxCsvBytes) return InvalidArgument(it->path().string() + ": " + std::to_string(size) + " bytes, over the 4 GiB a rocprofv3 CSV is read up to");
    TS_ASSIGN_OR_RETURN(std::string text, ReadFile(it->path().string()));
    files[s] = std::move(text);
  }
  if (files.find(suffix) == files.end()) {
    TS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    files[suffix] = std::move(text);
  }
  return ImportRocprofCsvTexts(files, path);
}

}  // namespace tierscope
