// `tierscope kernel`: the workload with a KernelInspector attached, the machine's
// calibrated peaks, and the sections and recommendation of each profiled launch.
#include "inspect/kernel_run.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "analysis/commands.h"
#include "core/cpu_info.h"
#include "inspect/calibration.h"
#include "inspect/evidence.h"
#include "tierscope/version.h"
#include "trace/ncu_import.h"

namespace tierscope {
namespace {

// ", tensor FP16 X / BF16 Y GFLOP/s" for a GPU, "" for a CPU.
std::string TensorPeaksText(const MachinePeaks& p) {
  if (p.kind == "cpu") return "";
  char buf[128];
  std::snprintf(buf, sizeof(buf), ", tensor cores FP16 %.0f / BF16 %.0f GFLOP/s",
                p.fp16_tensor_flops / 1e9, p.bf16_tensor_flops / 1e9);
  return buf;
}

// "cached", "measured now", "measured now: <why a cache was not used>", or the note of a
// second measurement.
std::string PeaksOrigin(const MachinePeaks& p, const std::string& note) {
  if (!note.empty()) return note;
  if (p.from_cache) return "cached";
  if (p.remeasured_because.empty() || p.remeasured_because == "--recalibrate") return "measured now";
  return "measured now: " + p.remeasured_because;
}

std::string Join(const std::vector<std::string>& v, size_t limit) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < limit; ++i) out += "\n  " + v[i];
  if (v.size() > limit) out += "\n  ... (" + std::to_string(v.size() - limit) + " more)";
  return out;
}

StatusOr<KernelCommandResult> FromOtherTool(const KernelCommandOptions& o,
                                            const std::vector<std::string>& sections) {
  KernelCommandResult r;
  r.json["tool"] = "tierscope kernel";
  r.json["version"] = TIERSCOPE_VERSION;
  std::vector<std::string> skipped;  // what the CSV's or the trace's import skipped, said with the result
  if (!o.inspector.filter.name.empty()) {  // -c, -s and --replay-passes as for a workload
    TS_RETURN_IF_ERROR(KernelInspector::Create(o.inspector).status());
  }
  if (!o.ncu_csv.empty()) {
    TS_ASSIGN_OR_RETURN(const KernelNameMatcher matcher, KernelNameMatcher::Create(o.inspector.filter.name));
    TS_ASSIGN_OR_RETURN(NcuReport csv, ImportNcuCsv(o.ncu_csv));
    if (csv.malformed > 0 || csv.implausible > 0) {  // what it left out or set aside is said first
      const auto first = std::find_if(csv.notes.begin(), csv.notes.end(),
                                      [](const std::string& n) { return n.rfind("line ", 0) == 0; });
      std::string what;
      if (csv.malformed > 0) what = std::to_string(csv.malformed) + " malformed row(s) skipped";
      if (csv.implausible > 0) {
        what += (what.empty() ? "" : ", ") + std::to_string(csv.implausible) +
                " value(s) outside what the counter can take, not concluded from";
      }
      skipped.push_back(o.ncu_csv + ": " + what + (first == csv.notes.end() ? std::string() : " (first: " + *first + ")"));
    }
    std::optional<Trace> trace;  // the same workload's tier-2 trace, when given beside the CSV
    if (!o.trace.empty()) {
      TS_ASSIGN_OR_RETURN(Trace t, LoadTrace(o.trace));
      if (std::string n = SkippedEntries(t); !n.empty()) skipped.push_back(std::move(n));
      trace = std::move(t);
    }
    std::vector<std::string> names;
    for (const NcuKernel& k : csv.kernels) {
      names.push_back(k.name);
      if (!matcher.Matches(k.name)) continue;
      KernelEvidence e = EvidenceFromNcu(k, o.ncu_csv);
      if (trace) {
        StatusOr<KernelEvidence> from_trace = EvidenceFromTrace(*trace, k.name);
        if (!from_trace.ok()) {
          return NotFound("ncu's kernel " + k.name + " is not in " + o.trace +
                          ": is the trace of the same workload? (" + from_trace.status().message() + ")");
        }
        AddTraceEvidence(e, *from_trace);
      }
      r.reports.push_back(BuildKernelReport(e, sections));
    }
    if (r.reports.empty()) {
      if (csv.kernels.empty()) return NotFound(o.ncu_csv + ": the CSV has no kernels");
      return NotFound("no kernel in " + o.ncu_csv + " matches -k " + o.inspector.filter.name +
                      "; its kernels are:" + Join(names, 20));
    }
    r.json["source"] = o.ncu_csv;
    if (trace) r.json["trace"] = o.trace;
  } else {
    TS_ASSIGN_OR_RETURN(Trace t, LoadTrace(o.trace));
    TS_ASSIGN_OR_RETURN(KernelEvidence e, EvidenceFromTrace(t, o.inspector.filter.name));
    r.reports.push_back(BuildKernelReport(e, sections));
    r.json["source"] = o.trace;
    if (std::string n = SkippedEntries(t); !n.empty()) skipped.push_back(std::move(n));
  }
  r.json["reports"] = KernelReportsToJson(r.reports);
  r.text = RenderKernelReports(r.reports);
  for (auto it = skipped.rbegin(); it != skipped.rend(); ++it) r.text = "note: " + *it + "\n" + r.text;
  if (!skipped.empty()) r.json["input_notes"] = skipped;  // what it read is not all the input held
  return r;
}

