// What keeps `tierscope serve` standing under hostile load: the valid range of every
// server option, the connection cap and the request-body budget resolved against this
// process's descriptor limit, and a rate limit for log lines a flood would repeat.
#ifndef TIERSCOPE_SERVE_HTTP_LIMITS_H_
#define TIERSCOPE_SERVE_HTTP_LIMITS_H_

#include <chrono>
#include <cstdint>
#include <string_view>

#include "core/process_limits.h"
#include "serve/api.h"
#include "serve/batcher.h"
#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

struct ServerOptions;

struct ResolvedServerLimits {
  int64_t max_connections = 0;     // open HTTP connections at most
  int64_t max_buffered_bytes = 0;  // request bodies held at once, all connections together
  int64_t descriptor_limit = 0;
  int64_t max_refusing = 16;       // connections over the cap being answered 503 at once
};

// The valid range of one server option, by its flag: the one definition that the
// command line's validators and CheckServerOptions both read.
struct OptionRange {
  const char* flag;
  double lo, hi;
  const char* unit;  // "" or " bytes", " seconds"
};
// The range of `flag` (one of ServerOptions' flags: --port, --max-body-bytes, ...);
// std::out_of_range for a flag it does not know (a programming error).
const OptionRange& ServerOptionRange(std::string_view flag);

// InvalidArgument naming the option and its valid range when one is out of it
// (the command line checks the same ranges; this guards every other caller).
Status CheckServerOptions(const ServerOptions& o);
// --max-connections 0: what the descriptor limit leaves (at most 4096) after the reserve
// and the sockets being refused 503 over the cap; more than it leaves is refused. --max-buffered-bytes 0: 32 request bodies of --max-body-bytes, at
// least 64 MiB and at most 1 GiB; below one body is refused.
StatusOr<ResolvedServerLimits> ResolveServerLimits(const ServerOptions& o, int64_t descriptor_limit);

// The API's limits for `engine` under `batcher` and `o`: the longest input (the model's
// positions, the largest bucket and --max-input-length), the vocabularies; with the check
// that the largest batch the batcher may form fits the device's memory.
StatusOr<ApiLimits> ServeApiLimits(BertEngine& engine, const BatcherOptions& batcher, const ServerOptions& o);

// At most one line per `interval`: Allow() says whether one may be written now and how
// many were held back since the last (to say "and N more").
class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::milliseconds interval) : interval_(interval) {}
  bool Allow(int64_t* suppressed);

 private:
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
  bool any_ = false;
  int64_t held_ = 0;
};

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_HTTP_LIMITS_H_
