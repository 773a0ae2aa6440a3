// analyze / stats / diff.
#include "analysis/commands.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string_view>

#include "analysis/critical_path.h"
#include "analysis/diff.h"
#include "analysis/job_files.h"
#include "analysis/op_roofline.h"
#include "analysis/rules.h"
#include "analysis/timeline.h"
#include "analysis/trace_quality.h"
#include "core/function_ref.h"
#include "core/paths.h"
#include "core/text.h"
#include "trace/ascend_details.h"
#include "trace/kineto_import.h"
#include "trace/ncu_import.h"
#include "trace/units.h"
#include "trace/nsys_import.h"
#include "trace/rocpd_import.h"
#include "trace/rocprof_csv.h"

namespace tierscope {
namespace {

// A report in a text or CSV document of several: its name above it, a blank line after.
void WriteSection(std::ostream& out, const Table& t, const RenderOptions& r) {
  if (r.format == OutputFormat::kCsv) {
    out << "# " << t.name << "\n";
    WriteCsv(out, t);
  } else {
    out << "== " << t.name << " ==\n";
    WriteText(out, t, r.wide);
  }
  out << "\n";
}

std::string Render(const std::vector<Table>& tables, const RenderOptions& r) {
  std::ostringstream out;
  for (const Table& t : tables) WriteSection(out, t, r);
  return std::move(out).str();
}

nlohmann::json TraceInfo(const Trace& t) {
  return {{"source", t.source}, {"format", t.format}, {"runtime", t.runtime},
          {"device", t.device_name}, {"compute_units", t.device_units}, {"events", t.events.size()}};
}

std::string Header(const Trace& t, const TraceIndex& x) {
  std::string h = "trace: " + Printable(t.source) + "\nformat: " + t.format + ", runtime: " +
                  (t.runtime.empty() ? "unknown" : Printable(t.runtime)) + ", device: " +
                  (t.device_name.empty() ? "unknown" : Printable(t.device_name));
  if (t.device_units > 0) h += " (" + std::to_string(t.device_units) + " compute units)";
  h += "\nevents: " + std::to_string(t.events.size()) + "; work units: " +
       (x.unit_name.empty() ? std::string("none found")
                            : std::to_string(x.units.size()) + " x '" + Printable(x.unit_name) + "'") +
       "\n\n";
  return h;
}

// "N of its M entries were malformed and skipped (reasons)".
std::string SkippedWhy(const Trace& t) {
  std::string why;
  for (const auto& [reason, n] : t.stats.malformed_reasons) {
    if (!why.empty()) why += ", ";
    why += std::to_string(n);
    why += ' ';
    why += reason;
  }
  return std::to_string(t.stats.malformed) + " of its " + std::to_string(t.stats.events_read) +
         " entries were malformed and skipped (" + why + ")";
}

// A trace that yields no timeline event while entries were skipped is refused, naming
// the reasons: analysing nothing would pass for a trace with nothing in it.
Status CheckTimeline(const Trace& t) {
  if (!t.events.empty() || t.stats.malformed == 0) return OkStatus();
  return InvalidArgument(t.source + ": no timeline events: " + SkippedWhy(t));
}

StatusOr<Trace> LoadAnyTrace(const std::string& path) {
  TS_RETURN_IF_ERROR(CheckReadableFile(path));  // a FIFO would block the open
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  char magic[16] = {};
  in.read(magic, sizeof(magic));
  if (in.gcount() == 16 && std::string(magic, 16) == std::string("SQLite format 3\0", 16)) {
    if (IsRocpdFile(path)) return ImportRocpdFile(path);
    return ImportNsysSqlite(path);
  }
  if (path.ends_with(".csv")) {
    if (IsRocprofCsv(path)) return ImportRocprofCsv(path);
    return InvalidArgument(path + ": a CSV that is not one of rocprofv3's traces (<pid>_kernel_trace.csv, "
                           "_hip_api_trace.csv, ...); an ncu CSV is read by tierscope kernel --ncu-csv");
  }
  if (path.size() >= 7 && (path.ends_with(".sqlite") || path.ends_with(".sqlite3"))) {
    return InvalidArgument(path + ": not an SQLite database (no \"SQLite format 3\" header; export it with "
                           "nsys export --type sqlite)");
  }
  return ImportKinetoTrace(path);
}

}  // namespace

std::string SkippedEntries(const Trace& t) { return t.stats.malformed == 0 ? "" : t.source + ": " + SkippedWhy(t); }

StatusOr<Trace> LoadTrace(const std::string& path, const std::vector<std::string>& execution_traces) {
  for (const std::string& et : execution_traces) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(et, ec)) {
      return NotFound(et + (std::filesystem::exists(et, ec) ? ": not a file" : ": no such file") +
                      " (the execution trace to join)");
    }
  }
  TS_ASSIGN_OR_RETURN(Trace t, LoadAnyTrace(path));
  TS_RETURN_IF_ERROR(CheckTimeline(t));
  // A PyTorch execution trace of the same run, given or beside it, adds the operators'
  // shapes where the trace lacks them.
  if (t.format == "kineto") {
    AttachExecutionTraces(t, execution_traces.empty() ? ExecutionTracesBeside(path) : execution_traces);
    ascend::AttachAscendOutputs(t, path);  // torch_npu's kernel_details.csv and rank
  }
  // One found beside it that does not join is noted; one the user named is an error: the
  // shapes asked for would be missing from every report.
  if (!execution_traces.empty() && t.execution_trace.source.empty()) {
    return InvalidArgument(t.format == "kineto" ? t.execution_trace.note
                                                : "an execution trace joins a Kineto trace only, and " + path +
                                                      " is " + t.format);
  }
  return t;
}

