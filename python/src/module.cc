// tierscope's Python module (_tierscope): the C++ importer and analyzer behind
// tierscope.read_trace / report / analyze / diff. Columns come back as NumPy arrays that
// own their buffers (filled in one pass over the events, no Python object per event);
// every report and analysis is the CLI's own, rendered as its JSON. Errors raise with the
// CLI's message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/analysis_html.h"
#include "analysis/commands.h"
#include "analysis/job.h"
#include "analysis/job_files.h"
#include "analysis/rank_summary.h"
#include "analysis/reports.h"
#include "analysis/table.h"
#include "trace/args.h"
#include "trace/json_input.h"
#include "trace/kineto_stream.h"
#include "trace/nsys_export.h"
#include "trace/trace.h"

namespace nb = nanobind;

namespace tierscope {
namespace {

// A loaded trace and, once a report asks, its index (which points into the trace).
class PyTrace {
 public:
  explicit PyTrace(Trace t) : trace_(std::make_unique<Trace>(std::move(t))) {}
  const Trace& trace() const { return *trace_; }
  const TraceIndex& index() {
    if (!index_) index_ = std::make_unique<TraceIndex>(BuildIndex(*trace_, options_));
    return *index_;
  }
  const AnalysisOptions& options() const { return options_; }
  // Its verdict, for marking the reports a failed check affects as the CLI marks them.
  const TraceQuality& quality() {
    if (!quality_) quality_ = std::make_unique<TraceQuality>(CheckTraceQuality(index()));
    return *quality_;
  }

 private:
  std::unique_ptr<Trace> trace_;
  AnalysisOptions options_;
  std::unique_ptr<TraceIndex> index_;
  std::unique_ptr<TraceQuality> quality_;
};

[[noreturn]] void Raise(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, s.message().c_str());
      throw nb::python_error();
    default:
      throw nb::value_error(s.message().c_str());
  }
}

template <typename T>
nb::object Column(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  const size_t n = owned->size();
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {n}, owner));
}

// The tables of read_trace: which kinds go where.
int TableOf(EventKind k) {
  switch (k) {
    case EventKind::kKernel: return 0;
    case EventKind::kOp: return 1;
    case EventKind::kRuntime: return 2;
    case EventKind::kMemcpy:
    case EventKind::kMemset: return 3;
    case EventKind::kAnnotation:
    case EventKind::kGpuAnnotation: return 4;
    case EventKind::kSync: return 5;
    case EventKind::kMemory: return 6;
    default: return 7;
  }
}
constexpr const char* kTables[] = {"kernels", "ops", "runtime", "memops", "annotations", "syncs", "memory", "other"};

struct Columns {
  std::vector<int64_t> index, ts, dur, correlation, external_id;
  std::vector<int32_t> name, pid, tid, kind;
  std::vector<double> v0, v1;
};

// A memory operation's bytes: the importer's value, else Kineto's "bytes" arg.
double Bytes(const Trace& t, const Event& e) {
  if (e.v0 > 0 || e.args < 0) return e.v0;
  return ArgNumber(t.strings.Get(e.args), "bytes").value_or(0);
}

