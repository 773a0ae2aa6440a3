// `tierscope run`: the model on inputs given as JSON, outputs written as JSON, .npy or
// .npz.
#ifndef TIERSCOPE_CLI_RUN_COMMAND_H_
#define TIERSCOPE_CLI_RUN_COMMAND_H_

#include <string>

#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

struct RunOptions {
  std::string model_dir;  // empty: the built-in default model
  std::string inputs_path;
  std::string output_path;
  std::string dtype = "fp32";
  bool pooler = false;
  bool hidden_states = false;
  int threads = 0;
  std::string device = "cpu";  // cpu | cuda[:N]
};

// Parses {"input_ids": [[...]], "attention_mask": [[...]], "token_type_ids": [[...]]}.
// `source` names the input in errors.
StatusOr<BatchInput> ParseInputsJson(const std::string& text, const std::string& source);

Status RunModel(const RunOptions& options);

}  // namespace tierscope

#endif  // TIERSCOPE_CLI_RUN_COMMAND_H_
