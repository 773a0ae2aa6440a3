// GET /info's body: the model (by its directory's name), its dtype and shape, the API's
// and the batcher's limits, and the server's resolved connection and buffer limits.
#include "serve/server_info.h"

#include <nlohmann/json.hpp>

#include "model/bert.h"
#include "tierscope/dtype.h"
#include "tierscope/version.h"

namespace tierscope {

namespace {

// The model directory's name, as TEI's model_id is the hub's: where it lies on the
// server's disk is not the clients' business.
std::string ModelId(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.find_last_of('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

}  // namespace

std::string ServerInfo(const BertEngine& engine, const ServerOptions& options, const BatcherOptions& b,
                       const ApiLimits& limits, const ResolvedServerLimits& resolved, std::optional<int> grpc_port,
                       bool tokenizer) {
  const BertConfig& c = engine.config();
  return nlohmann::json{
      {"model_id", ModelId(engine.model_dir())},
      {"model_name", options.model_name},
      {"model_type", "embedding"},
      {"model_dtype", DTypeName(engine.dtype())},
      {"hidden_size", c.hidden_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"vocab_size", c.vocab_size},
      {"pooling", PoolingName(options.pooling)},
      {"pooling_source", options.pooling_source},
      {"has_pooler", engine.model().has_pooler()},
      {"tokenizer", tokenizer},
      {"max_input_length", limits.max_input_length},
      {"max_client_batch_size", options.max_client_batch_size},
      {"max_batch_size", b.max_batch_size},
      {"max_batch_tokens", b.max_batch_tokens},
      {"max_queue_delay_us", b.max_queue_delay_us},
      {"max_queue", b.max_queue},
      {"grpc_port", grpc_port ? nlohmann::json(*grpc_port) : nlohmann::json(nullptr)},
      {"buckets", b.bucket_edges},
      {"batching", b.packed ? "packed" : "buckets"},
      {"threads", engine.threads()},
      {"tokenization_workers", options.tokenization_workers},  // as resolved
      {"max_connections", resolved.max_connections},
      {"max_buffered_bytes", resolved.max_buffered_bytes},
      {"device", engine.device_name()},
      {"version", TIERSCOPE_VERSION}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // the dir may not be UTF-8
}

}  // namespace tierscope
