// GET /info's body for `tierscope serve`: what a client (or TEI's /info reader) needs to
// know about the model and the server's limits, never where the model lies on disk.
#ifndef TIERSCOPE_SERVE_SERVER_INFO_H_
#define TIERSCOPE_SERVE_SERVER_INFO_H_

#include <optional>
#include <string>

#include "serve/api.h"
#include "serve/batcher.h"
#include "serve/http_limits.h"
#include "serve/http_server.h"
#include "tierscope/engine.h"

namespace tierscope {

// The JSON document; `grpc_port` when gRPC listens, `tokenizer` when the model has a vocabulary.
std::string ServerInfo(const BertEngine& engine, const ServerOptions& options, const BatcherOptions& batcher,
                       const ApiLimits& limits, const ResolvedServerLimits& resolved, std::optional<int> grpc_port,
                       bool tokenizer);

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_SERVER_INFO_H_