// Every event's fields, table by table; names as codes into one list of distinct names.
nb::dict EventTables(const Trace& t) {
  std::vector<Columns> cols(std::size(kTables));
  std::vector<size_t> count(cols.size(), 0);
  for (const Event& e : t.events) ++count[static_cast<size_t>(TableOf(e.kind))];
  for (size_t c = 0; c < cols.size(); ++c) {
    for (auto* v : {&cols[c].index, &cols[c].ts, &cols[c].dur, &cols[c].correlation, &cols[c].external_id}) {
      v->reserve(count[c]);
    }
  }
  std::unordered_map<int32_t, int32_t> code;  // interned id -> dense code
  std::vector<std::string> names;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    Columns& c = cols[static_cast<size_t>(TableOf(e.kind))];
    auto [it, fresh] = code.try_emplace(e.name, static_cast<int32_t>(names.size()));
    if (fresh) names.emplace_back(e.name >= 0 ? t.strings.Get(e.name) : std::string_view());
    c.index.push_back(static_cast<int64_t>(i));
    c.ts.push_back(e.ts_ns);
    c.dur.push_back(e.dur_ns);
    c.correlation.push_back(e.correlation);
    c.external_id.push_back(e.external_id);
    c.name.push_back(it->second);
    c.pid.push_back(e.pid);
    c.tid.push_back(e.tid);
    c.kind.push_back(static_cast<int32_t>(e.kind));
    c.v0.push_back(e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset ? Bytes(t, e) : e.v0);
    c.v1.push_back(e.v1);
  }
  nb::dict out;
  for (size_t c = 0; c < cols.size(); ++c) {
    nb::dict d;
    d["index"] = Column(std::move(cols[c].index));
    d["ts"] = Column(std::move(cols[c].ts));
    d["dur"] = Column(std::move(cols[c].dur));
    d["name"] = Column(std::move(cols[c].name));
    d["pid"] = Column(std::move(cols[c].pid));
    d["tid"] = Column(std::move(cols[c].tid));
    d["correlation"] = Column(std::move(cols[c].correlation));
    d["external_id"] = Column(std::move(cols[c].external_id));
    d["kind"] = Column(std::move(cols[c].kind));
    d["value"] = Column(std::move(cols[c].v0));
    d["value2"] = Column(std::move(cols[c].v1));
    out[kTables[c]] = d;
  }
  std::vector<std::string> kinds;
  for (int k = 0; k <= static_cast<int>(EventKind::kOther); ++k) kinds.emplace_back(EventKindName(static_cast<EventKind>(k)));
  out["_names"] = nb::cast(names);
  out["_kinds"] = nb::cast(kinds);
  return out;
}

// Launch -> device event pairs (Kineto's ac2g flows), by correlation.
nb::dict Flows(PyTrace& p) {
  const TraceIndex& x = p.index();
  std::vector<int64_t> from, to, corr;
  for (const std::vector<size_t>* v : {&x.kernels, &x.memops}) {
    for (size_t k : *v) {
      const Event& e = x.E(k);
      if (e.correlation == 0) continue;
      auto it = x.runtime_by_corr.find(e.correlation);
      if (it == x.runtime_by_corr.end()) continue;
      from.push_back(static_cast<int64_t>(it->second));
      to.push_back(static_cast<int64_t>(k));
      corr.push_back(e.correlation);
    }
  }
  nb::dict d;
  d["launch_index"] = Column(std::move(from));
  d["device_index"] = Column(std::move(to));
  d["correlation"] = Column(std::move(corr));
  return d;
}

PyTrace ReadTrace(const std::string& path, const std::vector<std::string>& execution_traces) {
  StatusOr<Trace> t = [&] {
    nb::gil_scoped_release release;
    return LoadTrace(path, execution_traces);
  }();
  if (!t.ok()) Raise(t.status());
  return PyTrace(std::move(*t));
}

std::string Report(PyTrace& p, const std::string& name) {
  const TraceIndex& x = p.index();
  StatusOr<Table> t = RunReport(x, name, p.options());
  if (!t.ok()) Raise(t.status());
  if (t->name != "trace_quality") MarkReport(p.quality(), &*t);
  return TableToJson(*t).dump();
}

std::string AnalyzeOne(PyTrace& p) { return AnalyzeTrace(p.trace(), p.options(), OutputFormat::kJson); }

// `analyze --html`'s page: the analysis with its timeline and critical path (of `step`).
std::string PageOfTrace(PyTrace& p, const std::string& step) {
  AnalysisOptions o = p.options();
  o.timeline = o.critical_path = true;
  o.step = step;
  const std::string json = AnalyzeTrace(p.trace(), o, OutputFormat::kJson);
  if (!step.empty()) {
    const nlohmann::json t = nlohmann::json::parse(json)["timeline"];
    if (t.contains("error")) Raise(InvalidArgument(t["error"].get<std::string>()));
  }
  return RenderAnalysisPage(json);
}

std::string PageOfJob(const std::vector<std::string>& paths, int threads, const std::string& step) {
  AnalysisOptions o;
  o.timeline = o.critical_path = true;
  o.step = step;
  StatusOr<JobAnalysis> job = [&] {
    nb::gil_scoped_release release;
    return AnalyzeJobReports(paths, o, threads, nullptr);
  }();
  if (!job.ok()) Raise(job.status());
  return RenderAnalysisPage(RenderJob(*job, OutputFormat::kJson));
}

