// Section arithmetic, the recommendation rule, and the text and JSON views.
#include "inspect/sections.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/text.h"

namespace tierscope {
namespace {

std::string DimText(const Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

std::string Num(double v, int digits = 2) {
  char buf[64];
  if (std::fabs(v) >= 1e6 || (v != 0 && std::fabs(v) < 1e-3)) {
    std::snprintf(buf, sizeof(buf), "%.*e", digits, v);
  } else if (v == std::floor(v) && std::fabs(v) < 1e6) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  }
  return buf;
}

struct Derived {
  std::optional<double> tasks, waves, compute_pct, memory_pct, gflops, gbps, bytes;
  std::optional<double> intensity, ridge;
  std::string bound;  // "compute", "memory" or ""
  // Memory above the DRAM peak with the caches not flushed: served from cache, so the
  // DRAM peak does not bound it and it decides nothing.
  bool memory_from_cache = false;
};

Derived Derive(const KernelEvidence& e);

// The share of the bounding peak: the larger of compute and memory, or compute alone
// when memory was served from cache. Call only with a bound.
double TopPct(const Derived& d) {
  if (d.memory_from_cache || !d.memory_pct) return *d.compute_pct;
  if (!d.compute_pct) return *d.memory_pct;
  return std::max(*d.compute_pct, *d.memory_pct);
}

Derived Derive(const KernelEvidence& e) {
  Derived d;
  if (e.grid) d.tasks = static_cast<double>(e.grid->count());
  if (e.waves) d.waves = e.waves;
  else if (d.tasks && e.units && *e.units > 0) d.waves = *d.tasks / *e.units;
  if (e.bytes_read && e.bytes_written) d.bytes = *e.bytes_read + *e.bytes_written;
  else if (e.bytes_moved) d.bytes = e.bytes_moved;
  const bool timed = e.duration_ns && *e.duration_ns > 0;
  if (timed && e.flops) d.gflops = *e.flops / *e.duration_ns;  // FLOP/ns = GFLOP/s
  if (timed && d.bytes) d.gbps = *d.bytes / *e.duration_ns;
  d.compute_pct = e.compute_pct;
  if (!d.compute_pct && d.gflops && e.peak_flops && *e.peak_flops > 0) {
    d.compute_pct = *d.gflops * 1e9 / *e.peak_flops * 100;
  }
  d.memory_pct = e.memory_pct;
  if (!d.memory_pct && d.gbps && e.peak_bw && *e.peak_bw > 0) {
    d.memory_pct = *d.gbps * 1e9 / *e.peak_bw * 100;
  }
  d.memory_from_cache = e.caches_flushed == false && d.memory_pct && *d.memory_pct > 100;
  if (d.memory_from_cache && d.compute_pct) {
    d.bound = "compute";
  } else if (d.compute_pct && d.memory_pct) {
    d.bound = *d.compute_pct >= *d.memory_pct ? "compute" : "memory";
  }
  if (e.flops && d.bytes && *d.bytes > 0) d.intensity = *e.flops / *d.bytes;
  if (e.peak_flops && e.peak_bw && *e.peak_bw > 0) d.ridge = *e.peak_flops / *e.peak_bw;
  return d;
}

class SectionBuilder {
 public:
  SectionBuilder(const char* id, const char* title, const std::string& missing)
      : missing_(missing) {
    s_.id = id;
    s_.title = title;
  }
  void Add(const std::string& name, const std::string& unit, std::optional<double> v) {
    s_.metrics.push_back({name, unit, v, v ? std::string() : missing_});
  }
  void Text(const std::string& name, const std::string& text) {
    s_.metrics.push_back({name, "", std::nullopt, text.empty() ? missing_ : text});
  }
  void Note(const std::string& n) { s_.notes.push_back(n); }
  Section Done() { return std::move(s_); }

