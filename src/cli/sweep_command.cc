// `tierscope sweep`: throughput, latency and memory over batch sizes, and the batch to use.
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/paths.h"
#include "core/text.h"
#include "lab/sweep.h"

namespace tierscope::cli {
namespace {

struct SweepFlags {
  SweepOptions sweep;
  std::string batch_sizes = "1,4,16,64,128,256", seq_lens, out = ".";
};

int Run(SweepFlags& f) {
  auto sizes = ParseSizeList(f.batch_sizes, "--batch-sizes");
  if (!sizes.ok()) return Fail(sizes.status());
  f.sweep.batch_sizes = *sizes;
  if (!f.seq_lens.empty()) {
    auto lens = ParseSizeList(f.seq_lens, "--seq-lens");
    if (!lens.ok()) return Fail(lens.status());
    f.sweep.seq_lens = *lens;
  }
  auto result = RunSweep(f.sweep, [](const std::string& what) { std::cerr << "sweep: " << what << std::endl; });
  if (!result.ok()) return Fail(result.status());
  Status made = MakeDirs(f.out);
  if (made.ok()) made = WriteFileAtomic(f.out + "/batch_sweep.txt", result->text);
  if (made.ok()) made = WriteFileAtomic(f.out + "/batch_sweep.json", result->json.dump(2) + "\n");
  if (!made.ok()) return Fail(made);
  std::cout << result->text;
  return 0;
}

}  // namespace

void RegisterSweep(CLI::App& app, std::vector<Command>* out) {
  auto f = std::make_shared<SweepFlags>();
  f->sweep.bench.iterations = 10;
  auto* sw = app.add_subcommand("sweep", "Throughput, latency and memory over batch sizes; the batch to use");
  AddWorkloadOptions(sw, f->sweep.bench);
  sw->add_option("--batch-sizes", f->batch_sizes, "batch sizes, comma-separated")->capture_default_str();
  sw->add_option("--seq-lens", f->seq_lens, "also sweep these sequence-length buckets, comma-separated");
  sw->add_option("--slo-ms", f->sweep.slo_ms, "P95 batch-latency SLO in ms (0: none)")->capture_default_str();
  sw->add_option("--memory-budget-mb", f->sweep.memory_budget_mb, "peak memory budget in MB (0: none)")
      ->capture_default_str();
  sw->add_option("--out", f->out, "directory for batch_sweep.txt and batch_sweep.json")
      ->capture_default_str();
  out->push_back({sw, [f] { return Run(*f); }});
}

}  // namespace tierscope::cli