Status CheckUnitFound(const Trace& t, const std::string& unit) {
  std::string name;
  if (unit.empty() || !FindWorkUnits(t, unit, &name).empty()) return OkStatus();
  std::string found;
  FindWorkUnits(t, "", &found);
  return InvalidArgument("--unit '" + unit + "': no annotation of that name in " + t.source +
                         (found.empty() ? " (it has no ProfilerStep#N either)" : " (its units: " + found + ")"));
}

Status CheckComparable(const Trace& t, std::string_view nothing_to) {
  if (!t.events.empty()) return OkStatus();
  return InvalidArgument(t.source + ": the trace holds no timeline event (" + std::to_string(t.stats.events_read) +
                         " entries read): nothing to " + std::string(nothing_to));
}

bool IsNcuCsv(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0) return !IsRocprofCsv(path);
  // Sniffed from the first 16 KiB only, line by line: a minified JSON trace or any file
  // without newlines is one line, and must not be read whole to look at its start.
  if (!CheckReadableFile(path).ok()) return false;  // refused as a trace, with the reason
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (f == nullptr) return false;
  std::string head(16 << 10, '\0');
  head.resize(std::fread(head.data(), 1, head.size(), f.get()));
  std::string_view rest(head);
  for (int i = 0; i < 50 && !rest.empty(); ++i) {
    const size_t eol = rest.find('\n');
    const std::string_view line = rest.substr(0, eol);
    if (line.starts_with("==PROF==")) return true;
    if (line.find("\"Metric Name\"") != std::string_view::npos) return true;
    if (!line.empty() && line[0] != '=') break;
    if (eol == std::string_view::npos) break;
    rest.remove_prefix(eol + 1);
  }
  return false;
}

StatusOr<std::string> AnalyzeNcuCsv(const std::string& path, const RenderOptions& f) {
  TS_ASSIGN_OR_RETURN(NcuReport r, ImportNcuCsv(path));
  static const char* kMetrics[] = {"Duration", "Compute (SM) Throughput", "Memory Throughput",
                                   "DRAM Throughput", "Achieved Occupancy", "Registers Per Thread",
                                   "Waves Per SM"};
  Table t;
  t.name = "ncu_kernels";
  t.title = "Nsight Compute kernels (" + std::to_string(r.kernels.size()) + " profiled)";
  t.columns = {"ID", "Grid", "Block"};
  for (const char* m : kMetrics) t.columns.push_back(m);
  t.columns.push_back("Name");
  for (const NcuKernel& k : r.kernels) {
    std::vector<Cell> row = {k.id, k.grid_size.empty() ? "-" : k.grid_size,
                             k.block_size.empty() ? "-" : k.block_size};
    for (const char* m : kMetrics) {
      const NcuMetric* metric = k.Find(m);
      if (metric == nullptr) row.push_back(std::string("(not in this CSV)"));
      else if (!metric->has_value) row.push_back(metric->raw.empty() ? std::string("n/a") : metric->raw);
      else row.push_back(metric->value);
    }
    row.push_back(k.name);
    t.AddRow(std::move(row));
  }
  if (r.implausible > 0) {
    t.notes.push_back(std::to_string(r.implausible) + " value(s) outside what the counter can take: shown as written, "
                      "not concluded from");
  }
  t.notes.push_back("rows read: " + std::to_string(r.rows) + ", malformed rows skipped: " +
                    std::to_string(r.malformed));
  for (const auto& n : r.notes) t.notes.push_back(n);
  if (f.format == OutputFormat::kJson) {
    nlohmann::json j;
    j["source"] = path;
    j["reports"] = nlohmann::json::array({TableToJson(t)});
    return ReportJsonText(j);
  }
  return Render({t}, f);
}