 private:
  Section s_;
  std::string missing_;
};

std::optional<double> Scale(std::optional<double> v, double k) {
  return v ? std::optional<double>(*v * k) : std::nullopt;
}

Section LaunchStats(const KernelEvidence& e, const Derived& d) {
  SectionBuilder s("LaunchStats", "Launch Statistics", e.missing);
  s.Text("Grid Size", e.grid ? DimText(*e.grid) : "");
  s.Text("Block Size", e.block ? DimText(*e.block) : "");
  s.Add(e.unit_name == "SMs" ? "Blocks" : "Tasks", "", d.tasks);
  s.Add(e.unit_name == "SMs" ? "# SMs" : "Workers", "", e.units);
  s.Add(e.unit_name != "SMs" ? "Waves (tasks / workers)"
        : e.waves             ? "Waves Per SM"
                              : "Waves (blocks / SMs)",
        "", d.waves);
  if (e.unit_name != "SMs") {
    if (!e.worker_tasks.empty()) {
      const auto [lo, hi] = std::minmax_element(e.worker_tasks.begin(), e.worker_tasks.end());
      s.Text("Tasks Per Worker (min - max)", std::to_string(*lo) + " - " + std::to_string(*hi));
    } else {
      s.Text("Tasks Per Worker (min - max)", "");
    }
    s.Add("FLOPs Per Task", "FLOP", d.tasks && e.flops ? std::optional<double>(*e.flops / *d.tasks) : std::nullopt);
    s.Add("Bytes Per Task", "byte", d.tasks && d.bytes ? std::optional<double>(*d.bytes / *d.tasks) : std::nullopt);
    s.Add("Worker Busy (achieved occupancy)", "%", e.busy_pct);
  } else {
    if (!e.device_kernel.empty()) {
      s.Text("Device Kernel", e.device_kernel);
      if (e.device_kernels > 1) s.Add("Device Kernels In Launch", "", e.device_kernels);
    }
    s.Add("Registers Per Thread", "register/thread", e.registers);
    if (e.shared_bytes) s.Add("Shared Memory Per Block", "byte", e.shared_bytes);
    if (e.blocks_per_unit) s.Add("Block Limit (resident per SM)", "block", e.blocks_per_unit);
    if (!e.occupancy_limiter.empty()) s.Text("Occupancy Limiter", e.occupancy_limiter);
    s.Add("Theoretical Occupancy", "%", e.theoretical_occupancy);
    s.Add("Achieved Occupancy", "%", e.achieved_occupancy);
  }
  if (d.tasks && e.units && *d.tasks < *e.units) {
    s.Note("The grid has " + Num(*d.tasks) + " " + (e.unit_name == "SMs" ? "blocks" : "tasks") +
           " for " + Num(*e.units) + " " + e.unit_name + ": at most " +
           Num(*d.tasks / *e.units * 100, 1) + "% of the device can work on this kernel.");
  } else if (d.waves && *d.waves > 1 && *d.waves - std::floor(*d.waves) > 0 &&
             *d.waves - std::floor(*d.waves) < 0.5) {
    s.Note("A partial last wave (" + Num(*d.waves, 2) + " waves): the last " +
           Num((*d.waves - std::floor(*d.waves)) * 100, 0) + "% of a wave leaves " +
           e.unit_name + " idle at the tail.");
  }
  return s.Done();
}

// Which throughput is above its peak, by how much, and what that means.
std::string ImpossibleText(const KernelEvidence& e, const Derived& d) {
  std::string what;
  if (d.compute_pct && *d.compute_pct > 100) {
    what = "compute at " + Num(*d.compute_pct, 1) + "% of the " + e.pipe + " peak" +
           (d.gflops && e.peak_flops ? " (" + Num(*d.gflops, 1) + " of " + Num(*e.peak_flops / 1e9, 1) + " GFLOP/s)" : "");
  }
  if (d.memory_pct && *d.memory_pct > 100 && !d.memory_from_cache) {
    what += (what.empty() ? "" : " and ") + std::string("memory at ") + Num(*d.memory_pct, 1) +
            "% of the bandwidth peak" +
            (d.gbps && e.peak_bw ? " (" + Num(*d.gbps, 1) + " of " + Num(*e.peak_bw / 1e9, 1) + " GB/s)" : "");
  }
  return "The kernel measured " + what + ": above 100% is physically impossible, so the " +
         "calibrated peaks are not trustworthy (measured while other work held the cores?) " +
         "and nothing is concluded from them. Measure them again on a quiet machine: " +
         "tierscope device --recalibrate.";
}

Section SpeedOfLight(const KernelEvidence& e, const Derived& d) {
  SectionBuilder s("SpeedOfLight", "Speed Of Light Throughput", e.missing);
  s.Add("Duration", "us", Scale(e.duration_ns, 1e-3));
  s.Add("Duration Min", "us", Scale(e.duration_min_ns, 1e-3));
  s.Add("Duration Max", "us", Scale(e.duration_max_ns, 1e-3));
  s.Add("Duration Spread (CV)", "%", Scale(e.duration_cv, 100));
  s.Add("Compute Throughput", "%", d.compute_pct);
  s.Add("Memory Throughput", "%", d.memory_pct);
  if (e.dram_pct) s.Add("DRAM Throughput", "%", e.dram_pct);
  s.Add("Achieved FLOP/s", "GFLOP/s", d.gflops);
  s.Add("Achieved Bandwidth", "GB/s", d.gbps);
  s.Add("Peak FLOP/s (" + e.pipe + ")", "GFLOP/s", Scale(e.peak_flops, 1e-9));
  s.Add("Peak Bandwidth", "GB/s", Scale(e.peak_bw, 1e-9));
  s.Text("Bound By", d.bound);
  if (AbovePeak(e)) {
    s.Note(ImpossibleText(e, d));
  } else if (!d.bound.empty()) {
    if (d.memory_from_cache) {
      s.Note("Memory throughput is " + Num(*d.memory_pct, 1) + "% of the DRAM (triad) peak: with the " +
             "caches not flushed (--cache-control none) the data came from cache, so the memory peak " +
             "does not bound this kernel; the bound is judged on compute alone.");
    }
    const double top = TopPct(d);
    if (top >= 80) {
      s.Note("The kernel runs at " + Num(top, 1) + "% of its " + d.bound + " peak: near its bound.");
    } else if (top < kFarFromBound) {
      s.Note("Neither compute (" + Num(*d.compute_pct, 1) + "%) nor memory (" +
             Num(*d.memory_pct, 1) + "%) is near its peak: the time goes to latency, " +
             "too little parallel work, or overheads.");
    }
  }
  return s.Done();
}

Section MemoryWorkload(const KernelEvidence& e, const Derived& d) {
  SectionBuilder s("MemoryWorkloadAnalysis", "Memory Workload Analysis", e.missing);
  s.Add("Bytes Read", "byte", e.bytes_read);
  s.Add("Bytes Written", "byte", e.bytes_written);
  s.Add("Bytes Moved", "byte", d.bytes);
  s.Add("FLOPs", "FLOP", e.flops);
  s.Add("Arithmetic Intensity", "FLOP/byte", d.intensity);
  s.Add("Ridge Point", "FLOP/byte", d.ridge);
  std::optional<double> attainable;
  if (d.intensity && e.peak_flops && e.peak_bw) {
    attainable = std::min(*e.peak_flops, *d.intensity * *e.peak_bw);
  }
  s.Add("Roofline Attainable", "GFLOP/s", Scale(attainable, 1e-9));
  s.Add("Achieved / Attainable", "%",
        attainable && d.gflops && *attainable > 0
            ? std::optional<double>(*d.gflops * 1e9 / *attainable * 100)
            : std::nullopt);
  if (e.dram_pct) s.Add("DRAM Throughput", "%", e.dram_pct);
  if (d.intensity && d.ridge) {
    s.Text("Roofline Side", *d.intensity < *d.ridge ? "memory (left of the ridge)"
                                                     : "compute (right of the ridge)");
  } else {
    s.Text("Roofline Side", "");
  }
  return s.Done();
}

}  // namespace

const std::vector<SectionInfo>& KnownSections() {
  static const std::vector<SectionInfo> kSections = {
      {"LaunchStats", "Launch Statistics",
       "grid and block, tasks, workers (or SMs), waves, work per task, busy share"},
      {"SpeedOfLight", "Speed Of Light Throughput",
       "duration over replay passes; achieved FLOP/s and bytes/s as % of the machine's peaks; the bound"},
      {"MemoryWorkloadAnalysis", "Memory Workload Analysis",
       "bytes read and written, arithmetic intensity, the kernel's place on the roofline"},
  };
  return kSections;
}

StatusOr<std::vector<std::string>> ParseSections(const std::string& list) {
  std::vector<std::string> out;
  std::string valid;
  for (const SectionInfo& s : KnownSections()) valid += (valid.empty() ? "" : ", ") + std::string(s.id);
  for (const std::string& item : SplitList(list)) {
    const auto& known = KnownSections();
    auto it = std::find_if(known.begin(), known.end(), [&](const SectionInfo& s) { return item == s.id; });
    if (it == known.end()) {
      return InvalidArgument("unknown section '" + item + "'; the sections are: " + valid);
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  if (out.empty()) {
    for (const SectionInfo& s : KnownSections()) out.emplace_back(s.id);
  }
  return out;
}

std::string ListSectionsText() {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-24s %-28s %s\n", "Identifier", "Display Name", "Description");
  out += buf;
  for (const SectionInfo& s : KnownSections()) {
    std::snprintf(buf, sizeof(buf), "%-24s %-28s %s\n", s.id, s.title, s.description);
    out += buf;
  }
  return out;
}

ThroughputPct Throughput(const KernelEvidence& e) {
  const Derived d = Derive(e);
  return {d.compute_pct, d.memory_pct};
}

bool AbovePeak(const KernelEvidence& e) {
  const Derived d = Derive(e);
  return (d.compute_pct && *d.compute_pct > 100) ||
         (d.memory_pct && *d.memory_pct > 100 && !d.memory_from_cache);
}

Recommendation Recommend(const KernelEvidence& e) {
  const Derived d = Derive(e);
  Recommendation r;
  RuleCheck fills{"fills the device", std::nullopt, ""};
  // Every unit gets work when the grid has at least as many blocks (tasks) as units; a
  // GPU's waves per SM also count how many blocks one SM holds at once, which says how
  // full each SM is, not whether any SM is idle.
  std::optional<double> coverage;
  if (d.tasks && e.units && *e.units > 0) coverage = *d.tasks / *e.units;
  else coverage = d.waves;
  if (coverage) {
    fills.ok = *coverage >= 1.0;
    fills.evidence = (d.tasks ? Num(*d.tasks) + " " + (e.unit_name == "SMs" ? "blocks" : "tasks") + " for " : "") +
                     (e.units ? Num(*e.units) + " " + e.unit_name + ", " : "") + Num(*d.waves, 2) + " waves";
  } else {
    fills.evidence = "grid or device size " + e.missing;
  }
  RuleCheck hot{"stable hot spot", std::nullopt, ""};
  std::optional<bool> is_hot, is_stable;
  std::string hot_text, stable_text;
  if (e.hot_share) {
    is_hot = *e.hot_share >= kHotShare || (e.hot_rank && *e.hot_rank == 1);
    hot_text = Num(*e.hot_share * 100, 1) + "% of kernel time" +
               (e.hot_rank ? " (rank " + std::to_string(*e.hot_rank) + ")" : "");
  } else {
    hot_text = "share of kernel time " + e.missing;
  }
  if (e.duration_cv && e.samples >= 3) {
    is_stable = *e.duration_cv <= kStableCv;
    stable_text = "duration spread " + Num(*e.duration_cv * 100, 1) + "% over " +
                  std::to_string(e.samples) + (e.passes > 0 ? " passes" : " launches");
  } else {
    stable_text = "duration spread " + e.missing;
  }
  if (is_hot == false || is_stable == false) hot.ok = false;
  else if (is_hot && is_stable) hot.ok = true;
  hot.evidence = hot_text + "; " + stable_text;
  RuleCheck far{"far from its bound", std::nullopt, ""};
  if (!d.bound.empty()) {
    const double top = TopPct(d);
    far.ok = top < kFarFromBound;
    far.evidence = d.bound + "-bound at " + Num(top, 1) + "% of peak (threshold " +
                   Num(kFarFromBound, 0) + "%)";
  } else {
    far.evidence = "throughput against the peaks " + e.missing;
  }
  r.checks = {fills, hot, far};
  r.kernel_level = fills.ok == true && hot.ok == true && far.ok == true;
  if (AbovePeak(e)) {
    // An impossible number decides nothing, not even "fix it at a higher tier".
    r.kernel_level = false;
    r.trustworthy = false;
    r.checks[2].ok = std::nullopt;
    r.checks[2].evidence = "above 100% of the calibrated peak: not trustworthy";
    r.verdict = "No verdict: " + ImpossibleText(e, d);
  } else if (fills.ok == false) {
    const std::string share = coverage ? Num(std::min(*coverage, 1.0) * 100, 1) + "%" : "part";
    r.verdict = "Fix it at a higher tier: " + fills.evidence + ", so at most " + share +
                " of the device can work on this kernel, and no kernel tuning changes that. Give each launch " +
                "more work (batch the inputs; check operator and launch counts per unit at " +
                "tiers 1 and 2) — the study's serial SGEMM ran 1 block on 56 units, the " +
                "batched one 256.";
  } else if (is_hot == false) {
    r.verdict = "Look elsewhere first: " + hot_text + " — below the " + Num(kHotShare * 100, 0) +
                "% that makes a hot spot; tune the kernels that dominate (tier 2 hot_kernels).";
  } else if (is_stable == false) {
    r.verdict = "Measure again before tuning: " + stable_text + " (above " +
                Num(kStableCv * 100, 0) + "%); the timing is not stable enough to tune against.";
  } else if (far.ok == false) {
    r.verdict = "Near its bound: " + far.evidence + ", so kernel work gains at most " +
                Num(100 / TopPct(d), 2) + "x. Cut the work " +
                "itself at a higher tier: fusion, fewer bytes, lower precision.";
  } else if (r.kernel_level) {
    const double top = TopPct(d);
    r.verdict = "Kernel-level work is justified: it fills the device (" + fills.evidence +
                "), is a stable hot spot (" + hot.evidence + "), and is " + far.evidence +
                (top > 0 ? " — up to " + Num(100 / top, 1) + "x of headroom." : ".");
  } else {
    std::string unknown;
    for (const RuleCheck& c : r.checks) {
      if (!c.ok) unknown += (unknown.empty() ? "" : "; ") + c.name + ": " + c.evidence;
    }
    r.verdict = "No recommendation for kernel-level work: the rule needs evidence this source " +
                std::string("lacks (") + unknown + "). Confirm the hot spot with the tier-2 " +
                "hot_kernels report and the bound with a replay.";
  }
  return r;
}

KernelReport BuildKernelReport(const KernelEvidence& e, const std::vector<std::string>& sections) {
  KernelReport r;
  r.evidence = e;
  const Derived d = Derive(e);
  for (const std::string& id : sections) {
    if (id == "LaunchStats") r.sections.push_back(LaunchStats(e, d));
    if (id == "SpeedOfLight") r.sections.push_back(SpeedOfLight(e, d));
    if (id == "MemoryWorkloadAnalysis") r.sections.push_back(MemoryWorkload(e, d));
  }
  r.recommendation = Recommend(e);
  return r;
}

std::string RenderKernelReports(const std::vector<KernelReport>& reports) {
  std::string out;
  char buf[512];
  for (const KernelReport& r : reports) {
    const KernelEvidence& e = r.evidence;
    out += "  " + e.kernel;
    if (e.grid && e.block) out += " " + DimText(*e.grid) + "x" + DimText(*e.block);
    if (e.id >= 0) out += ", launch " + std::to_string(e.id);
    if (!e.device.empty()) out += ", device " + e.device;
    out += "\n    source: " + e.source;
    if (e.passes > 0) out += ", " + std::to_string(e.passes) + " replay passes";
    if (!e.peaks_note.empty()) out += "; peaks " + e.peaks_note;
    out += "\n";
    for (const Section& s : r.sections) {
      out += "    Section: " + s.title + "\n";
      const std::string rule = "    " + std::string(40, '-') + " " + std::string(15, '-') + " " +
                               std::string(28, '-') + "\n";
      out += rule;
      std::snprintf(buf, sizeof(buf), "    %-40s %-15s %28s\n", "Metric Name", "Metric Unit", "Metric Value");
      out += buf;
      out += rule;
      for (const SectionMetric& m : s.metrics) {
        const std::string v = m.value ? Num(*m.value) : m.text;
        std::snprintf(buf, sizeof(buf), "    %-40s %-15s %28s\n", m.name.c_str(), m.unit.c_str(), v.c_str());
        out += buf;
      }
      out += rule;
      for (const std::string& n : s.notes) out += "    NOTE: " + n + "\n";
      out += "\n";
    }
    out += "    Recommendation (" + std::string(r.recommendation.kernel_level ? "kernel level" : "not kernel level") + ")\n";
    for (const RuleCheck& c : r.recommendation.checks) {
      out += "      [" + std::string(!c.ok ? "?" : *c.ok ? "yes" : "no") + "] " + c.name + ": " + c.evidence + "\n";
    }
    out += "    " + r.recommendation.verdict + "\n\n";
  }
  return out;
}

nlohmann::json KernelReportsToJson(const std::vector<KernelReport>& reports) {
  nlohmann::json arr = nlohmann::json::array();
  for (const KernelReport& r : reports) {
    const KernelEvidence& e = r.evidence;
    nlohmann::json j;
    j["kernel"] = e.kernel;
    j["id"] = e.id;
    j["source"] = e.source;
    if (!e.peaks_note.empty()) j["peaks_note"] = e.peaks_note;
    j["device"] = e.device;
    j["passes"] = e.passes;
    if (e.grid) j["grid"] = {e.grid->x, e.grid->y, e.grid->z};
    if (e.block) j["block"] = {e.block->x, e.block->y, e.block->z};
    j["sections"] = nlohmann::json::array();
    for (const Section& s : r.sections) {
      nlohmann::json js{{"id", s.id}, {"title", s.title}, {"notes", s.notes}};
      js["metrics"] = nlohmann::json::array();
      for (const SectionMetric& m : s.metrics) {
        nlohmann::json jm{{"name", m.name}, {"unit", m.unit}};
        if (m.value) jm["value"] = *m.value;
        else jm["text"] = m.text;
        js["metrics"].push_back(jm);
      }
      j["sections"].push_back(js);
    }
    nlohmann::json rec{{"kernel_level", r.recommendation.kernel_level},
                       {"trustworthy", r.recommendation.trustworthy},
                       {"verdict", r.recommendation.verdict}};
    rec["checks"] = nlohmann::json::array();
    for (const RuleCheck& c : r.recommendation.checks) {
      nlohmann::json jc{{"check", c.name}, {"evidence", c.evidence}};
      jc["ok"] = c.ok ? nlohmann::json(*c.ok) : nlohmann::json(nullptr);
      rec["checks"].push_back(jc);
    }
    j["recommendation"] = rec;
    arr.push_back(j);
  }
  return arr;
}

}  // namespace tierscope
