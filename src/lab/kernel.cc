// `tierscope kernel`: the workload with a KernelInspector attached, the machine's
// calibrated peaks, and the sections and recommendation of each profiled launch.
#include "lab/kernel.h"

#include <algorithm>
#include <cstdio>

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
  if (!o.inspector.filter.name.empty()) {  // -c, -s and --replay-passes as for a workload
    TS_RETURN_IF_ERROR(KernelInspector::Create(o.inspector).status());
  }
  if (!o.ncu_csv.empty()) {
    TS_ASSIGN_OR_RETURN(const KernelNameMatcher matcher, KernelNameMatcher::Create(o.inspector.filter.name));
    TS_ASSIGN_OR_RETURN(NcuReport csv, ImportNcuCsv(o.ncu_csv));
    std::vector<std::string> names;
    for (const NcuKernel& k : csv.kernels) {
      names.push_back(k.name);
      if (!matcher.Matches(k.name)) continue;
      r.reports.push_back(BuildKernelReport(EvidenceFromNcu(k, o.ncu_csv), sections));
    }
    if (r.reports.empty()) {
      if (csv.kernels.empty()) return NotFound(o.ncu_csv + ": the CSV has no kernels");
      return NotFound("no kernel in " + o.ncu_csv + " matches -k " + o.inspector.filter.name +
                      "; its kernels are:" + Join(names, 20));
    }
    r.json["source"] = o.ncu_csv;
  } else {
    TS_ASSIGN_OR_RETURN(Trace t, LoadTrace(o.trace));
    TS_ASSIGN_OR_RETURN(KernelEvidence e, EvidenceFromTrace(t, o.inspector.filter.name));
    r.reports.push_back(BuildKernelReport(e, sections));
    r.json["source"] = o.trace;
  }
  r.json["reports"] = KernelReportsToJson(r.reports);
  r.text = RenderKernelReports(r.reports);
  return r;
}

}  // namespace

