// `tierscope bench`: the no-profiler benchmark, or with --profile tiers 1 and 2.
#include <iostream>
#include <memory>

#include "cli/command.h"

namespace tierscope::cli {

void RegisterBench(CLI::App& app, std::vector<Command>* out) {
  auto bench = std::make_shared<BenchOptions>();
  auto* b = app.add_subcommand("bench", "Benchmark the BERT encoder without a profiler (prints RESULT_JSON=)");
  AddWorkloadOptions(b, *bench);
  b->add_flag("--profile", bench->profile,
              "record operators, launches, kernels and memory (tiers 1 and 2) and print "
              "the key_averages table and per-unit counts");
  b->add_flag("--graph", bench->graph,
              "capture one work unit as a CUDA graph and time its replays (--device cuda)");
  b->add_option("--trace", bench->trace_path, "write the profile as a Kineto Chrome trace (.json or .json.gz)");
  b->add_option("--profile-skip", bench->profile_skip, "timed units to run before recording starts")
      ->capture_default_str();
  b->add_option("--profile-units", bench->profile_units, "units to record (0: until the end)")
      ->capture_default_str();
  b->add_option("--profile-delay", bench->profile_delay_s,
                "seconds after warmup before recording starts (like nsys --delay)")
      ->capture_default_str();
  b->add_option("--profile-duration", bench->profile_duration_s,
                "seconds to record (0: until the end; like nsys --duration)")
      ->capture_default_str();
  b->add_option("--table-rows", bench->table_rows, "rows of the operator table")->capture_default_str();
  out->push_back({b, [bench] {
                    auto result = RunBench(*bench);
                    if (!result.ok()) return Fail(result.status());
                    std::cout << result->profile_text << FormatResultLine(result->result.ToJson()) << std::endl;
                    return 0;
                  }});
}

}  // namespace tierscope::cli
