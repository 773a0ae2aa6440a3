// Per-op roofline: leaf attribution of kernel time, the nearest modelled op, the roof.
#include "analysis/op_roofline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/gpu_time.h"
#include "analysis/kernel_names.h"
#include "analysis/perf_model.h"
#include "analysis/profilers.h"
#include "core/text.h"
#include "trace/args.h"

namespace tierscope {
namespace {

constexpr double kTarget = 0.8;  // "could save": the time at 80% of the roof
// No kernel finishes faster than this, whatever its work: launch and tail latency. A call's
// time at its roof is never counted below it (32-element ops are not "far from the roof").
constexpr double kMinKernelNs = 2000;

struct Modelled {
  bool done = false;
  std::optional<OpWork> work;
};

// ParseKernelName, and its label, once a distinct name.
class KernelNames {
 public:
  const std::optional<KernelName>& Of(std::string_view name) { return Memo(name).parsed; }
  // Its label ("" for a name that says nothing), alive as long as this object.
  std::string_view Label(std::string_view name) { return Memo(name).label; }

 private:
  struct Parsed {
    std::optional<KernelName> parsed;
    std::string label;
  };
  const Parsed& Memo(std::string_view name) {
    auto [it, fresh] = memo_.try_emplace(name);
    if (fresh) {
      it->second.parsed = ParseKernelName(name);
      if (it->second.parsed) it->second.label = it->second.parsed->Label();
    }
    return it->second;
  }
  std::unordered_map<std::string_view, Parsed> memo_;  // nodes: references stay valid
};

// The work a kernel recorded itself (tierscope's engine: its LaunchDesc's FLOPs and bytes,
// the counts tier 3 uses), for an op no shape model covers; its kind from the kernel's name.
OpWork RecordedWork(std::string_view kernel, double flops, double bytes) {
  const auto has = [&](std::string_view s) { return kernel.find(s) != std::string_view::npos; };
  OpWork w;
  const bool bwd = has("bwd") || has("backward");
  w.category = has("gemm") ? "GEMM" : has("attention") || has("attn") ? (bwd ? "SDPA_bwd" : "SDPA_fwd")
             : has("norm") ? "NORM_fwd"
             : has("softmax") ? "softmax" : has("embedding") ? "embedding" : "elementwise";
  w.matrix = w.category == "GEMM" || w.category.starts_with("SDPA");
  // tierscope's CPU engine names FP32 arithmetic over 16-bit weights "_wbf16"/"_wf16",
  // INT8 sums "_u8s8", and FP32 rows also written as INT8 codes "_u8out" (not INT8 math).
  w.dtype = has("_wbf16") || has("_wf16") ? "float"
          : has("bf16") ? "c10::BFloat16" : has("_s8") || has("_u8s8") || has("int8") ? "signed char"
          : has("f16") ? "c10::Half" : "float";
  w.flops = flops;
  w.bytes = bytes;
  w.params = "recorded by its kernels";
  return w;
}

// A row of device work no modelled op accounts for: its category from its op's name when
// that names a family (a convolution whose top kernel is an implicit GEMM stays a
// convolution), else from what its top kernel's name says — a vendor GEMM, convolution or
// attention, or ATen's own elementwise, reduction and multi-tensor kernels (TraceLens's rule).
void NameByKernel(std::string_view op, const std::optional<KernelName>& k, OpRooflineRow& row) {
  const std::string_view by_name = OpCategory(op);
  if (!by_name.empty()) row.category = std::string(by_name);
  if (k) {
    if (by_name.empty()) row.category = k->category;
    row.params = "kernel name: " + k->Label() + " (no shape recorded)";
    return;
  }
  const std::string_view top = row.top_kernel;
  if (!by_name.empty() || !top.starts_with("void at::native")) return;
  const auto has = [&](std::string_view s) { return top.find(s) != std::string_view::npos; };
  row.category = has("elementwise") ? "elementwise" : has("reduce") ? "reduce"
               : has("multi_tensor_apply") ? "multi_tensor_apply" : row.category;
}

std::string DeviceNote(const std::optional<DeviceSpec>& d, const std::string& device_name) {
  if (d) return d->name + " (" + d->matched_by + "; " + d->source + ")";
  return (device_name.empty() ? std::string("the trace names no device")
                              : "'" + device_name + "' is not in the device table") +
         ": no roof; give its peaks with --device-spec FILE.json";
}

std::string TopKernel(const std::map<std::string_view, double>& kernels) {
  std::string top;
  double best = -1;
  for (const auto& [k, ns] : kernels) {
    if (ns > best) best = ns, top = std::string(k);
  }
  return top;
}

// The roof of a modelled row at its intensity, its share of it and what 80% would save.
void PlaceOnRoof(const DeviceSpec& d, const OpWork& work, const std::optional<KernelName>& kernel, OpRooflineRow& row) {
  const double bw = d.memory_tbps * 1e12;
  // FP32 matrix work on TF32 units (cuDNN's default for convolutions, allow_tf32 for
  // matmuls) is measured against the TF32 peak, as its kernel's name says.
  const std::string dtype = work.dtype == "float" && kernel && kernel->dtype == "tf32" ? "tf32" : work.dtype;
  const double peak = 1e12 * (work.matrix ? d.MatrixPeak(dtype) : d.fp32_vector);
  const double secs = row.kernel_ns * 1e-9, calls = static_cast<double>(row.calls);
  if (row.flops > 0 && peak > 0) {
    row.roof_flops = std::min(peak, row.flops / row.bytes * bw);
    row.percent_of_roof = 100.0 * row.flops * calls / secs / row.roof_flops;
    row.saving_ns = std::max(0.0, row.kernel_ns - std::max(calls * kMinKernelNs,
                                                            1e9 * row.flops * calls / (kTarget * row.roof_flops)));
  } else if (row.flops == 0) {
    row.roof_flops = bw;  // bytes only: the memory roof
    row.percent_of_roof = 100.0 * row.bytes * calls / secs / bw;
    row.saving_ns =
        std::max(0.0, row.kernel_ns - std::max(calls * kMinKernelNs, 1e9 * row.bytes * calls / (kTarget * bw)));
  }
  row.impossible = row.percent_of_roof > 100.0;
  if (row.impossible) row.saving_ns = 0;  // no conclusion from an impossible figure
}

// A leaf op with device time and the op its time is counted under.
struct Owned {
  size_t leaf, owner;
  bool modelled;  // the owner has a model
};

// A leaf lifted to a modelled ancestor stays at itself (an unmodelled row) when another
// leaf's owner is a modelled op strictly below that ancestor: the ancestor's work is split.
void KeepSplitWorkApart(const std::vector<int64_t>& parents, std::vector<Owned>& owned) {
  std::unordered_set<size_t> split;  // ops with a modelled owner strictly below them
  for (const Owned& o : owned) {
    if (!o.modelled) continue;
    for (int64_t a = parents[o.owner]; a >= 0; a = parents[static_cast<size_t>(a)]) {
      if (!split.insert(static_cast<size_t>(a)).second) break;  // its ancestors are in already
    }
  }
  for (Owned& o : owned) {
    if (o.owner != o.leaf && split.count(o.owner) != 0) o.owner = o.leaf, o.modelled = false;
  }
}

// Device work no op launched: by (launch call, what its kernel's name says); "" for kernels
// with neither an op nor a launch (GPU-only traces).
struct Launched {
  double ns = 0;
  std::unordered_set<size_t> calls;
  std::map<std::string_view, double> kernels;
};
using ByLaunch = std::map<std::pair<std::string_view, std::string_view>, Launched>;  // (call, label)

void AddUnattributedRows(const ByLaunch& by_launch, KernelNames& names, OpRoofline& r) {
  for (const auto& [key, launched] : by_launch) {
    const auto& [call, label] = key;
    OpRooflineRow row;
    row.name = call.empty() ? "(kernels with no launch recorded)" : std::string(call);
    row.category = IsGraphLaunch(call) ? "graph" : "other";
    row.calls = static_cast<int64_t>(launched.calls.size());
    row.kernel_ns = launched.ns;
    row.top_kernel = TopKernel(launched.kernels);
    if (!label.empty() || !IsGraphLaunch(call)) NameByKernel({}, names.Of(row.top_kernel), row);
    if (!call.empty()) r.attributed_ns += launched.ns;
    r.rows.push_back(std::move(row));
  }
}

}  // namespace

OpRoofline AnalyzeOpRoofline(const TraceIndex& x, const std::optional<DeviceSpec>& spec) {
  OpRoofline r;
  const Trace& t = *x.trace;
  r.device = spec ? spec : FindDeviceSpec(t.device_name, t.device_units, t.device_memory);
  r.device_note = DeviceNote(r.device, t.device_name);
  // Device time (kernels, copies, sets) by the External id of the op that launched it,
  // and by kernel name; work no op launched (a graph's replay) by its runtime call.
  std::unordered_set<int64_t> op_ids;
  for (size_t i : x.ops) {
    if (x.E(i).external_id != 0) op_ids.insert(x.E(i).external_id);
  }
  std::unordered_map<int64_t, double> by_ext, copies_by_ext;  // copies: copies and sets, by any name
  // FLOPs and bytes the kernels themselves recorded (tierscope's engine does), by op.
  std::unordered_map<int64_t, std::pair<double, double>> recorded_by_ext;
  std::unordered_map<int64_t, std::map<std::string_view, double>> kernels_by_ext;
  DeviceEventTypes types(x);
  // Work no op launched: by (launch call, what its kernel's name says), and kernels with
  // neither an op nor a launch (GPU-only traces) by what their names say.
  KernelNames names;
  ByLaunch by_launch;
  for (const std::vector<size_t>* list : {&x.kernels, &x.memops}) {
    for (size_t i : *list) {
      const Event& k = x.E(i);
      r.kernel_ns += static_cast<double>(k.dur_ns);
      if (k.external_id != 0 && op_ids.count(k.external_id) != 0) {
        by_ext[k.external_id] += static_cast<double>(k.dur_ns);
        if (types.Of(i) == KernelType::kMemory) copies_by_ext[k.external_id] += static_cast<double>(k.dur_ns);
        else kernels_by_ext[k.external_id][x.Name(i)] += static_cast<double>(k.dur_ns);
        if (k.kind == EventKind::kKernel && (k.v0 > 0 || k.v1 > 0)) {
          auto& [f, b] = recorded_by_ext[k.external_id];
          f += k.v0, b += k.v1;
        }
      } else {
        const auto it = k.correlation != 0 ? x.runtime_by_corr.find(k.correlation) : x.runtime_by_corr.end();
        const bool launched = it != x.runtime_by_corr.end();
        const std::string_view label =
            types.Of(i) == KernelType::kComputation ? names.Label(x.Name(i)) : std::string_view();
        Launched& l = by_launch[{launched ? x.Name(it->second) : std::string_view(), label}];
        l.ns += static_cast<double>(k.dur_ns);
        if (launched) l.calls.insert(it->second);
        l.kernels[x.Name(i)] += static_cast<double>(k.dur_ns);
      }
    }
  }
  const std::vector<int64_t> parents = OpParents(x);
  std::unordered_map<size_t, Modelled> memo;
  const auto model = [&](size_t i) -> const std::optional<OpWork>& {
    Modelled& m = memo[i];
    if (!m.done) {
      m.done = true;
      const Event& e = x.E(i);
      if (e.args >= 0) {
        if (std::optional<OpInputs> in = ReadOpInputs(t.strings.Get(e.args))) m.work = ModelOp(x.Name(i), *in);
      }
    }
    return m.work;
  };
  struct Group {
    OpRooflineRow row;
    double copy_ns = 0;  // of row.kernel_ns: copies and sets (no HBM roof, no kernel profiler)
    std::map<std::string_view, double> kernels;
    std::optional<OpWork> work;
    double recorded_flops = 0, recorded_bytes = 0;  // all calls'
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Group> groups;
  std::unordered_map<size_t, bool> counted;  // owner ops already counted as a call
  // Each leaf with device time under the nearest op at or above it that has a model (the
  // leaf when none has) — unless that op's work is split: another leaf under it is owned
  // by a modelled op below it (math-path attention: bmm and softmax have their rows), and
  // its whole FLOPs over this leaf's time alone would be a wrong figure.
  std::vector<Owned> owned;
  for (size_t leaf : x.ops) {
    const Event& e = x.E(leaf);
    if (e.external_id == 0 || by_ext.count(e.external_id) == 0) continue;
    Owned o{leaf, leaf, false};
    for (int64_t a = static_cast<int64_t>(leaf); a >= 0; a = parents[static_cast<size_t>(a)]) {
      if (model(static_cast<size_t>(a)).has_value()) {
        o.owner = static_cast<size_t>(a);
        o.modelled = true;
        break;
      }
    }
    owned.push_back(o);
  }
  KeepSplitWorkApart(parents, owned);
  for (const auto& [leaf, owner, modelled] : owned) {
    const Event& e = x.E(leaf);
    const auto it = by_ext.find(e.external_id);
    r.attributed_ns += it->second;
    const Event& o = x.E(owner);
    const std::string_view args = o.args >= 0 ? t.strings.Get(o.args) : std::string_view();
    Group& g = groups[{std::string(x.Name(owner)), CompactJson(ArgValue(args, "Input Dims")),
                       CompactJson(ArgValue(args, "Input type")), CompactJson(ArgValue(args, "Concrete Inputs"))}];
    if (g.row.name.empty()) {
      g.row.name = std::string(x.Name(owner));
      g.row.input_dims = ShapesText(ArgValue(args, "Input Dims"));
      // ["c10::BFloat16","float"] -> c10::BFloat16,float
      for (char c : CompactJson(ArgValue(args, "Input type"))) {
        if (c != '[' && c != ']' && c != '"') g.row.input_type += c;
      }
      g.work = model(owner);
    }
    if (!counted[owner]) {
      counted[owner] = true;
      g.row.calls += 1;
    }
    g.row.kernel_ns += it->second;
    if (auto c = copies_by_ext.find(e.external_id); c != copies_by_ext.end()) g.copy_ns += c->second;
    for (const auto& [k, ns] : kernels_by_ext[e.external_id]) g.kernels[k] += ns;
    if (auto rec = recorded_by_ext.find(e.external_id); rec != recorded_by_ext.end()) {
      g.recorded_flops += rec->second.first;
      g.recorded_bytes += rec->second.second;
    }
  }
  for (auto& [key, g] : groups) {
    OpRooflineRow row = std::move(g.row);
    row.top_kernel = TopKernel(g.kernels);
    if (!g.work && (g.recorded_flops > 0 || g.recorded_bytes > 0) && row.calls > 0) {
      g.work = RecordedWork(row.top_kernel, g.recorded_flops / static_cast<double>(row.calls),
                            g.recorded_bytes / static_cast<double>(row.calls));
    }
    if (g.work) {
      row.modelled = true;
      row.category = g.work->category;
      row.params = g.work->params;
      row.flops = g.work->flops;
      row.bytes = g.work->bytes;
    } else {
      row.category = "other";
      NameByKernel(row.name, names.Of(row.top_kernel), row);
    }
    // A row with copies or sets (a host copy's link, not HBM; no kernel to profile) gets no roof.
    if (r.device && row.modelled && row.kernel_ns > 0 && row.bytes > 0 && g.copy_ns == 0) {
      PlaceOnRoof(*r.device, *g.work, names.Of(row.top_kernel), row);
    }
    r.rows.push_back(std::move(row));
  }
  AddUnattributedRows(by_launch, names, r);
  std::stable_sort(r.rows.begin(), r.rows.end(),
                   [](const OpRooflineRow& a, const OpRooflineRow& b) { return a.kernel_ns > b.kernel_ns; });
  return r;
}

Table OpRooflineTable(const OpRoofline& r) {
  Table t;
  t.name = "op_roofline";
  t.title = "Operators by shape on the roofline: FLOPs and bytes from shapes, leaf-op kernel time";
  t.columns = {"Time (%)", "Kernel (ns)", "Calls", "GFLOP", "MB", "FLOP/B", "TFLOP/s", "TB/s", "Roof (%)",
               "Save@80% (ns)", "Category", "Params", "Input Dims", "Input Types", "Name"};
  int64_t impossible = 0, by_name = 0;
  for (const OpRooflineRow& row : r.rows) {
    by_name += !row.modelled && !row.params.empty() ? 1 : 0;
    const double share = r.kernel_ns > 0 ? 100.0 * row.kernel_ns / r.kernel_ns : 0;
    const double calls = static_cast<double>(row.calls), secs = row.kernel_ns * 1e-9;
    Cell dash = std::string("-");
    const bool m = row.modelled;
    Cell roof = dash;
    if (row.roof_flops > 0) {
      char text[48];
      std::snprintf(text, sizeof(text), "%.1f IMPOSSIBLE", row.percent_of_roof);
      roof = row.impossible ? Cell(std::string(text)) : Cell(row.percent_of_roof);
    }
    impossible += row.impossible ? 1 : 0;
    t.AddRow({share, row.kernel_ns, row.calls, m ? Cell(row.flops / 1e9) : dash, m ? Cell(row.bytes / 1e6) : dash,
              m && row.bytes > 0 ? Cell(row.flops / row.bytes) : dash,
              m && secs > 0 ? Cell(row.flops * calls / secs / 1e12) : dash,
              m && secs > 0 ? Cell(row.bytes * calls / secs / 1e12) : dash, roof,
              row.roof_flops > 0 ? Cell(row.saving_ns) : dash, row.category, row.params.empty() ? "-" : row.params,
              row.input_dims.empty() ? "-" : row.input_dims, row.input_type.empty() ? "-" : row.input_type, row.name});
  }
  t.notes.push_back("device: " + r.device_note);
  char buf[200];
  std::snprintf(buf, sizeof(buf), "%.1f%% of the trace's device time is under an operator or, for a graph's "
                "replay, the call that launched it (the rest has neither: no External id or correlation)",
                r.kernel_ns > 0 ? 100.0 * r.attributed_ns / r.kernel_ns : 0.0);
  t.notes.push_back(buf);
  t.notes.push_back("GFLOP and MB (10^6 bytes) are per call; Roof (%) is achieved throughput over the roof at the "
                    "op's intensity (matrix peak of its dtype for GEMM and attention, FP32 vector otherwise); "
                    "Save@80% is its time less its time at 80% of the roof (never below 2 us a call: launch and "
                    "tail latency)");
  t.NoteCount(by_name,
              "row(s) with no recorded shape are described by their top kernel's name "
              "(library, operation, dtype, tile), their category the op's family where its name has one: a "
              "kernel's name carries the tile it was built for, never the problem's M, N and K, so these rows "
              "have a category but no FLOPs and no roof");
  t.NoteCount(impossible,
              "row(s) above 100% of the roof are IMPOSSIBLE figures (a wrong "
              "peak or a wrong shape): no conclusion is drawn from them");
  return t;
}

Table RooflineSumTable(const OpRoofline& r) {
  Table t;
  t.name = "roofline_sum";
  t.title = "Operator categories on the roofline: share of device time, time-weighted % of roof";
  t.columns = {"Time (%)", "Kernel (ns)", "Ops", "Calls", "With roof (%)", "Roof (%) time-weighted", "Save@80% (ns)",
               "Category"};
  struct Sum {
    double ns = 0, roofed_ns = 0, weighted = 0, saving = 0;
    int64_t ops = 0, calls = 0;
  };
  std::map<std::string, Sum> by;
  for (const OpRooflineRow& row : r.rows) {
    Sum& s = by[row.category];
    s.ns += row.kernel_ns;
    s.ops += 1;
    s.calls += row.calls;
    s.saving += row.saving_ns;
    if (row.roof_flops > 0 && !row.impossible) {
      s.roofed_ns += row.kernel_ns;
      s.weighted += row.kernel_ns * row.percent_of_roof;
    }
  }
  std::vector<std::pair<std::string, Sum>> sorted(by.begin(), by.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  for (const auto& [cat, s] : sorted) {
    t.AddRow({r.kernel_ns > 0 ? 100.0 * s.ns / r.kernel_ns : 0.0, s.ns, s.ops, s.calls,
              s.ns > 0 ? 100.0 * s.roofed_ns / s.ns : 0.0, s.roofed_ns > 0 ? Cell(s.weighted / s.roofed_ns) : Cell(std::string("-")), s.saving, cat});
  }
  t.notes.push_back("device: " + r.device_note);
  t.notes.push_back("With roof: the share of the category's time whose shapes are known and whose device has a peak "
                    "for its dtype; the time-weighted % of roof is over that time only (rows above 100%, impossible "
                    "figures, are left out)");
  return t;
}

std::optional<Finding> RooflineFinding(const OpRoofline& r, size_t top) {
  if (!r.device) return std::nullopt;
  std::vector<const OpRooflineRow*> rows;
  for (const OpRooflineRow& row : r.rows) {
    if (row.roof_flops > 0 && !row.impossible) rows.push_back(&row);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const OpRooflineRow* a, const OpRooflineRow* b) { return a->saving_ns > b->saving_ns; });
  Finding f;
  f.rule = "roofline";
  f.title = "Operators far below their roofline: the time a kernel fix could save";
  f.threshold = "an op's time less its time at 80% of the roof at its intensity (" + r.device->name + ")";
  const std::string tool = r.device->name.starts_with("AMD") ? "" : "ncu";
  for (size_t i = 0; i < rows.size() && i < top && rows[i]->saving_ns > 0; ++i) {
    const OpRooflineRow& row = *rows[i];
    char buf[256];
    std::snprintf(buf, sizeof(buf), ": %s at %.1f%% of its roof; at 80%% it would save %s (%.1f%% of kernel time)",
                  FormatNs(row.kernel_ns).c_str(), row.percent_of_roof, FormatNs(row.saving_ns).c_str(),
                  r.kernel_ns > 0 ? 100.0 * row.saving_ns / r.kernel_ns : 0.0);
    f.evidence.push_back(row.name + " " + row.params + buf);
    f.explained_ns += row.saving_ns;
    if (i == 0) {
      f.next_step = "tier 3 on the top op's kernel: " +
                    (tool.empty() ? "rocprof-compute profile -n op -k '" + row.top_kernel + "' -- <your command>"
                                  : CommandLineText(KernelProfileArgs(tool, row.top_kernel, "op.csv",
                                                                      {"python", "YOUR_SCRIPT.py"})));
    }
  }
  if (f.evidence.empty()) return std::nullopt;
  double at_roof_ns = 0;
  int64_t at_roof = 0;
  for (const OpRooflineRow* row : rows) {
    if (row->percent_of_roof >= 100.0 * kTarget) at_roof_ns += row->kernel_ns, ++at_roof;
  }
  if (at_roof > 0) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%lld op shape(s), %s of kernel time, run at 80%% of their roof or more: not "
                  "worth kernel work", static_cast<long long>(at_roof), FormatNs(at_roof_ns).c_str());
    f.evidence.push_back(buf);
  }
  return f;
}

}  // namespace tierscope
