// `tierscope load`: an HTTP load generator for `tierscope serve`. One io_context on one
// thread drives Beast keep-alive connections. Open loop: Poisson arrivals at a fixed
// rate, each timed from its scheduled arrival (so a slow server cannot hide its latency
// by slowing the client: no coordinated omission); closed loop: N clients back to back.
// The server's tierscope_batch_size histogram is read from /metrics before and after.
#ifndef TIERSCOPE_LOADGEN_LOAD_GEN_H_
#define TIERSCOPE_LOADGEN_LOAD_GEN_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/load_stats.h"
#include "tierscope/status.h"

namespace tierscope {

struct LoadOptions {
  std::string url = "http://127.0.0.1:8080";
  std::string endpoint = "embed";  // embed | infer
  std::string model_name = "";     // infer: POST /v2/models/{name}/infer; empty: ask GET /info
  std::string infer_outputs = "last_hidden_state";  // comma list of output names for infer
  std::string mode = "open";  // open (Poisson arrivals at `rate`) | closed (`concurrency` clients)
  double rate = 100;          // open loop: requests per second
  int concurrency = 16;       // closed loop: clients
  double duration_s = 10;     // how long new requests are issued
  double warmup_s = 0;        // requests issued before this are sent but not counted
  std::string lengths = "fixed:128";  // tokens per input, counting [CLS] and [SEP]
  int inputs_per_request = 1;
  int max_connections = 512;  // open loop: connections the client may open
  double timeout_s = 30;      // per request, and the wait for stragglers after duration
  uint64_t seed = 1;
  bool allow_remote = false;  // refuse non-loopback hosts unless set
};

// Runs the load and returns the report: the options, "issued", "sent", "completed", "ok",
// "errors" by kind (HTTP status, or connect / timeout / closed / io / bad_response),
// "duration_s" (the measured window: warmup_s to duration_s), "throughput_rps" and
// "inputs_per_s" (OK answers that arrived inside the window, over its length),
// "offered_rps", "latency_ms" (OK answers to requests issued inside the window),
// "server_batches" (or null with "server_metrics_error"), "max_client_queue" and
// "warnings". An unreachable server still gives a report (its requests count as connect
// errors); bad options are InvalidArgument naming the option. It returns at most
// duration_s + timeout_s (plus the /metrics and /info probes, 10 s each at most) later.
StatusOr<nlohmann::json> RunLoad(const LoadOptions& options);

// FormatLoadReport (the report as text) is declared in loadgen/load_stats.h.

// --- Parts exposed for tests -------------------------------------------------------

struct HttpUrl {
  std::string host;  // without brackets for IPv6
  uint16_t port = 80;
};

// "http://host[:port][/]", IPv6 as "http://[::1]:8080". InvalidArgument naming --url for
// https, other schemes, a path, a bad port or anything else.
StatusOr<HttpUrl> ParseHttpUrl(const std::string& url);

// True for "localhost" (and "*.localhost"), 127.0.0.0/8, ::1 and ::ffff:127.x.y.z.
bool IsLoopbackHost(const std::string& host);

// Checks every option (ranges, names, the URL, the loopback rule) without touching the
// network; InvalidArgument names the offending option.
Status CheckLoadOptions(const LoadOptions& options);

// An input of `length` tokens for /embed: length-2 random lowercase letters joined by
// spaces (each letter is one WordPiece token, so with [CLS] and [SEP] it is `length`).
std::string RandomWords(int64_t length, std::mt19937_64& rng);

// {"inputs": "q x b"} for one input, else {"inputs": ["...", "..."]}.
std::string BuildEmbedBody(const std::vector<int64_t>& lengths, std::mt19937_64& rng);

// A KServe v2 infer request: input_ids ([CLS]=101, ids in [1000, 2000), [SEP]=102) and
// attention_mask, both INT64 of shape [n, longest], shorter inputs padded with 0 / mask 0,
// and one requested output per name in `outputs`.
std::string BuildInferBody(const std::vector<int64_t>& lengths,
                           const std::vector<std::string>& outputs, std::mt19937_64& rng);

}  // namespace tierscope

#endif  // TIERSCOPE_LOADGEN_LOAD_GEN_H_