StatusOr<KernelCommandResult> RunKernelCommand(const KernelCommandOptions& o) {
  TS_ASSIGN_OR_RETURN(std::vector<std::string> sections, ParseSections(o.sections));
  if (!o.ncu_csv.empty() && !o.trace.empty()) {
    return InvalidArgument("give --ncu-csv or --trace, not both");
  }
  if (!o.ncu_csv.empty() || !o.trace.empty()) return FromOtherTool(o, sections);

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
  const std::string device = workload.result.value("device", std::string());

  KernelCommandResult r;
  for (const ProfiledLaunch& p : inspector->profiled()) {
    KernelEvidence e = EvidenceFromReplay(p, *inspector, peaks, props, device);
    e.peaks_note = peaks_note;
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
  r.json["workload"] = workload.result;
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

StatusOr<std::string> DeviceReport(const std::string& device, int threads, bool recalibrate,
                                   bool json) {
  if (device != "cpu") {
    // A GPU: torch.cuda.get_device_properties' fields, and its peaks measured by its own
    // kernels (cached per GPU model).
    TS_ASSIGN_OR_RETURN(auto gpu, CreateBackend(device, threads));
    const DeviceProps& p = gpu->props();
    TS_ASSIGN_OR_RETURN(MachinePeaks peaks, LoadOrMeasureDevicePeaks(*gpu, recalibrate));
    if (json) {
      nlohmann::json j{{"name", p.name},
                       {"kind", p.kind},
                       {"arch", p.arch},
                       {"multi_processor_count", p.compute_units},
                       {"max_threads_per_multi_processor", p.max_threads_per_unit},
                       {"max_blocks_per_multi_processor", p.max_blocks_per_unit},
                       {"regs_per_multiprocessor", p.regs_per_unit},
                       {"shared_memory_per_multiprocessor", p.shared_per_unit},
                       {"warp_size", p.warp_size},
                       {"L2_cache_size", p.l2_bytes},
                       {"total_memory", p.total_memory},
                       {"peaks", peaks.ToJson()},
                       {"peaks_cache", peaks.cache_path}};
      return j.dump(2) + "\n";
    }
    char buf[1024];
    std::snprintf(buf, sizeof(buf),
                  "_CudaDeviceProperties(name='%s', %s, total_memory=%lldMB, "
                  "multi_processor_count=%d, max_threads_per_multi_processor=%d, "
                  "max_blocks_per_multi_processor=%d, regs_per_multiprocessor=%d, "
                  "shared_memory_per_multiprocessor=%lldKB, warp_size=%d, L2_cache_size=%lldMB)\n"
                  "measured peaks (%s%s):\n"
                  "  FP32 FMA              %10.1f GFLOP/s (%d SMs)\n"
                  "  FP16 tensor-core GEMM %10.1f GFLOP/s (FP32 accumulation)\n"
                  "  BF16 tensor-core GEMM %10.1f GFLOP/s (FP32 accumulation)\n"
                  "  memory (triad)        %10.1f GB/s\n"
                  "  ridge point           %10.2f FLOP/byte (FP32), %.2f (BF16 tensor)\n",
                  p.name.c_str(), p.arch.c_str(), static_cast<long long>(p.total_memory >> 20),
                  p.compute_units, p.max_threads_per_unit, p.max_blocks_per_unit, p.regs_per_unit,
                  static_cast<long long>(p.shared_per_unit >> 10), p.warp_size,
                  static_cast<long long>(p.l2_bytes >> 20), peaks.from_cache ? "cached " : "measured ",
                  peaks.measured_at.c_str(), peaks.fp32_flops / 1e9, peaks.threads,
                  peaks.fp16_tensor_flops / 1e9, peaks.bf16_tensor_flops / 1e9, peaks.mem_bw / 1e9,
                  peaks.fp32_flops / peaks.mem_bw, peaks.bf16_tensor_flops / peaks.mem_bw);
    std::string out = buf;
    if (!peaks.cache_path.empty()) out += "cache: " + peaks.cache_path + " (--recalibrate to measure again)\n";
    return out;
  }
  TS_ASSIGN_OR_RETURN(auto backend, CreateCpuBackend(threads));
  const DeviceProps& props = backend->props();
  TS_ASSIGN_OR_RETURN(MachinePeaks peaks, LoadOrMeasurePeaks(props.compute_units, recalibrate));
  std::string features;
  const auto add = [&](bool has, const char* name) {
    if (!has) return;
    if (!features.empty()) features += ' ';
    features += name;
  };
  for (const char* flag : {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
                           "avx_vnni", "amx_tile"}) {
    add(CpuHasFlag(flag), flag);
  }
  if (json) {
    nlohmann::json j{{"name", props.name},
                     {"kind", props.kind},
                     {"compute_units", props.compute_units},
                     {"total_memory", props.total_memory},
                     {"features", features},
                     {"peaks", peaks.ToJson()},
                     {"peaks_cache", peaks.cache_path}};
    return j.dump(2) + "\n";
  }
  char buf[1536];
  std::snprintf(
      buf, sizeof(buf),
      "_DeviceProperties(name='%s', kind='%s', compute_units=%d, total_memory=%lldMB, "
      "features='%s')\n"
      "measured peaks (%s%s; best of %d trials after a warm-up):\n"
      "  FP32 FMA        %8.1f GFLOP/s on 1 thread, %8.1f on %d (%s; trials spread %.1f%%)\n"
      "  BF16 dot        %s\n"
      "  memory (triad)  %8.1f GB/s on 1 thread, %8.1f on %d (trials spread %.1f%%)\n"
      "  ridge point     %8.2f FLOP/byte (FP32)\n",
      props.name.c_str(), props.kind.c_str(), props.compute_units,
      static_cast<long long>(props.total_memory >> 20), features.c_str(),
      peaks.from_cache ? "cached " : "measured ", peaks.measured_at.c_str(), peaks.trials,
      peaks.fp32_flops_1t / 1e9, peaks.fp32_flops / 1e9, peaks.threads, peaks.isa.c_str(),
      peaks.fp32_spread_pct,
      peaks.bf16_dot ? (std::to_string(static_cast<int>(peaks.bf16_flops_1t / 1e9)) +
                        " GFLOP/s on 1 thread, " + std::to_string(static_cast<int>(peaks.bf16_flops / 1e9)) +
                        " on " + std::to_string(peaks.threads)).c_str()
                     : "not available (no AVX512_BF16: BF16 runs at the FP32 peak)",
      peaks.mem_bw_1t / 1e9, peaks.mem_bw / 1e9, peaks.threads, peaks.mem_spread_pct,
      peaks.fp32_flops / peaks.mem_bw);
  std::string out = buf;
  if (!peaks.remeasured_because.empty() && peaks.remeasured_because != "--recalibrate") {
    out += "measured again: " + peaks.remeasured_because + "\n";
  }
  if (std::max(peaks.fp32_spread_pct, peaks.mem_spread_pct) > kNoisySpreadPct) {
    out += "warning: the trials spread more than " + std::to_string(static_cast<int>(kNoisySpreadPct)) +
           "%: other work shared the cores; measure again on a quiet machine (--recalibrate)\n";
  }
  if (!peaks.cache_path.empty()) out += "cache: " + peaks.cache_path + " (--recalibrate to measure again)\n";
  return out;
}

}  // namespace tierscope
