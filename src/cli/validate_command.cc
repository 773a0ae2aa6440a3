// `tierscope validate`: FP16 and BF16 against FP32 on the same inputs, with tolerances.
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/paths.h"
#include "lab/validate.h"

namespace tierscope::cli {

void RegisterValidate(CLI::App& app, std::vector<Command>* out) {
  auto val = std::make_shared<ValidateOptions>();
  auto dir = std::make_shared<std::string>(".");
  auto* va = app.add_subcommand("validate", "FP16 and BF16 against FP32 on the same inputs, with tolerances");
  va->add_option("--model", val->model_dir, "Hugging Face model directory (default: the built-in model)");
  va->add_option("--batch-size", val->batch_size, "samples")->capture_default_str();
  va->add_option("--seq-len", val->seq_len, "tokens per sample")->capture_default_str();
  va->add_option("--seed", val->seed, "input generator seed")->capture_default_str()->check(Seed());
  va->add_option("--threads", val->threads, "worker threads (0: all cores)")->capture_default_str();
  va->add_option("--device", val->device, "cpu | cuda | cuda:N")->capture_default_str();
  va->add_option("--engine", val->engine, "native | torch (each precision through PyTorch)")->capture_default_str();
  va->add_option("--python", val->python, "--engine torch: the Python to run");
  va->add_option("--timeout", val->timeout_s, "--engine torch: seconds a run may take before its worker is stopped "
                 "(0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e7));
  va->add_option("--out", *dir, "directory for validation.json")->capture_default_str();
  out->push_back({va, [val, dir] {
                    auto result = RunValidation(*val);
                    if (!result.ok()) return Fail(result.status());
                    Status made = MakeDirs(*dir);
                    if (made.ok()) made = WriteFileAtomic(*dir + "/validation.json", result->json.dump(2) + "\n");
                    if (!made.ok()) return Fail(made);
                    std::cout << result->text;
                    if (!result->pass) {
                      std::cerr << "tierscope: error: validation FAILED: a precision is outside its tolerance\n";
                      return 1;
                    }
                    return 0;
                  }});
}

}  // namespace tierscope::cli
