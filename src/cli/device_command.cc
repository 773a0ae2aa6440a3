// `tierscope device`: the device's properties (as torch.cuda.get_device_properties shows
// them) and the peaks tier 3 measures against, as text or JSON.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "cli/command.h"
#include "core/cpu_info.h"
#include "core/text.h"
#include "inspect/calibration.h"
#include "trace/json_input.h"

namespace tierscope::cli {
namespace {

// "<family> GEMM variants: a, b (...)": the variants this CPU runs, and which runs: the
// first, or the one `env_var` forces (or that it names none, so runs refuse to start).
std::string VariantsLine(const char* family, const std::vector<std::string>& isas, const char* env_var) {
  std::string names;
  for (const std::string& v : isas) names += (names.empty() ? "" : ", ") + v;
  const char* env = std::getenv(env_var);
  const std::string forced = env != nullptr ? env : "";
  std::string how = std::string(" (the first runs; ") + env_var + "=<variant> forces another)";
  if (!forced.empty()) {
    how = std::find(isas.begin(), isas.end(), forced) != isas.end()
              ? " (in force: " + forced + ", by " + env_var + ")"
              : std::string(" (") + env_var + "=" + forced + " names none of them: runs refuse to start)";
  }
  return std::string(family) + " GEMM variants: " + names + how + "\n";
}

// The INT8 dot peak as a multiple of the FP32 FMA peak ("; 0.93x the FP32 FMA peak"): at
// most that much faster can the INT8 GEMMs run than the FP32 ones (on a Zen 1, under 1).
std::string Int8OverFp32(const MachinePeaks& peaks) {
  const std::string times = TimesFp32Peak(peaks.int8_ops, peaks.fp32_flops);
  return times.empty() ? "" : "; " + times;
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
                     {"int8_kernels", CpuInt8DotIsas()},
                     {"fp32_kernels", CpuFp32KernelIsas()},
                     {"bf16_kernels", CpuBf16KernelIsas()},
                     {"trace_json_kernel", OnDemandKernel()},
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
      "  INT8 dot        %s\n"
      "  memory (triad)  %8.1f GB/s on 1 thread, %8.1f on %d (3 arrays of %s; trials spread %.1f%%)\n"
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
      !peaks.int8_dot.empty()
          ? (std::to_string(static_cast<int>(peaks.int8_ops_1t / 1e9)) + " GOP/s on 1 thread, " +
             std::to_string(static_cast<int>(peaks.int8_ops / 1e9)) + " on " + std::to_string(peaks.threads) +
             " (" + peaks.int8_dot + ", a multiply-add counted 2" + Int8OverFp32(peaks) + ")")
                .c_str()
          : "not available (no AVX2)",
      peaks.mem_bw_1t / 1e9, peaks.mem_bw / 1e9, peaks.threads,
      FormatBytes(static_cast<double>(peaks.triad_array_bytes)).c_str(), peaks.mem_spread_pct,
      peaks.fp32_flops / peaks.mem_bw);
  std::string out = buf;
  out += VariantsLine("INT8", CpuInt8DotIsas(), "TIERSCOPE_INT8_KERNELS");
  out += VariantsLine("FP32", CpuFp32KernelIsas(), "TIERSCOPE_FP32_KERNELS");
  out += VariantsLine("BF16", CpuBf16KernelIsas(), "TIERSCOPE_BF16_KERNELS");
  out += std::string("trace reader: simdjson On-Demand, ") + OnDemandKernel() + " kernel\n";
  if (!peaks.remeasured_because.empty() && peaks.remeasured_because != "--recalibrate") {
    out += "measured again: " + peaks.remeasured_because + "\n";
  }
  if (!peaks.mem_note.empty()) out += "warning: memory (triad): " + peaks.mem_note + "\n";
  if (std::max(peaks.fp32_spread_pct, peaks.mem_spread_pct) > kNoisySpreadPct) {
    out += "warning: the trials spread more than " + std::to_string(static_cast<int>(kNoisySpreadPct)) +
           "%: other work shared the cores; measure again on a quiet machine (--recalibrate)\n";
  }
  if (!peaks.cache_path.empty()) out += "cache: " + peaks.cache_path + " (--recalibrate to measure again)\n";
  return out;
}

struct DeviceFlags {
  int threads = 0;
  std::string device = "cpu";
  bool recalibrate = false;
  std::string format = "text";
};

}  // namespace

void RegisterDevice(CLI::App& app, std::vector<Command>* out) {
  auto f = std::make_shared<DeviceFlags>();
  auto* dv = app.add_subcommand("device", "The device's properties and its measured peaks");
  dv->add_option("--threads", f->threads, "worker threads (0: all cores)")->capture_default_str();
  dv->add_option("--device", f->device, "cpu | cuda | cuda:N")->capture_default_str();
  dv->add_flag("--recalibrate", f->recalibrate, "measure the peaks again (a few seconds)");
  dv->add_option("--format", f->format, "text | json")->capture_default_str();
  out->push_back({dv, [f] {
                    if (f->format != "text" && f->format != "json") {
                      return Fail(InvalidArgument("--format must be text or json, got '" + f->format + "'"));
                    }
                    auto text = DeviceReport(f->device, f->threads, f->recalibrate, f->format == "json");
                    if (!text.ok()) return Fail(text.status());
                    std::cout << *text;
                    return 0;
                  }});
}

}  // namespace tierscope::cli