// Tier 3 on PyTorch's run: the workload profiled through torch.profiler, then the chosen
// kernel's launch read from that trace (a replay is the native engine's; Nsight Compute's
// counters come through --ncu-csv).
StatusOr<KernelCommandResult> FromTorchRun(const KernelCommandOptions& o, const std::vector<std::string>& sections) {
  if (o.bench.device == "cpu") {
    return FailedPrecondition("--engine torch on the CPU: PyTorch records operators there, not kernels, so tier 3 has "
                              "no kernel to inspect (the native engine's kernels replay: --engine native)");
  }
  char dir[] = "/tmp/tierscope-kernel-XXXXXX";
  if (mkdtemp(dir) == nullptr) return FailedPrecondition(std::string("cannot make a temporary directory: ") + dir);
  struct Remove {
    std::string path;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } remove{dir};
  BenchOptions bench = o.bench;
  bench.profile = true;
  bench.trace_path = std::string(dir) + "/trace.json.gz";
  TS_ASSIGN_OR_RETURN(BenchReport rep, RunBench(bench));
  (void)rep;
  KernelCommandOptions k = o;
  k.trace = bench.trace_path;
  return FromOtherTool(k, sections);
}

}  // namespace

StatusOr<KernelCommandResult> RunKernelCommand(const KernelCommandOptions& o) {
  TS_ASSIGN_OR_RETURN(std::vector<std::string> sections, ParseSections(o.sections));
  if (!o.ncu_csv.empty() || !o.trace.empty()) return FromOtherTool(o, sections);
  if (o.bench.engine == "torch") return FromTorchRun(o, sections);

  TS_ASSIGN_OR_RETURN(auto inspector, KernelInspector::Create(o.inspector));
  TS_RETURN_IF_ERROR(ValidateBenchOptions(o.bench));
  BenchOptions bench = o.bench;
  bench.profile = false;
  bench.launch_hook = inspector.get();
  // The peaks of the device that ran the workload, measured (or read from the cache) on
  // its own backend once the workload is done, and that device's properties. A replay
  // above 100% of a peak is impossible: the peaks are measured again once, and if a
  // replay is still above them the reports say the calibration is not trustworthy.
  DeviceProps props;
  MachinePeaks peaks;
  std::string peaks_note;
  const PeakMeter& meter = o.meter != nullptr ? *o.meter : DefaultPeakMeter();
  bench.after_run = [&](Backend& backend) -> Status {
    props = backend.props();
    if (inspector->profiled().empty()) return OkStatus();  // an error follows below
    TS_ASSIGN_OR_RETURN(peaks, LoadOrMeasureDevicePeaks(backend, o.recalibrate, meter));
    for (const ProfiledLaunch& p : inspector->profiled()) {
      const KernelEvidence e = EvidenceFromReplay(p, *inspector, peaks, props, "");
      if (!AbovePeak(e)) continue;
      const ThroughputPct t = Throughput(e);
      const double pct = std::max(t.compute.value_or(0), t.memory.value_or(0));
      const char* origin = peaks.from_cache ? "cached" : "just measured";
      TS_ASSIGN_OR_RETURN(peaks, RemeasurePeaks(backend, peaks, meter));
      char buf[256];
      std::snprintf(buf, sizeof(buf), "re-measured once because %s ran at %.1f%% of the %s peaks",
                    p.kernel.c_str(), pct, origin);
      peaks_note = buf;
      peaks.remeasured_because = peaks_note;
      break;
    }
    return OkStatus();
  };
  TS_ASSIGN_OR_RETURN(BenchReport workload, RunBench(bench));
  const std::string filter = o.inspector.filter.name;
  if (inspector->profiled().empty()) {
    std::vector<std::string> matching;
    for (const std::string& n : inspector->kernel_names()) {
      if (inspector->Matches(n)) matching.push_back(n);
    }
    if (matching.empty()) {
      return NotFound("no kernel launched by this workload matches -k " + filter +
                      "; the kernels it launched are:" + Join(inspector->kernel_names(), 40));
    }
    return OutOfRange("-k " + filter + " matched launches, but --launch-skip " +
                      std::to_string(o.inspector.filter.skip) + " skipped all of them");
  }
  const std::string& device = workload.result.device;

  KernelCommandResult r;
  for (const ProfiledLaunch& p : inspector->profiled()) {
    KernelEvidence e = EvidenceFromReplay(p, *inspector, peaks, props, device);
    e.peaks_note = peaks_note;
    if (!peaks.mem_note.empty()) {  // the memory peak may be a cache's: the verdict says so
      e.peaks_note += (e.peaks_note.empty() ? "" : "; ") + std::string("memory peak: ") + peaks.mem_note;
    }
    r.reports.push_back(BuildKernelReport(e, sections));
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelTally& t : inspector->Tallies()) {
    kernels.push_back({{"kernel", t.kernel},
                       {"launches", t.launches},
                       {"total_ns", t.total_ns},
                       {"share", inspector->total_kernel_ns() > 0
                                     ? static_cast<double>(t.total_ns) /
                                           static_cast<double>(inspector->total_kernel_ns())
                                     : 0.0}});
  }
  r.json["tool"] = "tierscope kernel";
  r.json["version"] = TIERSCOPE_VERSION;
  r.peaks = peaks;
  r.workload = workload.result;
  r.json["workload"] = workload.result.ToJson();
  r.json["machine"] = peaks.ToJson();
  r.json["filter"] = {{"kernel", filter},
                      {"launch_skip", o.inspector.filter.skip},
                      {"launch_count", o.inspector.filter.count},
                      {"replay_passes", o.inspector.passes},
                      {"cache_control", o.inspector.flush_caches ? "all" : "none"}};
  r.json["launches"] = inspector->launches();
  r.json["kernels"] = kernels;
  r.json["reports"] = KernelReportsToJson(r.reports);

  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "==TIERSCOPE== %s on %s: %lld launches, %zu profiled with %d replay passes each "
                "(cache control: %s)\n==TIERSCOPE== peaks: FP32 %.0f GFLOP/s%s, memory %.1f GB/s (%s)\n\n",
                o.bench.mode.c_str(), device.c_str(), static_cast<long long>(inspector->launches()),
                inspector->profiled().size(), o.inspector.passes,
                o.inspector.flush_caches ? "all" : "none", peaks.fp32_flops / 1e9,
                TensorPeaksText(peaks).c_str(), peaks.mem_bw / 1e9,
                PeaksOrigin(peaks, peaks_note).c_str());
  r.text = buf + RenderKernelReports(r.reports);
  return r;
}

}  // namespace tierscope
