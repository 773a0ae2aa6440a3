// What-if's changes (whatif.h): parsing them, and each device event's time factor under
// the kernel, batch, units and precision changes (the models the README writes down).
#include "analysis/whatif_changes.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "analysis/gpu_time.h"
#include "analysis/kernel_names.h"
#include "core/text.h"
#include "trace/args.h"

namespace tierscope {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

StatusOr<double> Number(const std::string& text, const std::string& value, double lo, double hi) {
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used != value.size() || !std::isfinite(v) || v < lo || v > hi) {
    return InvalidArgument("--change '" + text + "': '" + value + "' must be a number in [" + FormatNumber(lo) + ", " +
                           FormatNumber(hi) + "]");
  }
  return v;
}

}  // namespace

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

StatusOr<WhatIfChange> ParseWhatIfChange(const std::string& text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument("--change '" + text + "': expected KEY=VALUE (gemm=0.5, kernel:NAME=0.5, launch=2, "
                           "sync=off, comm=overlap, cpu=0.8, batch=16, units=1, precision=bf16)");
  }
  WhatIfChange c;
  c.text = text;
  const std::string key = Lower(text.substr(0, eq)), value = text.substr(eq + 1);
  using K = WhatIfChange::Kind;
  if (key == "sync" || key == "comm") {
    const std::string want = key == "sync" ? "off" : "overlap";
    if (Lower(value) != want) return InvalidArgument("--change '" + text + "': " + key + " takes only " + want);
    c.kind = key == "sync" ? K::kSyncOff : K::kCommOverlap;
    return c;
  }
  if (key == "precision") {
    const std::string p = Lower(value);
    if (!OneOf(p, {"fp32", "tf32", "bf16", "fp16", "fp8", "int8"})) {
      return InvalidArgument("--change '" + text + "': precision must be fp32, tf32, bf16, fp16, fp8 or int8");
    }
    c.kind = K::kPrecision;
    c.selector = p;
    return c;
  }
  StatusOr<double> v = 0.0;
  if (key == "launch") {
    c.kind = K::kLaunch;
    v = Number(text, value, 0, 1e6);
  } else if (key == "cpu") {
    c.kind = K::kCpu;
    v = Number(text, value, 0, 1e3);
  } else if (key == "batch" || key == "units") {
    c.kind = key == "batch" ? K::kBatch : K::kUnits;
    v = Number(text, value, 1, 1 << 20);
    if (v.ok() && *v != std::floor(*v)) return InvalidArgument("--change '" + text + "': " + key + " must be a whole number");
  } else {
    c.kind = K::kKernels;
    c.selector = key.rfind("kernel:", 0) == 0 ? key.substr(7) : key;
    if (c.selector.empty()) return InvalidArgument("--change '" + text + "': kernel: needs a name to match");
    v = Number(text, value, 0, 1e3);
  }
  if (!v.ok()) return v.status();
  c.value = *v;
  return c;
}

std::string KernelDtype(std::string_view name) {
  if (const std::optional<KernelName> k = ParseKernelName(name); k && !k->dtype.empty()) return k->dtype;
  const std::string n = Lower(name);
  // tierscope's engine: cpu_sgemm_nt_f32_..., cpu_bgemm_nt_bf16_..., cpu_igemm_nt_u8s8_...
  if (n.find("_bf16") != std::string::npos) return "c10::BFloat16";
  if (n.find("_f16") != std::string::npos) return "c10::Half";
  if (n.find("_u8s8") != std::string::npos || n.find("_s8") != std::string::npos) return "int8";
  if (n.find("_f32") != std::string::npos) return "float";
  return "";
}

bool IsMatrixKernel(std::string_view name) {
  if (const std::optional<KernelName> k = ParseKernelName(name)) return true;
  const std::string n = Lower(name);
  return n.find("gemm") != std::string::npos || n.find("gemv") != std::string::npos;
}

bool KernelMatches(const TraceIndex& x, size_t event, const std::string& selector) {
  const std::string_view name = x.Name(event);
  const Event& e = x.E(event);
  const KernelType type = ClassifyDeviceEvent(e.kind, name);
  if (selector == "communication" || selector == "comm") return type == KernelType::kCommunication;
  if (selector == "memcpy") return e.kind == EventKind::kMemcpy;
  if (selector == "memset") return e.kind == EventKind::kMemset;
  if (const std::optional<KernelName> k = ParseKernelName(name)) {
    if (Lower(k->category).rfind(selector, 0) == 0) return true;
  }
  return Lower(name).find(selector) != std::string::npos;
}

