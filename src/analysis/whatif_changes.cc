// What-if's changes (whatif.h): parsing them, and each device event's time factor under
// the kernel, batch, units and precision changes (the models the README writes down).
#include "analysis/whatif_changes.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "analysis/gpu_time.h"
#include "analysis/kernel_names.h"
#include "analysis/perf_model.h"
#include "core/text.h"
#include "trace/args.h"

namespace tierscope {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

StatusOr<double> Number(const std::string& text, const std::string& value, double lo, double hi) {
  const std::optional<double> parsed = ParseDecimal(value);
  const double v = parsed.value_or(0);
  if (!parsed || v < lo || v > hi) {
    return InvalidArgument("--change '" + text + "': '" + value + "' must be a number in [" + FormatNumber(lo) + ", " +
                           FormatNumber(hi) + "]");
  }
  return v;
}

}  // namespace

StatusOr<WhatIfChange> ParseWhatIfChange(const std::string& text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument("--change '" + text + "': expected KEY=VALUE (gemm=0.5, kernel:NAME=0.5, launch=2, "
                           "sync=off, comm=overlap, cpu=0.8, batch=16, units=1, precision=bf16)");
  }
  WhatIfChange c;
  c.text = text;
  const std::string key = Lower(Trim(text.substr(0, eq))), value = Trim(text.substr(eq + 1));
  if (key.empty() || value.empty()) {
    return InvalidArgument("--change '" + text + "': expected KEY=VALUE with both sides non-blank");
  }
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
    // name:EXACT keeps its case (a kernel's whole name); every other selector is lower case.
    c.selector = key.rfind("name:", 0) == 0 ? "name:" + Trim(text.substr(0, eq)).substr(5)
                 : key.rfind("kernel:", 0) == 0 ? key.substr(7)
                                                : key;
    if (c.selector.empty() || c.selector == "name:") {
      return InvalidArgument("--change '" + text + "': kernel: and name: need a name to match");
    }
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
  // (INT8 whatever it writes: ..._bf16out), and attention over FP32 rows on the BF16 dot
  // kernels (cpu_attn_softmax_f32_bf16dot_...: FP32 bytes).
  if (n.find("_u8s8") != std::string::npos || n.find("_s8") != std::string::npos) return "signed char";
  if (n.find("_f32_bf16dot") != std::string::npos) return "float";
  if (n.find("_bf16") != std::string::npos) return "c10::BFloat16";
  if (n.find("_f16") != std::string::npos) return "c10::Half";
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
  if (selector.rfind("name:", 0) == 0) return name == std::string_view(selector).substr(5);  // exact
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

// Bytes an element of a Kineto dtype takes (TF32 is FP32 data).
double DtypeBytes(const std::string& dtype) { return dtype == "tf32" ? 4 : ElementBytes(dtype); }

// The roof's time (s) of `flops` and `bytes` at the peak for `dtype` (the vector peak for
// work that is not a matrix product), 0 when the device has no figure for it.
double RoofSeconds(const DeviceSpec& d, double flops, double bytes, const std::string& dtype, bool matrix) {
  double peak = matrix ? d.MatrixPeak(dtype) : (d.fp32_vector > 0 ? d.fp32_vector : d.fp32);
  if (peak <= 0) peak = d.fp32;  // no unit for the dtype: its arithmetic runs at FP32's
  const double compute = peak > 0 ? flops / (peak * 1e12) : 0;
  const double memory = d.memory_tbps > 0 ? bytes / (d.memory_tbps * 1e12) : 0;
  return std::max(compute, memory);
}

// The dtype a kernel's arithmetic runs in: tierscope's CPU engine converts FP16 to FP32
// before every FMA (a storage format there), so it computes at FP32's peak. BF16 stays BF16:
// the engine computes it in BF16 where the CPU has a BF16 dot (its calibrated spec's bf16
// peak), and a CPU without one has FP32's peak as its bf16 figure (its BF16 runs widen).
std::string ArithmeticDtype(const Trace& t, const std::string& dtype) {
  const bool engine_cpu = t.runtime == "cpu" && t.device_name.rfind("cpu", 0) == 0;
  const bool bf16 = Lower(dtype).find("bfloat16") != std::string::npos;  // as DeviceSpec::MatrixPeak reads it
  return engine_cpu && DtypeBytes(dtype) == 2 && !bf16 ? "float" : dtype;
}

}  // namespace

