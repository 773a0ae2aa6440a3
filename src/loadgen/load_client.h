// The HTTP/1.1 client under `tierscope load`: one-off GETs (/metrics, /info) and the
// traffic itself, driven by one Boost.Beast io_context on the calling thread. Open loop:
// Poisson arrivals, each sent on an idle keep-alive connection, a new one (up to
// max_connections) or queued in the client, and timed from its scheduled arrival.
// Closed loop: `concurrency` connections, each sending as soon as its answer arrives.
#ifndef TIERSCOPE_LOADGEN_LOAD_CLIENT_H_
#define TIERSCOPE_LOADGEN_LOAD_CLIENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/load_gen.h"
#include "loadgen/load_stats.h"
#include "tierscope/status.h"

namespace tierscope {

struct HttpReply {
  int status = 0;
  std::string body;
};

// The addresses `host` resolves to, as text; InvalidArgument naming --url when it does not.
StatusOr<std::vector<std::string>> ResolveHost(const std::string& host, uint16_t port);

// One GET of `target` on a fresh connection, given up after timeout_s. FailedPrecondition
// naming the step ("GET /metrics: connect: Connection refused") when it fails.
StatusOr<HttpReply> HttpGet(const std::string& host, uint16_t port, const std::string& target,
                            double timeout_s);

struct TrafficPlan {
  LoadOptions options;  // already checked
  LengthSpec lengths;
  std::string host;  // without brackets
  uint16_t port = 80;
  std::string target;                // the POST target: /embed or /v2/models/{name}/infer
  std::vector<std::string> outputs;  // infer: the outputs to ask for
};

struct TrafficResult {
  // The report's counters: issued, sent, completed, ok, errors, error_samples,
  // warmup_requests, duration_s, throughput_rps, inputs_per_s, tokens_per_s, offered_rps,
  // latency_ms, latency_from, connection counts, max_client_queue, schedule_lag_ms
  // (open loop) and warnings.
  nlohmann::json counters;
  // GET /metrics at the end of the warmup (only when warmup_s > 0 and it was reached).
  std::optional<StatusOr<HttpReply>> warm_metrics;
};

// Runs the traffic; returns when every request is answered or given up (at most
// duration_s + timeout_s after the start). Transport failures are counted, never returned.
TrafficResult RunTraffic(const TrafficPlan& plan);

}  // namespace tierscope

#endif  // TIERSCOPE_LOADGEN_LOAD_CLIENT_H_
