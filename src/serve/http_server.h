// `tierscope serve`: an asynchronous HTTP/1.1 server (Boost.Beast on one Asio thread,
// keep-alive connections, no thread per connection) in front of the inference service.
// Endpoints: POST /embed (text-embeddings-inference's shape), the KServe v2 protocol
// (/v2/health/live|ready, /v2/models/{name}[/ready|/infer]), GET /metrics (Prometheus),
// GET /info and GET /health. SIGINT/SIGTERM start a graceful drain: readiness turns
// false and new inference requests get 503 (health, metrics and info still answer), every
// queued and running request is answered, then the server closes and returns.
#ifndef TIERSCOPE_SERVE_HTTP_SERVER_H_
#define TIERSCOPE_SERVE_HTTP_SERVER_H_

#include <cstdint>
#include <string>

#include "serve/batcher.h"
#include "serve/service.h"
#include "text/wordpiece.h"
#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                       // 0: any free port (printed when listening)
  std::string model_name;                // empty: "bert"
  Pooling pooling = Pooling::kCls;
  std::string pooling_source = "default";  // where the pooling came from, for /info
  int64_t max_client_batch_size = 32;    // inputs per request; more is 413
  int64_t max_input_length = 0;          // tokens per input; 0: the model's, capped by the buckets
  int64_t max_body_bytes = 8 << 20;      // larger bodies are 413
  double drain_timeout_s = 60;           // give up draining after this long
  double idle_timeout_s = 60;            // close keep-alive connections idle this long
  int grpc_port = -1;                    // KServe v2 gRPC on this port (0: any free; -1: off)
  int retry_after_s = 1;                 // Retry-After on 429 before any batch has run; after,
                                         // the queue's measured drain time
  int tokenization_workers = -1;         // threads that parse and tokenize request bodies and
                                         // write embedding responses (0: the io thread does;
                                         // -1: the cores the engine leaves free, at most 4)
  int64_t max_connections = 0;           // open HTTP connections (0: what the descriptor
                                         // limit leaves, at most 4096); at the cap the
                                         // connection waiting longest for a request is
                                         // closed, else the new one is answered 503
  int64_t max_buffered_bytes = 0;        // request bodies held at once, all connections
                                         // (0: 32 bodies, 64 MiB to 1 GiB); beyond: 503
  int grpc_max_streams = 64;             // concurrent gRPC calls per connection
};

// Request bodies are parsed and tokenized, and embedding responses written, on a pool of
// `tokenization_workers` threads (as TEI's --tokenization-workers), so a long input never
// holds up the io thread's accepts, reads and writes; the sessions' state stays on the io
// thread, the pool sees only a request's body and returns what it made of it.
// Serves until SIGINT or SIGTERM, then drains and returns. Writes
// "tierscope serve: listening on http://HOST:PORT" to stdout once the socket is bound,
// and with a gRPC port "tierscope serve: grpc listening on HOST:PORT" after it.
// `tokenizer` may be null (no vocab.txt): /embed then answers 503.
Status RunServer(BertEngine& engine, const WordPieceTokenizer* tokenizer,
                 const BatcherOptions& batcher, const ServerOptions& options);

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_HTTP_SERVER_H_
