// The `tierscope serve` driver: resolves the model directory, loads the engine and the
// tokenizer, picks the pooling (flag, or the directory's 1_Pooling/config.json) and runs
// the HTTP server until it has drained.
#ifndef TIERSCOPE_CLI_SERVE_COMMAND_H_
#define TIERSCOPE_CLI_SERVE_COMMAND_H_

#include <string>

#include "serve/batcher.h"
#include "serve/http_server.h"
#include "tierscope/status.h"

namespace tierscope {

struct ServeCommandOptions {
  std::string model_dir;           // empty: the built-in default model
  std::string dtype = "fp32";
  int threads = 0;
  std::string device = "cpu";  // cpu | cuda[:N]
  std::string pooling = "auto";    // auto | cls | mean
  std::string buckets = "16,32,64,128,256,512";
  std::string batching = "packed";  // packed | buckets
  double max_queue_delay_ms = 2;
  BatcherOptions batcher;
  ServerOptions server;
};

Status RunServeCommand(ServeCommandOptions options);

}  // namespace tierscope

#endif  // TIERSCOPE_CLI_SERVE_COMMAND_H_
