// `tierscope serve`: flags to engine, tokenizer, batcher and server.
#include "cli/serve_command.h"

#include <cmath>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "core/allocator.h"
#include "core/paths.h"
#include "core/text.h"
#include "serve/api.h"
#include "serve/http_limits.h"
#include "text/wordpiece.h"
#include "tierscope/engine.h"

namespace tierscope {

Status RunServeCommand(ServeCommandOptions o) {
  TS_ASSIGN_OR_RETURN(DType dtype, ParseRunDType(o.dtype));
  if (o.threads < 0) return InvalidArgument("--threads must be >= 0");
  if (!(o.max_queue_delay_ms >= 0) || !std::isfinite(o.max_queue_delay_ms)) {
    return InvalidArgument("--max-queue-delay-ms must be >= 0");
  }
  TS_ASSIGN_OR_RETURN(o.batcher.bucket_edges, ParseSizeList(o.buckets, "--buckets"));
  if (o.batching != "packed" && o.batching != "buckets") {
    return InvalidArgument("--batching " + o.batching + ": expected packed or buckets");
  }
  o.batcher.packed = o.batching == "packed";
  o.batcher.max_queue_delay_us = static_cast<int64_t>(std::llround(o.max_queue_delay_ms * 1000));
  TS_RETURN_IF_ERROR(Batcher::Create(o.batcher).status());

  // The server's limits before the model loads: a bad one fails at once.
  TS_RETURN_IF_ERROR(ResolveServerLimits(o.server, DescriptorLimit()).status());
  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  if (o.pooling == "cls" || o.pooling == "mean") {
    o.server.pooling = o.pooling == "mean" ? Pooling::kMean : Pooling::kCls;
    o.server.pooling_source = "--pooling";
  } else if (o.pooling == "auto") {
    TS_ASSIGN_OR_RETURN(std::optional<Pooling> p, PoolingFromModelDir(dir));
    o.server.pooling = p.value_or(Pooling::kCls);
    // Relative to the model directory: /info does not tell clients where it lies.
    o.server.pooling_source = p ? "1_Pooling/config.json" : "default (CLS)";
  } else {
    return InvalidArgument("--pooling must be auto, cls or mean, got '" + o.pooling + "'");
  }
  if (o.server.model_name.empty()) {
    std::string base = dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    base = base.substr(base.find_last_of('/') + 1);
    o.server.model_name = base.empty() ? "bert" : base;
  }
  if (o.server.max_input_length == 0) o.server.max_input_length = MaxSeqLengthFromModelDir(dir);
  // The dispatcher thread's malloc arena would otherwise give freed output buffers back
  // to the kernel after every batch and fault them in again on the next (measured: 10x
  // the page faults and a third less throughput).
  KeepFreedMemoryUpTo(size_t{512} << 20, size_t{32} << 20);
  EngineOptions eo;
  eo.dtype = dtype;
  eo.threads = o.threads;
  eo.device = o.device;
  TS_ASSIGN_OR_RETURN(auto engine, BertEngine::Load(dir, eo));
  std::optional<WordPieceTokenizer> tokenizer;
  if (IsRegularFile(dir + "/vocab.txt")) {
    TS_ASSIGN_OR_RETURN(WordPieceTokenizer t,
                        WordPieceTokenizer::Load(dir + "/vocab.txt", LowerCaseFromModelDir(dir)));
    tokenizer.emplace(std::move(t));
  } else {
    std::cerr << "tierscope serve: " << dir << " has no vocab.txt; /embed is off (use /v2 infer "
              << "with token ids)\n";
  }
  std::cerr << "tierscope serve: model " << o.server.model_name << " (" << dir << "), "
            << DTypeName(dtype) << ", " << engine->threads() << " threads, pooling "
            << PoolingName(o.server.pooling) << "\n";
  return RunServer(*engine, tokenizer ? &*tokenizer : nullptr, o.batcher, o.server);
}

namespace cli {
namespace {

// A server option, checked on the command line against the range the server itself checks.
template <typename T>
void AddServerOption(CLI::App* sv, const char* flag, T& field, const std::string& help) {
  const OptionRange& r = ServerOptionRange(flag);
  sv->add_option(flag, field, help)->capture_default_str()->check(InRange(r.lo, r.hi, r.unit));
}

}  // namespace

void RegisterServe(CLI::App& app, std::vector<Command>* out) {
  auto serve = std::make_shared<ServeCommandOptions>();
  auto* sv = app.add_subcommand("serve", "Serve the model over HTTP with dynamic batching "
                                         "(/embed, TEI, OpenAI embeddings, KServe v2 HTTP and gRPC, /metrics, /info)");
  sv->add_option("--model", serve->model_dir, "Hugging Face model directory (default: the built-in model)");
  sv->add_option("--dtype", serve->dtype, "fp32 | fp16 | bf16 | int8 (CPU: dynamic quantization)")->capture_default_str();
  sv->add_option("--threads", serve->threads, "engine worker threads (0: all cores)")->capture_default_str()->check(InRange(0, 1024));
  sv->add_option("--device", serve->device, "cpu | cuda | cuda:N")->capture_default_str();
  sv->add_option("--host", serve->server.host, "address to listen on")->capture_default_str();
  AddServerOption(sv, "--port", serve->server.port, "port (0: any free one, printed)");
  AddServerOption(sv, "--grpc-port", serve->server.grpc_port,
                 "KServe v2 gRPC (inference.GRPCInferenceService) on this port, sharing the batcher "
                 "(0: any free one, printed; -1: off)");
  sv->add_option("--model-name", serve->server.model_name,
                 "the name in /v2/models/{name} (default: the directory's name)");
  sv->add_option("--pooling", serve->pooling,
                 "/embed pooling: auto (the directory's 1_Pooling/config.json, else cls) | cls | mean")
      ->capture_default_str();
  sv->add_option("--batching", serve->batching,
                 "packed: inputs of every length in one batch, back to back, no padding computed (where the "
                 "backend packs sequences, else buckets) | buckets: by length bucket, padded to the longest")
      ->capture_default_str();
  sv->add_option("--buckets", serve->buckets,
                 "sequence-length bucket edges, increasing (packed: the largest is the longest input)")
      ->capture_default_str();
  sv->add_option("--max-batch-size", serve->batcher.max_batch_size, "inputs per batch (1: no batching)")
      ->capture_default_str()
      ->check(InRange(1, 1 << 16));
  sv->add_option("--max-batch-tokens", serve->batcher.max_batch_tokens,
                 "tokens per batch (packed: the inputs' own; buckets: size x bucket edge)")
      ->capture_default_str()
      ->check(InRange(1, 1 << 24));
  sv->add_option("--max-queue-delay-ms", serve->max_queue_delay_ms,
                 "longest an input waits for its batch to fill")->capture_default_str()->check(InRange(0, 60000, " ms"));
  sv->add_option("--max-queue", serve->batcher.max_queue, "inputs waiting before 429")
      ->capture_default_str()
      ->check(InRange(1, 1 << 20));
  AddServerOption(sv, "--max-client-batch-size", serve->server.max_client_batch_size,
                 "inputs per request before 413");
  AddServerOption(sv, "--max-input-length", serve->server.max_input_length,
                 "tokens per input before 422 or truncation (0: sentence_bert_config.json's "
                 "max_seq_length, else the model's positions; capped by the largest bucket)");
  AddServerOption(sv, "--max-body-bytes", serve->server.max_body_bytes, "request body limit (413 above); also gRPC's message limit");
  AddServerOption(sv, "--drain-timeout", serve->server.drain_timeout_s,
                 "seconds to finish queued work after SIGTERM/SIGINT (a second signal stops at once)");
  AddServerOption(sv, "--tokenization-workers", serve->server.tokenization_workers,
                 "threads that parse and tokenize request bodies and write embedding responses, off the "
                 "io thread (0: on it; -1: the cores the engine's threads leave free, at most 4)");
  AddServerOption(sv, "--idle-timeout", serve->server.idle_timeout_s,
                 "seconds before an idle keep-alive connection is closed (HTTP and gRPC)");
  AddServerOption(sv, "--max-connections", serve->server.max_connections,
                 "open HTTP connections at most (0: what the descriptor limit leaves, at most 4096); at the cap "
                 "the connection waiting longest for a request is closed, else the new one gets 503");
  AddServerOption(sv, "--max-buffered-bytes", serve->server.max_buffered_bytes,
                 "request bytes held at once over every connection, HTTP bodies and gRPC's memory (0: 32 bodies "
                 "of --max-body-bytes, 64 MiB to 1 GiB); beyond it requests get 503");
  AddServerOption(sv, "--grpc-max-streams", serve->server.grpc_max_streams, "concurrent gRPC calls per connection");
  out->push_back({sv, [serve] {
                    Status s = RunServeCommand(*serve);
                    return s.ok() ? 0 : Fail(s);
                  }});
}

}  // namespace cli
}  // namespace tierscope