Table ImportStatsTable(const Trace& t) {
  Table s;
  s.name = "import_stats";
  s.title = "Import statistics";
  s.columns = {"Count", "Item"};
  s.AddRow({t.stats.bytes, std::string("bytes (uncompressed)")});
  s.AddRow({t.stats.events_read, std::string("entries read")});
  s.AddRow({t.stats.events_kept, std::string("timeline events kept")});
  s.AddRow({t.stats.metadata, std::string("metadata / flow entries")});
  s.AddRow({t.stats.malformed, std::string("malformed entries skipped")});
  for (const auto& [reason, n] : t.stats.malformed_reasons) s.AddRow({n, "  malformed: " + reason});
  if (t.stats.invalid_utf8 > 0) {
    s.AddRow({t.stats.invalid_utf8, std::string("invalid UTF-8 sequences replaced by U+FFFD")});
  }
  for (const auto& [cat, n] : t.stats.by_category) s.AddRow({n, "  category " + cat});
  for (const auto& [what, n] : t.stats.layout) s.AddRow({n, "  " + what});
  if (const Trace::ExecutionTraceJoin& et = t.execution_trace; !et.source.empty()) {
    s.AddRow({et.nodes, "execution trace nodes (" + et.source + ")"});
    s.AddRow({et.joined, "  operators joined to a node by record id (of " + std::to_string(et.ops) + ")"});
    s.AddRow({et.shapes_added, std::string("  operators given input shapes and types from it")});
  }
  if (!t.execution_trace.note.empty()) s.notes.push_back(t.execution_trace.note);
  for (const std::string& note : t.import_notes) s.notes.push_back(note);
  return s;
}

