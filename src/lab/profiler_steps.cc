// The lab's nsys/msys and ncu/mcu steps, run as the study runs them (lab/profilers.h).
#include "lab/profiler_steps.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "analysis/profilers.h"
#include "analysis/reports.h"
#include "core/paths.h"

namespace tierscope {
namespace {

// The last line of a profiler's log, for a failure's record.
std::string LastLogLine(const std::string& log) {
  const StatusOr<std::string> text = ReadFile(log);
  if (!text.ok()) return "";
  std::string t = *text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  const size_t at = t.rfind('\n');
  return t.substr(at == std::string::npos ? 0 : at + 1, 300);
}

// A trace's kernel names by total device time, longest first (the hot_kernels order), and
// the time of each.
struct KernelRanking {
  std::vector<std::string> names;
  std::map<std::string, double> ns;
};
KernelRanking RankKernels(const TraceAnalysis& a) {
  KernelRanking r;
  for (auto& [ns, name] : KernelsByTime(a.index)) {
    r.ns[name] = ns;
    r.names.push_back(std::move(name));
  }
  return r;
}

nlohmann::json Failed(nlohmann::json record, const std::string& why) {
  record["status"] = "failed";
  record["note"] = why;
  return record;
}

}  // namespace

TopComparison CompareTops(const std::string& their_top, const std::map<std::string, double>& theirs,
                          const std::string& our_top, const std::map<std::string, double>& ours) {
  // `kernel`'s time in `times` over that run's top's (0 when either is not there).
  const auto share = [](const std::map<std::string, double>& times, const std::string& kernel,
                        const std::string& top) {
    const auto it = times.find(kernel), at = times.find(top);
    return it == times.end() || at == times.end() || !(at->second > 0) ? 0.0 : it->second / at->second;
  };
  TopComparison c;
  if (their_top.empty() || our_top.empty()) return c;
  c.in_ours = share(ours, their_top, our_top);
  c.in_theirs = share(theirs, our_top, their_top);
  c.agree = their_top == our_top || (c.in_ours >= 1 - kRunToRunDrift && c.in_theirs >= 1 - kRunToRunDrift);
  return c;
}

std::string ResolveProfiler(const std::string& choice, const std::string& device, const std::string& engine,
                            bool system) {
  if (choice == "none") return "";
  if (choice != "auto") return choice;
  if (engine != "torch") return "";
  const std::string tool = system ? SystemProfilerFor(device) : KernelProfilerFor(device);
  return !tool.empty() && OnPath(tool) ? tool : "";
}

nlohmann::json SystemProfilerStep(const ProfilerRun& run, const TraceAnalysis& kineto) {
  const std::string base = run.out_dir + "/system/" + run.name;
  const std::string report = SystemReportFile(run.tool, base), sqlite = base + ".sqlite";
  // The capture starts a second before the workload's pre-delay ends: loading stays out.
  const std::vector<std::string> profile =
      SystemProfileArgs(run.tool, std::max(0.0, run.pre_delay_s - 1), base, run.command);
  const std::vector<std::string> exporter = SystemExportArgs(run.tool, report, sqlite);
  nlohmann::json r = {{"tool", run.tool}, {"run", run.name}, {"command", CommandLineText(profile)},
                      {"export_command", CommandLineText(exporter)}, {"sqlite", "system/" + run.name + ".sqlite"}};
  if (Status s = MakeDirs(run.out_dir + "/system"); !s.ok()) return Failed(r, s.message());
  const std::string log = base + ".log";
  StatusOr<int> code = RunTool(profile, log, run.timeout_s);
  if (!code.ok()) return Failed(r, code.status().message());
  if (*code != 0) return Failed(r, run.tool + " profile exited with status " + std::to_string(*code) + ": " + LastLogLine(log));
  code = RunTool(exporter, base + ".export.log", run.timeout_s);
  if (!code.ok()) return Failed(r, code.status().message());
  if (*code != 0) {
    return Failed(r, run.tool + " export exited with status " + std::to_string(*code) + ": " +
                         LastLogLine(base + ".export.log"));
  }
  StatusOr<Trace> t = LoadTrace(sqlite);
  if (!t.ok()) return Failed(r, "the export does not import: " + t.status().message());
  const TraceAnalysis a = Analyze(*t, AnalysisOptions{});
  const KernelRanking their_rank = RankKernels(a), our_rank = RankKernels(kineto);
  const std::vector<std::string>& theirs = their_rank.names;
  const std::vector<std::string>& ours = our_rank.names;
  const std::map<std::string, double>& their_times = their_rank.ns;
  const std::map<std::string, double>& our_times = our_rank.ns;
  const std::set<std::string> seen(theirs.begin(), theirs.end());
  int64_t missing = 0;
  for (const std::string& k : ours) missing += seen.count(k) == 0 ? 1 : 0;
  r["kernels"] = static_cast<int64_t>(a.index.kernels.size());
  r["kernel_names"] = static_cast<int64_t>(theirs.size());
  r["hottest"] = theirs.empty() ? "" : theirs.front();
  r["kineto_hottest"] = ours.empty() ? "" : ours.front();
  r["kineto_kernels_missing"] = missing;
  const TopComparison tops = CompareTops(theirs.empty() ? "" : theirs.front(), their_times,
                                         ours.empty() ? "" : ours.front(), our_times);
  const bool same_top = tops.agree;
  if (!theirs.empty() && !ours.empty()) {
    r["hottest_vs_kineto_top"] = tops.in_ours;
    r["kineto_top_vs_hottest"] = tops.in_theirs;
  }
  // Totals: the profiled command ran run.units work units, the Kineto trace counted its own:
  // each kernel's instances in the export are run.units times its count a unit.
  std::map<std::string, int64_t> instances;
  for (size_t k : a.index.kernels) ++instances[std::string(a.index.Name(k))];
  const UnitCounts& per = kineto.index.counts;
  int64_t off = 0;
  std::string first_off;
  if (run.units > 0 && per.units > 0) {
    for (const auto& [kernel, calls] : per.kernel_calls) {
      const double want = static_cast<double>(run.units) * per.PerUnit(static_cast<double>(calls));
      const int64_t got = instances[kernel];
      if (std::fabs(static_cast<double>(got) - want) > 0.5) {
        if (off++ == 0) first_off = kernel + ": " + std::to_string(got) + " instances, not " + std::to_string(
                                        static_cast<int64_t>(std::llround(want)));
      }
    }
    r["units_profiled"] = run.units;
    r["kernel_counts_off"] = off;
  }
  // The check: the profiler saw the kernels PyTorch's trace names, as many times as its
  // units launch them, and the same one on top.
  if (ours.empty()) {
    r["status"] = "ok";
    r["note"] = "the Kineto trace has no kernels to compare with";
  } else if (missing == 0 && off == 0 && same_top) {
    r["status"] = "ok";
    r["note"] = "every kernel of the Kineto trace is in the export" +
                (run.units > 0 && per.units > 0 ? ", " + std::to_string(run.units) + " units' worth of each," : "") +
                (theirs.front() == ours.front()
                     ? " and both put " + ours.front() + " on top"
                     : " and the tops tie within run-to-run drift (each run times the other's top at " +
                           std::to_string(std::lround(100 * (1 - kRunToRunDrift))) + "% or more of its own)");
  } else if (missing == 0 && off > 0) {
    r["status"] = "disagrees";
    r["note"] = std::to_string(off) + " kernel(s) of the Kineto trace ran a different number of times than " +
                std::to_string(run.units) + " units launch them (" + first_off + ")";
  } else if (missing > 0) {
    r["status"] = "disagrees";
    r["note"] = std::to_string(missing) + " of the Kineto trace's " + std::to_string(ours.size()) +
                " kernels are not in the export; its hottest is " + (theirs.empty() ? "none" : theirs.front()) +
                ", the Kineto trace's " + ours.front();
  } else {
    r["status"] = "disagrees";
    r["note"] = "the export's hottest kernel is " + (theirs.empty() ? "none" : theirs.front()) +
                ", the Kineto trace's " + ours.front() + ": one run times the other's top below " +
                std::to_string(std::lround(100 * (1 - kRunToRunDrift))) + "% of its own (beyond run-to-run drift)";
  }
  return r;
}

nlohmann::json KernelProfilerStep(const ProfilerRun& run, const std::string& kernel, KernelCommandResult* result) {
  const std::string csv = run.out_dir + "/kernels/" + run.name + "." + run.tool + ".csv";
  const std::vector<std::string> argv = KernelProfileArgs(run.tool, kernel, csv, run.command);
  nlohmann::json r = {{"tool", run.tool}, {"run", run.name}, {"kernel", kernel}, {"command", CommandLineText(argv)},
                      {"csv", "kernels/" + run.name + "." + run.tool + ".csv"}};
  const std::string log = run.out_dir + "/kernels/" + run.name + "." + run.tool + ".log";
  StatusOr<int> code = RunTool(argv, log, run.timeout_s);
  if (!code.ok()) return Failed(r, code.status().message());
  if (*code != 0) return Failed(r, run.tool + " exited with status " + std::to_string(*code) + ": " + LastLogLine(log));
  KernelCommandOptions k;
  k.ncu_csv = csv;
  k.inspector.filter = {kernel, 0, 1};
  // The run's Kineto trace gives what one profiled launch cannot: the kernel's share of
  // kernel time and its spread over every launch.
  const std::string trace = run.out_dir + "/traces/" + run.name + ".json.gz";
  std::error_code ec;
  if (std::filesystem::exists(trace, ec)) k.trace = trace;
  StatusOr<KernelCommandResult> kr = RunKernelCommand(k);
  if (!kr.ok()) return Failed(r, "its CSV does not read: " + kr.status().message());
  if (kr->reports.empty()) return Failed(r, "its CSV has no report of " + kernel);
  *result = std::move(*kr);
  r["status"] = "ok";
  return r;
}

}  // namespace tierscope