std::string AnalyzeFiles(const std::vector<std::string>& paths, int threads) {
  StatusOr<JobAnalysis> job = [&] {
    nb::gil_scoped_release release;
    return AnalyzeJob(paths, AnalysisOptions{}, threads, nullptr);
  }();
  if (!job.ok()) Raise(job.status());
  return RenderJob(*job, OutputFormat::kJson);
}

// A Dask worker's share of a job: one rank's trace read and reduced to its summary.
nb::bytes RankSummary(const std::string& path) {
  StatusOr<std::string> bytes = [&]() -> StatusOr<std::string> {
    nb::gil_scoped_release release;
    TS_ASSIGN_OR_RETURN(Trace t, LoadTrace(path));
    return SaveRankSummary(AnalyzeRank(t, AnalysisOptions{}));
  }();
  if (!bytes.ok()) Raise(bytes.status());
  return nb::bytes(bytes->data(), bytes->size());
}

// The client's share: the job from every rank's summary, as `analyze --format json`.
std::string JobFromSummaries(const std::vector<std::string>& files, const std::vector<nb::bytes>& summaries,
                             int workers) {
  std::vector<RankAnalysis> ranks;
  for (size_t i = 0; i < summaries.size(); ++i) {
    StatusOr<RankAnalysis> r = LoadRankSummary(std::string_view(summaries[i].c_str(), summaries[i].size()));
    if (!r.ok()) Raise(Status(r.status().code(), (i < files.size() ? files[i] + ": " : "") + r.status().message()));
    ranks.push_back(std::move(*r));
  }
  LoadPlan plan;
  plan.in_flight = workers;
  plan.why = "Dask: " + std::to_string(workers) + (workers == 1 ? " worker" : " workers");
  StatusOr<JobAnalysis> job = JobFromRanks(std::move(ranks), files, plan);
  if (!job.ok()) Raise(job.status());
  return RenderJob(*job, OutputFormat::kJson);
}

std::vector<std::string> ListJobFiles(const std::vector<std::string>& inputs) {
  StatusOr<std::vector<std::string>> files = JobFiles(inputs);
  if (!files.ok()) Raise(files.status());
  return *files;
}

// Each file's rank and its window of that rank (1-based, in time order) of how many:
// several files of one rank are its profiler cycles (AssignRankWindows).
std::vector<std::tuple<int, int, int>> RankWindows(const std::vector<std::string>& files,
                                                  const std::vector<std::tuple<int, int64_t, int64_t>>& spans) {
  std::vector<TraceWindow> windows;
  for (const auto& [rank, begin, end] : spans) windows.push_back({rank, begin, end});
  StatusOr<RankAssignment> a = AssignRankWindows(files, windows);
  if (!a.ok()) Raise(a.status());
  std::vector<std::tuple<int, int, int>> out(files.size());
  for (const std::vector<size_t>& group : a->windows) {
    for (size_t w = 0; w < group.size(); ++w) {
      out[group[w]] = {a->rank[group[w]], static_cast<int>(w) + 1, static_cast<int>(group.size())};
    }
  }
  return out;
}

std::string ExportSqlite(PyTrace& p, const std::string& out) {
  StatusOr<NsysExportStats> n = [&] {
    nb::gil_scoped_release release;
    return ExportNsysSqlite(p.trace(), out);
  }();
  if (!n.ok()) Raise(n.status());
  return std::to_string(n->kernels) + " kernels, " + std::to_string(n->runtime) + " runtime calls, " +
         std::to_string(n->ranges) + " NVTX ranges";
}

// `tierscope diff A/ B/` of two jobs.
std::string DiffJobs(const std::vector<std::string>& a, const std::vector<std::string>& b, int threads) {
  auto run = [&](const std::vector<std::string>& paths) {
    StatusOr<JobAnalysis> job = [&] {
      nb::gil_scoped_release release;
      return AnalyzeJob(paths, AnalysisOptions{}, threads, nullptr);
    }();
    if (!job.ok()) Raise(job.status());
    return std::move(*job);
  };
  const JobAnalysis base = run(a), next = run(b);
  return RenderJobDiff(base, next, OutputFormat::kJson);
}

