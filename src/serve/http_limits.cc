// The server's option ranges, its connection and buffer limits, the API's limits for its
// engine (and the check that its largest batch fits), and the log limiter.
#include "serve/http_limits.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "model/bert.h"
#include "tierscope/dtype.h"
#include "serve/http_server.h"

namespace tierscope {
namespace {

std::string Num(double v) {
  std::string s = std::to_string(v);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

constexpr OptionRange kServerOptionRanges[] = {
    {"--port", 0, 65535, ""},
    {"--grpc-port", -1, 65535, ""},
    {"--max-client-batch-size", 1, 1 << 16, ""},
    {"--max-input-length", 0, 1 << 20, ""},
    {"--max-body-bytes", 1, 1 << 30, " bytes"},
    {"--drain-timeout", 0, 86400, " seconds"},
    {"--idle-timeout", 0.01, 86400, " seconds"},
    {"--tokenization-workers", -1, 64, ""},
    {"--max-connections", 0, 1 << 20, ""},
    {"--max-buffered-bytes", 0, 1099511627776.0, " bytes"},
    {"--grpc-max-streams", 1, 1 << 16, ""},
    {"--retry-after", 1, 3600, " seconds"},
};

Status InRange(const char* flag, double v) {
  const OptionRange& r = ServerOptionRange(flag);
  if (std::isfinite(v) && v >= r.lo && v <= r.hi) return OkStatus();
  return InvalidArgument(std::string(flag) + " must be in [" + Num(r.lo) + ", " + Num(r.hi) + "]" + r.unit +
                         ", got " + (std::isfinite(v) ? Num(v) : std::string("a non-finite value")));
}

}  // namespace

const OptionRange& ServerOptionRange(std::string_view flag) {
  for (const OptionRange& r : kServerOptionRanges) {
    if (flag == r.flag) return r;
  }
  throw std::out_of_range("no server option " + std::string(flag));
}

Status CheckServerOptions(const ServerOptions& o) {
  TS_RETURN_IF_ERROR(InRange("--port", o.port));
  TS_RETURN_IF_ERROR(InRange("--grpc-port", o.grpc_port));
  TS_RETURN_IF_ERROR(InRange("--max-client-batch-size", static_cast<double>(o.max_client_batch_size)));
  TS_RETURN_IF_ERROR(InRange("--max-input-length", static_cast<double>(o.max_input_length)));
  if (o.max_input_length == 1 || o.max_input_length == 2) {
    return InvalidArgument("--max-input-length " + std::to_string(o.max_input_length) +
                           " leaves no token between [CLS] and [SEP]: give at least 3, or 0 for the model's");
  }
  TS_RETURN_IF_ERROR(InRange("--max-body-bytes", static_cast<double>(o.max_body_bytes)));
  TS_RETURN_IF_ERROR(InRange("--drain-timeout", o.drain_timeout_s));
  TS_RETURN_IF_ERROR(InRange("--idle-timeout", o.idle_timeout_s));
  TS_RETURN_IF_ERROR(InRange("--tokenization-workers", o.tokenization_workers));
  TS_RETURN_IF_ERROR(InRange("--max-connections", static_cast<double>(o.max_connections)));
  TS_RETURN_IF_ERROR(InRange("--max-buffered-bytes", static_cast<double>(o.max_buffered_bytes)));
  TS_RETURN_IF_ERROR(InRange("--grpc-max-streams", o.grpc_max_streams));
  return InRange("--retry-after", o.retry_after_s);
}

StatusOr<ResolvedServerLimits> ResolveServerLimits(const ServerOptions& o, int64_t descriptor_limit) {
  TS_RETURN_IF_ERROR(CheckServerOptions(o));
  ResolvedServerLimits r;
  r.descriptor_limit = descriptor_limit;
  // The sockets answered 503 over the cap come out of the room too, not out of the reserve.
  const int64_t room = descriptor_limit - ReservedDescriptors(descriptor_limit) - r.max_refusing;
  if (room < 1) {
    return FailedPrecondition("the descriptor limit (ulimit -n " + std::to_string(descriptor_limit) +
                              ") leaves no room for connections; raise it");
  }
  if (o.max_connections > room) {
    return InvalidArgument("--max-connections must be in [1, " + std::to_string(room) +
                           "] with this descriptor limit (ulimit -n " + std::to_string(descriptor_limit) + "), got " +
                           std::to_string(o.max_connections));
  }
  r.max_connections = o.max_connections > 0 ? o.max_connections : std::min<int64_t>(room, 4096);
  if (o.max_buffered_bytes > 0 && o.max_buffered_bytes < o.max_body_bytes) {
    return InvalidArgument("--max-buffered-bytes must hold at least one body of --max-body-bytes (" +
                           std::to_string(o.max_body_bytes) + "), got " + std::to_string(o.max_buffered_bytes));
  }
  r.max_buffered_bytes = o.max_buffered_bytes > 0
                             ? o.max_buffered_bytes
                             : std::clamp<int64_t>(32 * o.max_body_bytes, std::max<int64_t>(64 << 20, o.max_body_bytes),
                                                   std::max<int64_t>(1 << 30, o.max_body_bytes));
  return r;
}

bool LogLimiter::Allow(int64_t* suppressed) {
  const auto now = std::chrono::steady_clock::now();
  if (any_ && now - last_ < interval_) {
    ++held_;
    return false;
  }
  *suppressed = held_;
  held_ = 0;
  any_ = true;
  last_ = now;
  return true;
}

StatusOr<ApiLimits> ServeApiLimits(BertEngine& engine, const BatcherOptions& batcher, const ServerOptions& options) {
  ApiLimits limits;
  limits.max_client_batch_size = options.max_client_batch_size;
  if (batcher.bucket_edges.empty()) return InvalidArgument("no length buckets");
  limits.max_input_length = std::min(engine.config().max_position_embeddings, batcher.bucket_edges.back());
  if (options.max_input_length > 0) {
    limits.max_input_length = std::min(limits.max_input_length, options.max_input_length);
  }
  limits.vocab_size = engine.config().vocab_size;
  limits.type_vocab_size = engine.config().type_vocab_size;
  if (batcher.max_batch_size >= 1 && batcher.max_batch_tokens >= 1 && limits.max_input_length >= 1) {
    // The largest batch the batcher may form must fit, or every big batch would fail.
    const double tokens = std::min(static_cast<double>(batcher.max_batch_tokens),
                                   static_cast<double>(batcher.max_batch_size) *
                                       static_cast<double>(limits.max_input_length));
    const int64_t rows = std::max<int64_t>(
        1, std::min<int64_t>(batcher.max_batch_size, static_cast<int64_t>(tokens)));
    ForwardOptions fo;
    fo.pooler = engine.model().has_pooler();
    // As samples of the longest input: the row blocks a batch runs in (and so the
    // activations alive at once) are largest where its samples are longest.
    const int64_t longest = std::max<int64_t>(1, std::min<int64_t>(limits.max_input_length, static_cast<int64_t>(tokens)));
    const auto samples = static_cast<int64_t>(std::ceil(tokens / static_cast<double>(longest)));
    TS_ASSIGN_OR_RETURN(MemoryNeed need, engine.ForwardMemory(samples, longest, fo));
    if (fo.pooler && rows > samples) {  // the pooler's rows: one a request
      need.device += static_cast<double>(rows - samples) * static_cast<double>(engine.config().hidden_size) *
                     static_cast<double>(DTypeSize(engine.model().dtype()));
    }
    TS_RETURN_IF_ERROR(engine.CheckMemory(
        need, "the largest batch (--max-batch-size " + std::to_string(batcher.max_batch_size) +
                  ", --max-batch-tokens " + std::to_string(batcher.max_batch_tokens) + ")"));
  }
  return limits;
}

}  // namespace tierscope
