// The tierscope command line: one binary, one subcommand per job.
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "lab/bench.h"
#include "lab/run.h"
#include "tierscope/version.h"

namespace {

using tierscope::Status;
using tierscope::StatusCode;

// Bad flag values exit 2 (usage); other failures exit 1.
int Fail(const Status& s) {
  std::cerr << "tierscope: error: " << s.message() << "\n";
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kOutOfRange ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tierscope: tune transformer inference tier by tier (framework, system, kernel)"};
  app.set_version_flag("--version", std::string("tierscope ") + TIERSCOPE_VERSION);
  app.require_subcommand(1);

  tierscope::BenchOptions bench;
  auto* b = app.add_subcommand("bench", "Benchmark the BERT encoder without a profiler (prints RESULT_JSON=)");
  b->add_option("--model", bench.model_dir, "Hugging Face model directory (default: the built-in model)");
  b->add_option("--mode", bench.mode, "serial-fp32 | batch-fp32 | batch-fp16 | batch-bf16")
      ->capture_default_str();
  b->add_option("--batch-size", bench.batch_size, "samples per work unit")->capture_default_str();
  b->add_option("--seq-len", bench.seq_len, "tokens per sample")->capture_default_str();
  b->add_option("--warmup", bench.warmup, "untimed work units first")->capture_default_str();
  b->add_option("--iterations", bench.iterations, "timed work units")->capture_default_str();
  b->add_option("--seed", bench.seed, "input generator seed")->capture_default_str();
  b->add_option("--pre-delay", bench.pre_delay_s, "seconds to sleep after loading, before warmup")
      ->capture_default_str();
  b->add_option("--threads", bench.threads, "worker threads (0: all cores)")->capture_default_str();
  b->add_flag("--profile", bench.profile,
              "record operators, launches, kernels and memory (tiers 1 and 2) and print "
              "the key_averages table and per-unit counts");
  b->add_option("--trace", bench.trace_path, "write the profile as a Kineto Chrome trace (.json or .json.gz)");
  b->add_option("--profile-skip", bench.profile_skip, "timed units to run before recording starts")
      ->capture_default_str();
  b->add_option("--profile-units", bench.profile_units, "units to record (0: until the end)")
      ->capture_default_str();
  b->add_option("--profile-delay", bench.profile_delay_s,
                "seconds after warmup before recording starts (like nsys --delay)")
      ->capture_default_str();
  b->add_option("--profile-duration", bench.profile_duration_s,
                "seconds to record (0: until the end; like nsys --duration)")
      ->capture_default_str();
  b->add_option("--table-rows", bench.table_rows, "rows of the operator table")->capture_default_str();

  tierscope::RunOptions run;
  auto* r = app.add_subcommand("run", "Run the model on input ids from a JSON file");
  r->add_option("--model", run.model_dir, "Hugging Face model directory (default: the built-in model)");
  r->add_option("--inputs", run.inputs_path,
                "JSON with input_ids, optional attention_mask and token_type_ids (lists of lists)")
      ->required();
  r->add_option("--output", run.output_path, "output file: .json, .npy or .npz")->required();
  r->add_option("--dtype", run.dtype, "fp32 | fp16 | bf16")->capture_default_str();
  r->add_flag("--pooler", run.pooler, "also write pooler_output");
  r->add_flag("--hidden-states", run.hidden_states,
              "also write hidden_states [layers+1, B, S, H] (embeddings and every layer)");
  r->add_option("--threads", run.threads, "worker threads (0: all cores)")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tierscope: error: " << e.what() << "\n";
    return 2;
  }

  if (b->parsed()) {
    auto result = tierscope::RunBench(bench);
    if (!result.ok()) return Fail(result.status());
    std::cout << result->profile_text << tierscope::FormatResultLine(result->result) << std::endl;
    return 0;
  }
  if (r->parsed()) {
    Status s = tierscope::RunModel(run);
    if (!s.ok()) return Fail(s);
    return 0;
  }
  return 2;
}
