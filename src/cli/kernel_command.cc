// `tierscope kernel`: tier 3 — replay one hot kernel of a workload and report its
// sections, like `ncu -k NAME -c COUNT --section ...`; or the same sections from an
// Nsight Compute CSV or a tier-2 trace.
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/paths.h"
#include "core/text.h"
#include "inspect/kernel_run.h"
#include "inspect/sections.h"

namespace tierscope::cli {
namespace {

struct KernelFlags {
  KernelCommandOptions kern;
  std::string cache_control = "all", report_path = "kernel_report.json";
  bool list_sections = false;
};

int Run(KernelFlags& f) {
  if (f.list_sections) {
    std::cout << ListSectionsText();
    return 0;
  }
  if (f.cache_control != "all" && f.cache_control != "none") {
    return Fail(InvalidArgument("--cache-control must be all or none, got '" + f.cache_control + "'"));
  }
  f.kern.inspector.flush_caches = f.cache_control == "all";
  if (f.kern.inspector.filter.name.empty() && f.kern.ncu_csv.empty() && f.kern.trace.empty()) {
    return Fail(InvalidArgument(
        "name the kernel with -k NAME (or -k regex:PATTERN); a run without -k lists the "
        "kernels only with --ncu-csv or --from-trace"));
  }
  if (Status s = RefuseInputAsOutput(f.report_path, {f.kern.trace, f.kern.ncu_csv}); !s.ok()) return Fail(s);
  auto result = RunKernelCommand(f.kern);
  if (!result.ok()) return Fail(result.status());
  Status written = WriteFileAtomic(f.report_path, result->json.dump(2) + "\n");
  if (!written.ok()) return Fail(written);
  std::cout << TerminalSafe(result->text) << "==TIERSCOPE== report: " << f.report_path << std::endl;
  return 0;
}

}  // namespace

void RegisterKernel(CLI::App& app, std::vector<Command>* out) {
  auto f = std::make_shared<KernelFlags>();
  KernelCommandOptions& kern = f->kern;
  kern.bench.warmup = 1;
  kern.bench.iterations = 1;
  auto* k = app.add_subcommand(
      "kernel", "Tier 3: replay one hot kernel and report its sections (like ncu -k NAME -c COUNT)");
  AddWorkloadOptions(k, kern.bench);
  k->add_option("-k,--kernel-name", kern.inspector.filter.name,
                "kernel to profile: an exact name, or regex:PATTERN");
  auto* skip = k->add_option("-s,--launch-skip", kern.inspector.filter.skip, "matching launches to let run first")
                   ->capture_default_str();
  auto* count = k->add_option("-c,--launch-count", kern.inspector.filter.count, "matching launches to profile")
                    ->capture_default_str();
  k->add_option("--section,--sections", kern.sections,
                "sections, comma-separated (default: all; see --list-sections)");
  k->add_flag("--list-sections", f->list_sections, "list the sections and exit");
  auto* passes = k->add_option("--replay-passes", kern.inspector.passes, "replay passes per profiled launch")
                     ->capture_default_str();
  k->add_option("--cache-control", f->cache_control,
                "all: flush the caches before each pass (as ncu does); none: keep them")
      ->capture_default_str();
  auto* ncu = k->add_option("--ncu-csv", kern.ncu_csv,
                            "instead of a workload: the kernels of an Nsight Compute CSV (ncu --csv --page details)");
  auto* from_trace = k->add_option(
      "--from-trace", kern.trace,
      "instead of a workload: a kernel of a tier-2 trace (default: the hottest); with --ncu-csv, "
      "the same workload's trace, for the kernel's share of time and duration spread");
  // Which launches to replay, and how often, is a workload run's choice: a CSV or a trace
  // was measured already.
  for (CLI::Option* replay : {skip, count, passes}) replay->excludes(ncu)->excludes(from_trace);
  k->add_option("-o,--export", f->report_path, "the JSON report file")->capture_default_str();
  k->add_flag("--recalibrate", kern.recalibrate, "measure the machine's peaks again");
  out->push_back({k, [f] { return Run(*f); }});
}

}  // namespace tierscope::cli