StatusOr<std::vector<double>> DeviceFactors(const TraceIndex& x, const std::vector<WhatIfChange>& changes,
                                            const std::optional<DeviceSpec>& spec, ChangeNotes* notes) {
  std::vector<double> factor(x.trace->events.size(), 1.0);
  const double units = static_cast<double>(x.trace->device_units);
  double k = 1, new_units = units;  // batch=K (K samples a launch) and units=N, combined
  std::vector<std::string> precisions;
  using K = WhatIfChange::Kind;
  for (const WhatIfChange& c : changes) {
    if ((c.kind == K::kBatch || c.kind == K::kUnits) && units <= 0) {
      return InvalidArgument("--change '" + c.text + "' needs the device's compute units, which the trace does not "
                             "record (deviceProperties numSms)");
    }
    if (c.kind == K::kPrecision && !spec) {
      const std::string why = x.trace->device_name.empty()
                                  ? "the trace names no device"
                                  : "the trace's device '" + Printable(x.trace->device_name) + "' is not in the table";
      return InvalidArgument("--change '" + c.text + "' needs the device's peaks: " + why + " (give --device-spec FILE)");
    }
    if (c.kind == K::kBatch) k *= c.value;
    if (c.kind == K::kUnits) new_units = c.value;
    if (c.kind == K::kPrecision) precisions.push_back(c.selector);
  }
  // What a kernel's name says, found once per name, and only for the changes that need it.
  struct NameFacts {
    bool matrix, weights_once;  // a matrix product; one that reads weights once whatever the batch
    std::string dtype;
  };
  std::unordered_map<int32_t, NameFacts> by_name;
  const auto facts_of = [&](const Event& e, std::string_view name) -> const NameFacts& {
    auto [it, fresh] = by_name.try_emplace(e.name);
    if (fresh) {
      const bool matrix = IsMatrixKernel(name);
      // A GEMM reads its weights once; attention and batched products have none.
      const std::string n = Lower(name);
      const bool weights_once = matrix && n.find("attn") == std::string::npos &&
                                n.find("attention") == std::string::npos && n.find("fmha") == std::string::npos &&
                                n.find("bmm") == std::string::npos && n.find("flash") == std::string::npos;
      it->second = {matrix, weights_once, KernelDtype(name)};
    }
    return it->second;
  };
  std::vector<int64_t> matched(changes.size(), 0);
  for (const std::vector<size_t>* list : {&x.kernels, &x.memops}) {
    for (size_t i : *list) {
      const Event& e = x.E(i);
      const std::string_view name = x.Name(i);
      double f = 1;
      bool selected = false;
      for (size_t c = 0; c < changes.size(); ++c) {
        if (changes[c].kind == K::kKernels && KernelMatches(x, i, changes[c].selector)) {
          f *= changes[c].value;
          ++matched[c];
          selected = true;
        }
      }
      const double t1 = static_cast<double>(e.dur_ns) * 1e-9;
      if (e.kind == EventKind::kKernel && t1 > 0 && (k != 1 || new_units != units)) {
        const std::vector<int64_t> grid = e.args >= 0 ? ArgDims(x.trace->strings.Get(e.args), "grid") : std::vector<int64_t>{};
        double blocks = grid.empty() ? 0 : 1;
        for (int64_t g : grid) blocks *= static_cast<double>(g);
        // K samples in one launch: K times the blocks in waves over the (new) units; no
        // grid: the time scales with the work. Per sample, 1/K of it.
        double merged = k * t1;
        if (blocks > 0) {
          merged = t1 * std::ceil(k * blocks / new_units) / std::ceil(blocks / units);
        } else {
          ++notes->no_grid;
        }
        if (k != 1 && spec && (e.v0 > 0 || e.v1 > 0)) {
          // No faster than the roof of K times the work on the units used; weights read once
          // keep their bytes, other bytes scale.
          const NameFacts& n = facts_of(e, name);
          const double roof = RoofSeconds(*spec, k * e.v0, n.weights_once ? e.v1 : k * e.v1,
                                          ArithmeticDtype(*x.trace, n.dtype), n.matrix);
          merged = std::max(merged, roof * units / new_units);
        }
        f *= merged / (k * t1);
      }
      const bool precise = e.kind == EventKind::kKernel && !selected && !precisions.empty();
      const NameFacts* facts = precise ? &facts_of(e, name) : nullptr;
      std::string from = precise ? facts->dtype : "";
      for (const std::string& p : precisions) {
        // A kernel a selector names takes its factor instead: a measured one (tier 3's).
        if (!precise) break;
        const bool matrix = facts->matrix;
        const std::string to = KinetoDtypeName(p);
        if (from.empty() || DtypeBytes(from) <= 0 || (e.v0 <= 0 && e.v1 <= 0)) {
          ++notes->no_dtype;
          break;
        }
        if (p == "int8" && !matrix) continue;  // INT8 quantizes matrix products only
        const double s = DtypeBytes(to) / DtypeBytes(from);
        const double before = RoofSeconds(*spec, e.v0, e.v1, ArithmeticDtype(*x.trace, from), matrix);
        const double after = RoofSeconds(*spec, e.v0, e.v1 * s, ArithmeticDtype(*x.trace, to), matrix);
        if (before > 0) f *= after / before;
        from = to;
      }
      factor[i] = f;
    }
  }
  for (size_t c = 0; c < changes.size(); ++c) {
    if (changes[c].kind == K::kKernels && matched[c] == 0) notes->unmatched.push_back(changes[c].text);
  }
  return factor;
}

}  // namespace tierscope