std::string Diff(PyTrace& a, PyTrace& b) {
  for (const PyTrace* p : {&a, &b}) {
    if (Status s = CheckComparable(p->trace()); !s.ok()) Raise(s);
  }
  return DiffTraceReport(a.trace(), b.trace(), a.options(), OutputFormat::kJson);
}

}  // namespace
}  // namespace tierscope

NB_MODULE(_tierscope, m) {
  using tierscope::PyTrace;
  m.doc() = "tierscope's importer and analyzer (C++), for the tierscope package";
  nb::class_<PyTrace>(m, "NativeTrace")
      .def_prop_ro("source", [](const PyTrace& p) { return p.trace().source; })
      .def_prop_ro("format", [](const PyTrace& p) { return p.trace().format; })
      .def_prop_ro("rank", [](const PyTrace& p) { return p.trace().rank; })
      .def_prop_ro("window",
                   [](const PyTrace& p) {
                     const tierscope::TraceWindow w = tierscope::WindowOf(p.trace());
                     return std::make_tuple(w.trace_rank, w.begin_ns, w.end_ns);
                   })
      .def_prop_ro("world_size", [](const PyTrace& p) { return p.trace().world_size; })
      .def_prop_ro("device_name", [](const PyTrace& p) { return p.trace().device_name; })
      .def_prop_ro("events", [](const PyTrace& p) { return p.trace().events.size(); })
      .def_prop_ro("malformed", [](const PyTrace& p) { return p.trace().stats.malformed; })
      .def_prop_ro("skipped", [](const PyTrace& p) { return tierscope::SkippedEntries(p.trace()); })
      .def_prop_ro("execution_trace",
                   [](const PyTrace& p) {
                     const tierscope::Trace::ExecutionTraceJoin& j = p.trace().execution_trace;
                     nb::dict d;
                     d["source"] = j.source;
                     d["nodes"] = j.nodes;
                     d["ops"] = j.ops;
                     d["joined"] = j.joined;
                     d["shapes_added"] = j.shapes_added;
                     d["note"] = j.note;
                     return d;
                   })
      .def("tables", [](const PyTrace& p) { return tierscope::EventTables(p.trace()); })
      .def("flows", &tierscope::Flows)
      .def("report", &tierscope::Report)
      .def("analyze", &tierscope::AnalyzeOne)
      .def("page", &tierscope::PageOfTrace, nb::arg("step") = "")
      .def("export_sqlite", &tierscope::ExportSqlite);
  m.def("read_trace", &tierscope::ReadTrace, nb::arg("path"), nb::arg("execution_traces") = std::vector<std::string>{});
  m.def("analyze_files", &tierscope::AnalyzeFiles, nb::arg("paths"), nb::arg("threads") = 0);
  m.def("diff", &tierscope::Diff);
  m.def("page_of_job", &tierscope::PageOfJob, nb::arg("paths"), nb::arg("threads") = 0, nb::arg("step") = "");
  m.def("diff_jobs", &tierscope::DiffJobs, nb::arg("base"), nb::arg("new"), nb::arg("threads") = 0);
  m.def("rank_summary", &tierscope::RankSummary, nb::arg("path"));
  m.def("set_memory_budget", &tierscope::SetMemoryBudget, nb::arg("bytes"));
  m.def("memory_budget", &tierscope::MemoryBudget);
  m.def("estimated_bytes", &tierscope::EstimatedInputBytes, nb::arg("path"));
  m.def("streamed_trace_bytes", &tierscope::StreamedTraceBytes, nb::arg("json_bytes"), nb::arg("spilled"));
  m.def("spills_args", &tierscope::SpillsStrings);
  m.def("job_from_summaries", &tierscope::JobFromSummaries, nb::arg("files"), nb::arg("summaries"),
        nb::arg("workers"));
  m.def("job_files", &tierscope::ListJobFiles, nb::arg("inputs"));
  m.def("assign_rank_windows", &tierscope::RankWindows, nb::arg("files"), nb::arg("windows"));
  m.def("report_names", [] {
    std::vector<std::string> names;
    for (const auto& [name, title] : tierscope::ReportCatalog()) names.push_back(name);
    return names;
  });
}