namespace {

double DtypeBytes(const std::string& dtype) {
  const std::string t = Lower(dtype);
  if (t.find("bfloat16") != std::string::npos || t.find("half") != std::string::npos || t == "fp16" || t == "bf16") {
    return 2;
  }
  if (t.find("float8") != std::string::npos || t == "fp8" || t == "int8" || t.find("char") != std::string::npos) return 1;
  if (t == "double") return 8;
  return 4;
}

std::string KinetoDtype(const std::string& precision) {
  if (precision == "bf16") return "c10::BFloat16";
  if (precision == "fp16") return "c10::Half";
  if (precision == "fp8") return "c10::Float8_e4m3fn";
  if (precision == "int8") return "int8";
  if (precision == "tf32") return "tf32";
  return "float";
}

// The roof's time (s) of `flops` and `bytes` at the peak for `dtype` (the vector peak for
// work that is not a matrix product), 0 when the device has no figure for it.
double RoofSeconds(const DeviceSpec& d, double flops, double bytes, const std::string& dtype, bool matrix) {
  double peak = matrix ? d.MatrixPeak(dtype) : (d.fp32_vector > 0 ? d.fp32_vector : d.fp32);
  if (peak <= 0) peak = d.fp32;  // no unit for the dtype: its arithmetic runs at FP32's
  const double compute = peak > 0 ? flops / (peak * 1e12) : 0;
  const double memory = d.memory_tbps > 0 ? bytes / (d.memory_tbps * 1e12) : 0;
  return std::max(compute, memory);
}

// The dtype a kernel's arithmetic runs in: tierscope's CPU engine converts FP16 and BF16 to
// FP32 before every FMA (they are storage formats there), so they compute at FP32's peak.
std::string ArithmeticDtype(const Trace& t, const std::string& dtype) {
  const bool engine_cpu = t.runtime == "cpu" && t.device_name.rfind("cpu", 0) == 0;
  return engine_cpu && DtypeBytes(dtype) == 2 ? "float" : dtype;
}

}  // namespace

StatusOr<std::vector<double>> DeviceFactors(const TraceIndex& x, const std::vector<WhatIfChange>& changes,
                                            const std::optional<DeviceSpec>& spec, ChangeNotes* notes) {
  std::vector<double> factor(x.trace->events.size(), 1.0);
  const int64_t units = x.trace->device_units;
  for (const WhatIfChange& c : changes) {
    using K = WhatIfChange::Kind;
    if ((c.kind == K::kBatch || c.kind == K::kUnits) && units <= 0) {
      return InvalidArgument("--change '" + c.text + "' needs the device's compute units, which the trace does not "
                             "record (deviceProperties numSms)");
    }
    if (c.kind == K::kPrecision && !spec) {
      return InvalidArgument("--change '" + c.text + "' needs the device's peaks: the trace's device '" +
                             x.trace->device_name + "' is not in the table (give --device-spec FILE)");
    }
  }
  for (const std::vector<size_t>* list : {&x.kernels, &x.memops}) {
    for (size_t i : *list) {
      const Event& e = x.E(i);
      const std::string_view name = x.Name(i);
      double f = 1;
      const std::vector<int64_t> grid = e.args >= 0 ? ArgDims(x.trace->strings.Get(e.args), "grid") : std::vector<int64_t>{};
      int64_t blocks = grid.empty() ? 0 : 1;
      for (int64_t g : grid) blocks *= g;
      const double t1 = static_cast<double>(e.dur_ns) * 1e-9;
      const bool matrix = IsMatrixKernel(name);
      std::string dtype = KernelDtype(name);
      for (const WhatIfChange& c : changes) {
        using K = WhatIfChange::Kind;
        if (c.kind == K::kKernels && KernelMatches(x, i, c.selector)) f *= c.value;
        if (c.kind == K::kUnits && e.kind == EventKind::kKernel) {
          if (blocks <= 0) {
            ++notes->no_grid;
            continue;
          }
          const double now = std::ceil(static_cast<double>(blocks) / static_cast<double>(units));
          f *= std::ceil(static_cast<double>(blocks) / c.value) / now;
        }
        if (c.kind == K::kBatch && e.kind == EventKind::kKernel && t1 > 0) {
          // K samples in one launch: K times the blocks in waves over the units, and no
          // faster than the roof of K times the work; per sample, 1/K of that.
          const double k = c.value;
          double merged = k * t1;  // no grid: the time scales with the work
          if (blocks > 0) {
            const double u = static_cast<double>(units), b = static_cast<double>(blocks);
            merged = t1 * std::ceil(k * b / u) / std::ceil(b / u);
          } else {
            ++notes->no_grid;
          }
          if (spec && (e.v0 > 0 || e.v1 > 0)) {
            // A matrix product reads its weights once, whatever the batch: its bytes stay.
            const double bytes = matrix ? e.v1 : k * e.v1;
            merged = std::max(merged, RoofSeconds(*spec, k * e.v0, bytes, dtype, matrix));
          }
          f *= merged / (k * t1);
        }
        if (c.kind == K::kPrecision && e.kind == EventKind::kKernel) {
          const std::string to = KinetoDtype(c.selector);
          if (dtype.empty() || (e.v0 <= 0 && e.v1 <= 0)) {
            ++notes->no_dtype;
            continue;
          }
          if (c.selector == "int8" && !matrix) continue;  // INT8 quantizes matrix products only
          const double s = DtypeBytes(to) / DtypeBytes(dtype);
          const double before = RoofSeconds(*spec, e.v0, e.v1, ArithmeticDtype(*x.trace, dtype), matrix);
          const double after = RoofSeconds(*spec, e.v0, e.v1 * s, ArithmeticDtype(*x.trace, to), matrix);
          if (before > 0) f *= after / before;
          dtype = to;
        }
      }
      factor[i] = f;
    }
  }
  return factor;
}

}  // namespace tierscope
