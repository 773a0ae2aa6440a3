// The tierscope command line: one binary, one subcommand per job.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/commands.h"
#include "core/exceptions.h"
#include "core/paths.h"
#include "core/text.h"
#include "lab/bench.h"
#include "lab/kernel.h"
#include "lab/lab.h"
#include "lab/sweep.h"
#include "lab/validate.h"
#include "text/wordpiece.h"
#include "lab/run.h"
#include "lab/serve_command.h"
#include "serve/load_gen.h"
#include "tierscope/version.h"

namespace {

using tierscope::Status;
using tierscope::StatusCode;

// Bad flag values exit 2 (usage); other failures exit 1.
int Fail(const Status& s) {
  std::cerr << "tierscope: error: " << s.message() << "\n";
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kOutOfRange ||
                 s.code() == StatusCode::kNotFound
             ? 2
             : 1;
}

// The workload flags `bench` and `kernel` share.
void AddWorkloadOptions(CLI::App* c, tierscope::BenchOptions& bench) {
  c->add_option("--model", bench.model_dir, "Hugging Face model directory (default: the built-in model)");
  c->add_option("--mode", bench.mode, "serial-fp32 | batch-fp32 | batch-fp16 | batch-bf16")
      ->capture_default_str();
  c->add_option("--batch-size", bench.batch_size, "samples per work unit")->capture_default_str();
  c->add_option("--seq-len", bench.seq_len, "tokens per sample")->capture_default_str();
  c->add_option("--warmup", bench.warmup, "untimed work units first")->capture_default_str();
  c->add_option("--iterations", bench.iterations, "timed work units")->capture_default_str();
  c->add_option("--seed", bench.seed, "input generator seed")->capture_default_str();
  c->add_option("--pre-delay", bench.pre_delay_s, "seconds to sleep after loading, before warmup")
      ->capture_default_str();
  c->add_option("--threads", bench.threads, "worker threads (0: all cores)")->capture_default_str();
  c->add_option("--device", bench.device, "cpu | cuda | cuda:N")->capture_default_str();
}

int Main(int argc, char** argv) {
  CLI::App app{"tierscope: tune transformer inference tier by tier (framework, system, kernel)"};
  app.set_version_flag("--version", std::string("tierscope ") + TIERSCOPE_VERSION);
  app.require_subcommand(1);

  tierscope::BenchOptions bench;
  auto* b = app.add_subcommand("bench", "Benchmark the BERT encoder without a profiler (prints RESULT_JSON=)");
  AddWorkloadOptions(b, bench);
  b->add_flag("--profile", bench.profile,
              "record operators, launches, kernels and memory (tiers 1 and 2) and print "
              "the key_averages table and per-unit counts");
  b->add_flag("--graph", bench.graph,
              "capture one work unit as a CUDA graph and time its replays (--device cuda)");
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
  r->add_option("--device", run.device, "cpu | cuda | cuda:N")->capture_default_str();

  // Analyzer commands: any supported trace (Kineto .json/.json.gz, nsys SQLite).
  std::string format = "text", unit, base_path, new_path, trace_path, reports;
  double short_us = 10;
  auto add_common = [&](CLI::App* c) {
    c->add_option("--format", format, "text | json | csv")->capture_default_str();
    c->add_option("--unit", unit,
                  "work-unit annotation (default: ProfilerStep#N, serial_bert_forward or "
                  "batched_bert_forward, whichever the trace has)");
    c->add_option("--short-kernel-us", short_us, "kernels shorter than this are short")
        ->capture_default_str();
  };
  auto* an = app.add_subcommand("analyze", "Every report of a trace plus the diagnosis");
  an->add_option("trace", trace_path, "Kineto trace (.json/.json.gz) or nsys SQLite export")->required();
  add_common(an);
  auto* st = app.add_subcommand("stats", "Reports of a trace by name");
  st->add_option("trace", trace_path, "Kineto trace (.json/.json.gz) or nsys SQLite export")->required();
  st->add_option("--report", reports, "report names, comma-separated (see --list)")->required();
  add_common(st);
  auto* df = app.add_subcommand("diff", "Compare a baseline trace with a new one");
  df->add_option("base", base_path, "baseline trace")->required();
  df->add_option("new", new_path, "new trace")->required();
  add_common(df);

  tierscope::KernelCommandOptions kern;
  kern.bench.warmup = 1;
  kern.bench.iterations = 1;
  std::string cache_control = "all", report_path = "kernel_report.json";
  bool list_sections = false;
  auto* k = app.add_subcommand(
      "kernel", "Tier 3: replay one hot kernel and report its sections (like ncu -k NAME -c COUNT)");
  AddWorkloadOptions(k, kern.bench);
  k->add_option("-k,--kernel-name", kern.inspector.filter.name,
                "kernel to profile: an exact name, or regex:PATTERN");
  k->add_option("-s,--launch-skip", kern.inspector.filter.skip,
                "matching launches to let run first")->capture_default_str();
  k->add_option("-c,--launch-count", kern.inspector.filter.count, "matching launches to profile")
      ->capture_default_str();
  k->add_option("--section,--sections", kern.sections,
                "sections, comma-separated (default: all; see --list-sections)");
  k->add_flag("--list-sections", list_sections, "list the sections and exit");
  k->add_option("--replay-passes", kern.inspector.passes, "replay passes per profiled launch")
      ->capture_default_str();
  k->add_option("--cache-control", cache_control,
                "all: flush the caches before each pass (as ncu does); none: keep them")
      ->capture_default_str();
  k->add_option("--ncu-csv", kern.ncu_csv,
                "instead of a workload: the kernels of an Nsight Compute CSV (ncu --csv --page details)");
  k->add_option("--from-trace", kern.trace,
                "instead of a workload: a kernel of a tier-2 trace (default: the hottest)");
  k->add_option("-o,--export", report_path, "the JSON report file")->capture_default_str();
  k->add_flag("--recalibrate", kern.recalibrate, "measure the machine's peaks again");

  tierscope::SweepOptions sweep;
  sweep.bench.iterations = 10;
  std::string batch_sizes = "1,4,16,64,128,256", seq_lens, sweep_out = ".";
  auto* sw = app.add_subcommand("sweep", "Throughput, latency and memory over batch sizes; the batch to use");
  AddWorkloadOptions(sw, sweep.bench);
  sw->add_option("--batch-sizes", batch_sizes, "batch sizes, comma-separated")->capture_default_str();
  sw->add_option("--seq-lens", seq_lens, "also sweep these sequence-length buckets, comma-separated");
  sw->add_option("--slo-ms", sweep.slo_ms, "P95 batch-latency SLO in ms (0: none)")->capture_default_str();
  sw->add_option("--memory-budget-mb", sweep.memory_budget_mb, "peak memory budget in MB (0: none)")
      ->capture_default_str();
  sw->add_option("--out", sweep_out, "directory for batch_sweep.txt and batch_sweep.json")
      ->capture_default_str();

  tierscope::ValidateOptions val;
  std::string val_out = ".";
  auto* va = app.add_subcommand("validate", "FP16 and BF16 against FP32 on the same inputs, with tolerances");
  va->add_option("--model", val.model_dir, "Hugging Face model directory (default: the built-in model)");
  va->add_option("--batch-size", val.batch_size, "samples")->capture_default_str();
  va->add_option("--seq-len", val.seq_len, "tokens per sample")->capture_default_str();
  va->add_option("--seed", val.seed, "input generator seed")->capture_default_str();
  va->add_option("--threads", val.threads, "worker threads (0: all cores)")->capture_default_str();
  va->add_option("--device", val.device, "cpu | cuda | cuda:N")->capture_default_str();
  va->add_option("--out", val_out, "directory for validation.json")->capture_default_str();

  tierscope::LabOptions lab;
  auto* lb = app.add_subcommand("lab", "The whole study in one command: results/ with summary.json and report.html");
  lb->add_option("--model", lab.model_dir, "Hugging Face model directory (default: the built-in model)");
  lb->add_option("--out", lab.out_dir, "results directory")->capture_default_str();
  lb->add_flag("--quick", lab.quick, "a one-minute version (fewer repeats, iterations and sweep points)");
  lb->add_option("--threads", lab.threads, "worker threads (0: all cores)")->capture_default_str();
  lb->add_option("--device", lab.device, "cpu | cuda | cuda:N")->capture_default_str();
  lb->add_option("--batch-size", lab.batch_size, "samples per work unit")->capture_default_str();
  lb->add_option("--seq-len", lab.seq_len, "tokens per sample")->capture_default_str();
  lb->add_option("--seed", lab.seed, "input generator seed")->capture_default_str();
  lb->add_option("--repeats", lab.repeats, "benchmark repeats per mode (0: 3, or 1 with --quick)")
      ->capture_default_str();

  std::string tok_vocab, tok_text;
  bool tok_cased = false, tok_no_special = false;
  auto* tk = app.add_subcommand("tokenize",
                                "BERT WordPiece tokenization: --text, or JSON strings one per line on stdin");
  tk->add_option("--vocab", tok_vocab, "vocab.txt (or a model directory holding one)")->required();
  tk->add_option("--text", tok_text, "the text to tokenize (else JSON-lines strings from stdin)");
  tk->add_flag("--cased", tok_cased, "keep case and accents (default: uncased, as bert-base-uncased)");
  tk->add_flag("--no-special-tokens", tok_no_special, "leave out [CLS] and [SEP]");

  tierscope::ServeCommandOptions serve;
  auto* sv = app.add_subcommand("serve", "Serve the model over HTTP with dynamic batching "
                                         "(/embed, KServe v2, /metrics, /info)");
  sv->add_option("--model", serve.model_dir, "Hugging Face model directory (default: the built-in model)");
  sv->add_option("--dtype", serve.dtype, "fp32 | fp16 | bf16")->capture_default_str();
  sv->add_option("--threads", serve.threads, "engine worker threads (0: all cores)")->capture_default_str();
  sv->add_option("--device", serve.device, "cpu | cuda | cuda:N")->capture_default_str();
  sv->add_option("--host", serve.server.host, "address to listen on")->capture_default_str();
  sv->add_option("--port", serve.server.port, "port (0: any free one, printed)")->capture_default_str();
  sv->add_option("--model-name", serve.server.model_name,
                 "the name in /v2/models/{name} (default: the directory's name)");
  sv->add_option("--pooling", serve.pooling,
                 "/embed pooling: auto (the directory's 1_Pooling/config.json, else cls) | cls | mean")
      ->capture_default_str();
  sv->add_option("--buckets", serve.buckets, "sequence-length bucket edges, increasing")
      ->capture_default_str();
  sv->add_option("--max-batch-size", serve.batcher.max_batch_size, "inputs per batch (1: no batching)")
      ->capture_default_str();
  sv->add_option("--max-batch-tokens", serve.batcher.max_batch_tokens,
                 "padded tokens per batch (size x bucket edge)")->capture_default_str();
  sv->add_option("--max-queue-delay-ms", serve.max_queue_delay_ms,
                 "longest an input waits for its batch to fill")->capture_default_str();
  sv->add_option("--max-queue", serve.batcher.max_queue, "inputs waiting before 429")
      ->capture_default_str();
  sv->add_option("--max-client-batch-size", serve.server.max_client_batch_size,
                 "inputs per request before 413")->capture_default_str();
  sv->add_option("--max-input-length", serve.server.max_input_length,
                 "tokens per input before 422 or truncation (0: sentence_bert_config.json's "
                 "max_seq_length, else the model's positions; capped by the largest bucket)")
      ->capture_default_str();
  sv->add_option("--max-body-bytes", serve.server.max_body_bytes, "request body limit (413 above)")
      ->capture_default_str();
  sv->add_option("--drain-timeout", serve.server.drain_timeout_s,
                 "seconds to finish queued work after SIGTERM/SIGINT")->capture_default_str();
  sv->add_option("--idle-timeout", serve.server.idle_timeout_s,
                 "seconds before an idle keep-alive connection is closed")->capture_default_str();

  tierscope::LoadOptions load;
  std::string load_json;
  auto* ld = app.add_subcommand(
      "load", "Load generator for tierscope serve: open-loop Poisson or closed-loop clients; "
              "latency percentiles, errors and the server's batch sizes");
  ld->add_option("--url", load.url, "server URL (loopback unless --allow-remote)")->capture_default_str();
  ld->add_option("--endpoint", load.endpoint, "embed | infer (KServe v2)")->capture_default_str();
  ld->add_option("--model", load.model_name, "infer: the model name (default: the server's /info)");
  ld->add_option("--outputs", load.infer_outputs, "infer: output names, comma-separated")
      ->capture_default_str();
  ld->add_option("--mode", load.mode, "open (Poisson arrivals at --rate) | closed (--concurrency clients)")
      ->capture_default_str();
  ld->add_option("--rate", load.rate, "open loop: requests per second")->capture_default_str();
  ld->add_option("--concurrency", load.concurrency, "closed loop: clients")->capture_default_str();
  ld->add_option("--duration", load.duration_s, "seconds of load")->capture_default_str();
  ld->add_option("--warmup", load.warmup_s, "first seconds not counted")->capture_default_str();
  ld->add_option("--lengths", load.lengths,
                 "tokens per input with [CLS]/[SEP]: fixed:N | uniform:A-B | choice:A,B,C")
      ->capture_default_str();
  ld->add_option("--inputs-per-request", load.inputs_per_request, "inputs in each request")
      ->capture_default_str();
  ld->add_option("--max-connections", load.max_connections, "open loop: connections at most")
      ->capture_default_str();
  ld->add_option("--timeout", load.timeout_s, "seconds per request and for stragglers")
      ->capture_default_str();
  ld->add_option("--seed", load.seed, "arrival and text seed")->capture_default_str();
  ld->add_flag("--allow-remote", load.allow_remote, "allow a non-loopback server");
  ld->add_option("--json", load_json, "also write the report as JSON to this file");

  int device_threads = 0;
  std::string device_name = "cpu";
  bool device_recalibrate = false;
  std::string device_format = "text";
  auto* dv = app.add_subcommand("device", "The device's properties and its measured peaks");
  dv->add_option("--threads", device_threads, "worker threads (0: all cores)")->capture_default_str();
  dv->add_option("--device", device_name, "cpu | cuda | cuda:N")->capture_default_str();
  dv->add_flag("--recalibrate", device_recalibrate, "measure the peaks again (about 2 s)");
  dv->add_option("--format", device_format, "text | json")->capture_default_str();

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
  if (an->parsed() || st->parsed() || df->parsed()) {
    tierscope::OutputFormat f;
    if (!tierscope::ParseOutputFormat(format, &f)) {
      return Fail(tierscope::InvalidArgument("--format must be text, json or csv, got '" + format + "'"));
    }
    if (!(short_us > 0)) return Fail(tierscope::InvalidArgument("--short-kernel-us must be > 0"));
    tierscope::AnalysisOptions o;
    o.unit = unit;
    o.short_kernel_ns = short_us * 1000.0;
    if (df->parsed()) {
      auto base = tierscope::LoadTrace(base_path);
      if (!base.ok()) return Fail(base.status());
      auto next = tierscope::LoadTrace(new_path);
      if (!next.ok()) return Fail(next.status());
      std::cout << tierscope::DiffTraceReport(*base, *next, o, f);
      return 0;
    }
    if (tierscope::IsNcuCsv(trace_path)) {  // kernel metrics, not a timeline
      auto out = tierscope::AnalyzeNcuCsv(trace_path, f);
      if (!out.ok()) return Fail(out.status());
      std::cout << *out;
      return 0;
    }
    auto trace = tierscope::LoadTrace(trace_path);
    if (!trace.ok()) return Fail(trace.status());
    if (an->parsed()) {
      std::cout << tierscope::AnalyzeTrace(*trace, o, f);
      return 0;
    }
    auto out = tierscope::TraceStats(*trace, tierscope::SplitList(reports), o, f);
    if (!out.ok()) return Fail(out.status());
    std::cout << *out;
    return 0;
  }
  if (k->parsed()) {
    if (list_sections) {
      std::cout << tierscope::ListSectionsText();
      return 0;
    }
    if (cache_control != "all" && cache_control != "none") {
      return Fail(tierscope::InvalidArgument("--cache-control must be all or none, got '" +
                                             cache_control + "'"));
    }
    kern.inspector.flush_caches = cache_control == "all";
    if (kern.inspector.filter.name.empty() && kern.ncu_csv.empty() && kern.trace.empty()) {
      return Fail(tierscope::InvalidArgument(
          "name the kernel with -k NAME (or -k regex:PATTERN); a run without -k lists the "
          "kernels only with --ncu-csv or --from-trace"));
    }
    auto result = tierscope::RunKernelCommand(kern);
    if (!result.ok()) return Fail(result.status());
    Status written = tierscope::WriteFileAtomic(report_path, result->json.dump(2) + "\n");
    if (!written.ok()) return Fail(written);
    std::cout << result->text << "==TIERSCOPE== report: " << report_path << std::endl;
    return 0;
  }
  if (lb->parsed()) {
    for (int i = 0; i < argc; ++i) lab.command_line += (i ? " " : "") + std::string(argv[i]);
    tierscope::LabProgress progress(isatty(2) != 0);
    auto result = tierscope::RunLab(lab, progress);
    if (!result.ok()) return Fail(result.status());
    const auto& h = (*result)["headline"];
    std::printf("baseline %s: %.1f samples/s; batched FP32 x%.2f; final %s: %.1f samples/s (x%.2f); "
                "FP16 cosine %.8f\nreport: %s/report.html\n",
                h["baseline_mode"].get<std::string>().c_str(), h["baseline_samples_per_s"].get<double>(),
                h["batch_speedup"].get<double>(), h["final_mode"].get<std::string>().c_str(),
                h["final_samples_per_s"].get<double>(), h["final_speedup"].get<double>(),
                h["fp16_cosine"].get<double>(), lab.out_dir.c_str());
    return 0;
  }
  if (sw->parsed()) {
    auto sizes = tierscope::ParseSizeList(batch_sizes, "--batch-sizes");
    if (!sizes.ok()) return Fail(sizes.status());
    sweep.batch_sizes = *sizes;
    if (!seq_lens.empty()) {
      auto lens = tierscope::ParseSizeList(seq_lens, "--seq-lens");
      if (!lens.ok()) return Fail(lens.status());
      sweep.seq_lens = *lens;
    }
    auto result = tierscope::RunSweep(sweep, [](const std::string& what) {
      std::cerr << "sweep: " << what << std::endl;
    });
    if (!result.ok()) return Fail(result.status());
    Status made = tierscope::MakeDirs(sweep_out);
    if (made.ok()) made = tierscope::WriteFileAtomic(sweep_out + "/batch_sweep.txt", result->text);
    if (made.ok()) {
      made = tierscope::WriteFileAtomic(sweep_out + "/batch_sweep.json", result->json.dump(2) + "\n");
    }
    if (!made.ok()) return Fail(made);
    std::cout << result->text;
    return 0;
  }
  if (va->parsed()) {
    auto result = tierscope::RunValidation(val);
    if (!result.ok()) return Fail(result.status());
    Status made = tierscope::MakeDirs(val_out);
    if (made.ok()) made = tierscope::WriteFileAtomic(val_out + "/validation.json", result->json.dump(2) + "\n");
    if (!made.ok()) return Fail(made);
    std::cout << result->text;
    if (!result->pass) {
      std::cerr << "tierscope: error: validation FAILED: a precision is outside its tolerance\n";
      return 1;
    }
    return 0;
  }
  if (tk->parsed()) {
    std::string path = tok_vocab;
    if (tierscope::IsDirectory(path)) path += "/vocab.txt";
    auto tok = tierscope::WordPieceTokenizer::Load(path, !tok_cased);
    if (!tok.ok()) return Fail(tok.status());
    auto emit = [&](const std::string& text) {
      nlohmann::json j;
      j["tokens"] = tok->Tokenize(text);
      j["ids"] = tok->Encode(text, !tok_no_special);
      std::cout << j.dump() << "\n";
    };
    if (tk->count("--text") > 0) {
      emit(tok_text);
      return 0;
    }
    std::string line;
    for (int64_t n = 1; std::getline(std::cin, line); ++n) {
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_string()) {
        return Fail(tierscope::InvalidArgument("stdin line " + std::to_string(n) +
                                               ": expected a JSON string"));
      }
      emit(j.get<std::string>());
    }
    return 0;
  }
  if (sv->parsed()) {
    Status s = tierscope::RunServeCommand(serve);
    if (!s.ok()) return Fail(s);
    return 0;
  }
  if (ld->parsed()) {
    auto report = tierscope::RunLoad(load);
    if (!report.ok()) return Fail(report.status());
    if (!load_json.empty()) {
      Status written = tierscope::WriteFileAtomic(load_json, report->dump(2) + "\n");
      if (!written.ok()) return Fail(written);
    }
    std::cout << tierscope::FormatLoadReport(*report);
    if ((*report)["ok"].get<int64_t>() == 0) {
      std::cerr << "tierscope: error: no request succeeded\n";
      return 1;
    }
    return 0;
  }
  if (dv->parsed()) {
    if (device_format != "text" && device_format != "json") {
      return Fail(tierscope::InvalidArgument("--format must be text or json, got '" + device_format + "'"));
    }
    auto text = tierscope::DeviceReport(device_name, device_threads, device_recalibrate,
                                        device_format == "json");
    if (!text.ok()) return Fail(text.status());
    std::cout << *text;
    return 0;
  }
  if (r->parsed()) {
    Status s = tierscope::RunModel(run);
    if (!s.ok()) return Fail(s);
    return 0;
  }
  return 2;
}

}  // namespace

// The catch-all: whatever escapes a command (an allocation that failed, a library's
// exception) ends in one line and a non-zero status, never an abort.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (...) {
    return Fail(tierscope::StatusFromCurrentException("tierscope"));
  }
}
