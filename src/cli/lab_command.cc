// `tierscope lab`: the whole study in one command, into a results directory.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "lab/lab.h"

namespace tierscope::cli {

void RegisterLab(CLI::App& app, std::vector<Command>* out) {
  auto lab = std::make_shared<LabOptions>();
  auto* lb = app.add_subcommand("lab", "The whole study in one command: results/ with summary.json and report.html");
  lb->add_option("--model", lab->model_dir, "Hugging Face model directory (default: the built-in model)");
  lb->add_option("--out", lab->out_dir, "results directory")->capture_default_str();
  lb->add_flag("--quick", lab->quick, "a one-minute version (fewer repeats, iterations and sweep points)");
  lb->add_option("--threads", lab->threads, "worker threads (0: all cores)")->capture_default_str();
  lb->add_option("--device", lab->device, "cpu | cuda | cuda:N")->capture_default_str();
  lb->add_option("--engine", lab->engine, "native (tierscope's engine) | torch (the model through PyTorch)")
      ->capture_default_str();
  lb->add_option("--python", lab->python, "--engine torch: the Python to run (default: TIERSCOPE_PYTHON, the test "
                 "venv's, python3)");
  lb->add_option("--timeout", lab->timeout_s,
                 "--engine torch: seconds a run, or a profiler's run, may take before it is stopped (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e7));
  lb->add_option("--batch-size", lab->batch_size, "samples per work unit")->capture_default_str();
  lb->add_option("--seq-len", lab->seq_len, "tokens per sample")->capture_default_str();
  lb->add_option("--seed", lab->seed, "input generator seed")->capture_default_str()->check(Seed());
  lb->add_option("--repeats", lab->repeats, "benchmark repeats per mode (0: 3, or 1 with --quick)")
      ->capture_default_str();
  lb->add_option("--system-profiler", lab->system_profiler,
                 "auto (nsys on CUDA, msys on MUSA, when on PATH) | none | nsys | msys: tier 2 also through it")
      ->capture_default_str();
  lb->add_option("--kernel-profiler", lab->kernel_profiler,
                 "auto (ncu on CUDA, mcu on MUSA, when on PATH) | none | ncu | mcu: tier 3 from its CSV")
      ->capture_default_str();
  out->push_back({lb, [lab] {
                    lab->command_line = CommandLine();
                    LabProgress progress(isatty(2) != 0);
                    auto result = RunLab(*lab, progress);
                    if (!result.ok()) return Fail(result.status());
                    const auto& h = (*result)["headline"];
                    std::printf("baseline %s: %.1f samples/s; batched FP32 x%.2f; final %s at batch %lld: "
                                "%.1f samples/s (x%.2f); FP16 cosine %.8f\nreport: %s/report.html\n",
                                h["baseline_mode"].get<std::string>().c_str(),
                                h["baseline_samples_per_s"].get<double>(), h["batch_speedup"].get<double>(),
                                h["final_mode"].get<std::string>().c_str(),
                                static_cast<long long>(h["final_batch_size"].get<int64_t>()),
                                h["final_samples_per_s"].get<double>(), h["final_speedup"].get<double>(),
                                h["fp16_cosine"].get<double>(), lab->out_dir.c_str());
                    return 0;
                  }});
}

}  // namespace tierscope::cli