const Table* TraceAnalysis::Report(const std::string& name) const {
  for (const Table& t : reports) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void MarkReport(const TraceQuality& q, Table* table) {
  if (q.marked_reports.count(table->name) == 0) return;
  table->notes.push_back("MARKED: " + q.Line());
  if (const int64_t rows = MarkRows(q, table); rows > 0) {
    table->notes.push_back("MARKED: " + std::to_string(rows) + " row(s) rest on events that failed a check (the "
                           "Failed check column): their numbers are not to be concluded from");
  }
}

namespace {

// Computes all of `a` but its reports; calls `head` (a's other fields are final then), then
// hands each report, marked, to `each` in order, which may keep or drop it: the reports of
// a large trace need never be in memory together.
void AnalyzeEach(const Trace& t, const AnalysisOptions& o, TraceAnalysis& a, FunctionRef<void()> head,
                 FunctionRef<void(Table&)> each) {
  a.index = BuildIndex(t, o);
  // The verdict: first among the reports; the tables a failed check affects are marked, and
  // no finding comes from a rule that rests on what failed.
  a.quality = CheckTraceQuality(a.index);
  // A spilled trace's strings one step read leave memory before the next (trace.h).
  t.strings.ReleaseSpilled();
  // The roofline once for its two tables and its finding.
  const OpRoofline roofline = AnalyzeOpRoofline(a.index, o.device_spec);
  t.strings.ReleaseSpilled();
  a.gpu = AnalyzeGpuTime(a.index);  // once for its seven tables
  a.in_use = DeviceInUse(a.index);
  const auto kernels = KernelsByTime(a.index);
  if (!kernels.empty()) a.hottest_kernel = kernels.front().second;
  a.findings = Diagnose(a.index, o);
  if (std::optional<Finding> f = RooflineFinding(roofline)) {
    a.findings.push_back(std::move(*f));
    std::stable_sort(a.findings.begin(), a.findings.end(),
                     [](const Finding& x, const Finding& y) { return x.explained_ns > y.explained_ns; });
  }
  WithholdFindings(a.quality, &a.findings);
  t.strings.ReleaseSpilled();
  if (o.timeline) {
    // The command checked --step, so a step is found; a trace with no span has no timeline.
    StatusOr<nlohmann::json> timeline = BuildTimeline(a.index, o.step, roofline.device, {.max_events = o.timeline_events});
    a.timeline = timeline.ok() ? std::move(*timeline) : nlohmann::json{{"error", timeline.status().message()}};
    t.strings.ReleaseSpilled();
  }
  head();
  const auto hand = [&](Table table) {
    MarkReport(a.quality, &table);
    each(table);
    t.strings.ReleaseSpilled();
  };
  hand(ImportStatsTable(t));
  hand(TraceQualityTable(a.quality));
  for (const std::string& name : ReportNames()) {
    if (name == "trace_quality") continue;  // first, above
    if (name == "op_roofline") hand(OpRooflineTable(roofline));
    else if (name == "roofline_sum") hand(RooflineSumTable(roofline));
    else if (auto r = RunReport(a.index, name, o); r.ok()) hand(std::move(r).value());
  }
  if (o.critical_path) {
    const std::vector<CriticalPath> paths = AnalyzeCriticalPaths(a.index);
    hand(CriticalPathTable(paths));
    hand(CriticalPathEventsTable(a.index, paths));
  }
  const int rank = t.rank >= 0 ? t.rank : 0;
  for (Table& table : GpuTimeTables({{rank, &a.gpu}})) hand(std::move(table));
}

// Writes an analysis as it is made, in any format: the head (the trace, its verdict, and for
// JSON the findings), each report as it comes, then the tail. Byte for byte what rendering
// the whole analysis at once gave (JSON: nlohmann's sorted keys, 2-space indent).
// A document's reports written one at a time: entries of its JSON "reports" array (two
// levels deep), or text / CSV sections.
class ReportList {
 public:
  ReportList(std::ostream& out, const RenderOptions& f) : out_(out), f_(f) {}
  void Add(const Table& t) {
    if (f_.format == OutputFormat::kJson) {
      out_ << (tables_ == 0 ? "\n    " : ",\n    ");
      WriteTableJson(out_, t, 2);
    } else {
      WriteSection(out_, t, f_);
    }
    ++tables_;
  }
  // JSON: the array's end, as nlohmann writes it ("[]" when empty).
  void CloseJson() { out_ << (tables_ == 0 ? "]" : "\n  ]"); }

 private:
  std::ostream& out_;
  const RenderOptions f_;
  size_t tables_ = 0;
};

class AnalysisWriter {
 public:
  AnalysisWriter(std::ostream& out, const RenderOptions& f) : out_(out), f_(f), reports_(out, f) {}

  void Begin(const TraceAnalysis& a) {
    a_ = &a;
    if (f_.format == OutputFormat::kJson) {
      out_ << "{\n  \"findings\": " << JsonAt(FindingsToJson(a.findings), 1) << ",\n  \"quality\": "
           << JsonAt(a.quality.Line(), 1) << ",\n  \"reports\": [";
    } else if (f_.format == OutputFormat::kText) {
      out_ << Header(*a.index.trace, a.index) << a.quality.Line() << "\n\n";
    }
  }
  void Add(const Table& t) { reports_.Add(t); }
  void End() {
    const TraceAnalysis& a = *a_;
    if (f_.format == OutputFormat::kJson) {
      reports_.CloseJson();
      // The timeline on one line: its columns are long arrays of small numbers.
      if (!a.timeline.is_null()) out_ << ",\n  \"timeline\": " << a.timeline.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out_ << ",\n  \"trace\": " << JsonAt(TraceInfo(*a.index.trace), 1)
           << ",\n  \"unit\": " << JsonAt(a.index.unit_name, 1) << ",\n  \"units\": " << JsonAt(a.index.units.size(), 1)
           << "\n}\n";
    } else if (f_.format == OutputFormat::kText) {
      // No rule can fire on nothing: that is no diagnosis, not a clean bill.
      out_ << (a.index.trace->events.empty() ? "Diagnosis: none: the trace holds no timeline event.\n"
                                             : RenderFindings(a.findings));
    }
  }

 private:
  std::ostream& out_;
  const RenderOptions f_;
  const TraceAnalysis* a_ = nullptr;
  ReportList reports_;
};

}  // namespace

TraceAnalysis Analyze(const Trace& t, const AnalysisOptions& o) {
  TraceAnalysis a;
  AnalyzeEach(t, o, a, [] {}, [&](Table& table) { a.reports.push_back(std::move(table)); });
  return a;
}

std::string RenderAnalysis(const TraceAnalysis& a, const RenderOptions& f) {
  std::ostringstream out;
  AnalysisWriter w(out, f);
  w.Begin(a);
  for (const Table& t : a.reports) w.Add(t);
  w.End();
  return std::move(out).str();
}

void WriteAnalysis(std::ostream& out, const Trace& t, const AnalysisOptions& o, const RenderOptions& f) {
  TraceAnalysis a;
  AnalysisWriter w(out, f);
  AnalyzeEach(t, o, a, [&] { w.Begin(a); }, [&](Table& table) { w.Add(table); });
  w.End();
}

std::string AnalyzeTrace(const Trace& t, const AnalysisOptions& o, const RenderOptions& f) {
  std::ostringstream out;
  WriteAnalysis(out, t, o, f);
  return std::move(out).str();
}

StatusOr<std::string> TraceStats(const Trace& t, const std::vector<std::string>& reports,
                                 const AnalysisOptions& o, const RenderOptions& f) {
  const bool indexed = std::any_of(reports.begin(), reports.end(),
                                   [](const std::string& r) { return r != "import_stats"; });
  const TraceIndex x = indexed ? BuildIndex(t, o) : TraceIndex();
  // The reports a failed check affects are marked here as in analyze: a number stats prints
  // is the same claim.
  const TraceQuality quality = indexed ? CheckTraceQuality(x) : TraceQuality();
  std::optional<OpRoofline> roofline;  // once for both of its tables
  std::optional<std::vector<CriticalPath>> paths;
  // Each table written as it is made (JSON: "reports" first, as nlohmann sorts the keys).
  std::ostringstream out;
  if (f.format == OutputFormat::kJson) out << "{\n  \"reports\": [";
  ReportList list(out, f);
  const auto write = [&](Table tb) {
    if (tb.name != "trace_quality") MarkReport(quality, &tb);
    list.Add(tb);
  };
  for (const std::string& name : reports) {
    if (name == "import_stats") {
      write(ImportStatsTable(t));
      continue;
    }
    if (name == "op_roofline" || name == "roofline_sum") {
      if (!roofline) roofline = AnalyzeOpRoofline(x, o.device_spec);
      write(name == "op_roofline" ? OpRooflineTable(*roofline) : RooflineSumTable(*roofline));
      continue;
    }
    if (name == "critical_path" || name == "critical_path_events") {
      if (!paths) paths = AnalyzeCriticalPaths(x);
      write(name == "critical_path" ? CriticalPathTable(*paths) : CriticalPathEventsTable(x, *paths));
      continue;
    }
    TS_ASSIGN_OR_RETURN(Table tb, RunReport(x, name, o));
    write(std::move(tb));
    t.strings.ReleaseSpilled();  // a spilled trace's strings it read leave memory (trace.h)
  }
  if (f.format == OutputFormat::kJson) {
    list.CloseJson();
    out << ",\n  \"trace\": " << JsonAt(TraceInfo(t), 1) << "\n}\n";
  }
  return std::move(out).str();
}

TraceDiff DiffTraceAnalysis(const Trace& base, const Trace& next, const AnalysisOptions& o) {
  return DiffTraces(BuildIndex(base, o), BuildIndex(next, o));
}

std::string DiffTraceReport(const Trace& base, const Trace& next, const AnalysisOptions& o,
                            const RenderOptions& f) {
  return RenderDiff(DiffTraceAnalysis(base, next, o), base, next, f);
}

std::string RenderDiff(const TraceDiff& d, const Trace& base, const Trace& next, const RenderOptions& f) {
  const std::vector<Table> tables = {d.summary, d.operators, d.kernels, d.explained};
  if (f.format == OutputFormat::kJson) {
    nlohmann::json j;
    j["base"] = TraceInfo(base);
    j["new"] = TraceInfo(next);
    j["per_unit"] = d.per_unit;
    j["headline"] = d.headline;
    j["quality"] = {{"base", d.base_quality}, {"new", d.new_quality}, {"failed", d.quality_failed}};
    j["reports"] = nlohmann::json::array();
    for (const Table& tb : tables) j["reports"].push_back(TableToJson(tb));
    return ReportJsonText(j);
  }
  if (f.format == OutputFormat::kCsv) return Render(tables, f);
  std::string out = "base: " + Printable(base.source) + "\n  " + d.base_quality + "\nnew:  " +
                    Printable(next.source) + "\n  " + d.new_quality + "\n\n";
  for (const auto& h : d.headline) out += "  " + Printable(h) + "\n";  // names from the traces
  return out + "\n" + Render(tables, f);
}

}  // namespace tierscope
