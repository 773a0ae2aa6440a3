// The server's limits without a server: every option's range, the connection cap and
// the request-body budget resolved against a descriptor limit, and the log limiter.
#include "serve/http_limits.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "serve/http_server.h"

namespace tierscope {
namespace {

TEST(CheckServerOptions, RefusesEveryOutOfRangeValueNamingTheFlagAndItsRange) {
  struct Case {
    void (*mutate)(ServerOptions&);
    const char* fragment;
  };
  const Case cases[] = {
      {[](ServerOptions& o) { o.max_body_bytes = -1; }, "--max-body-bytes must be in [1, 1073741824] bytes, got -1"},
      {[](ServerOptions& o) { o.idle_timeout_s = 0; }, "--idle-timeout must be in [0.01, 86400] seconds, got 0"},
      {[](ServerOptions& o) { o.port = 70000; }, "--port must be in [0, 65535]"},
      {[](ServerOptions& o) { o.drain_timeout_s = 1e300; }, "--drain-timeout"},
      {[](ServerOptions& o) { o.max_connections = -5; }, "--max-connections"},
      {[](ServerOptions& o) { o.grpc_max_streams = 0; }, "--grpc-max-streams"},
      {[](ServerOptions& o) { o.max_client_batch_size = 0; }, "--max-client-batch-size"},
  };
  for (const Case& c : cases) {
    ServerOptions o;
    EXPECT_TRUE(CheckServerOptions(o).ok());
    c.mutate(o);
    const Status s = CheckServerOptions(o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.fragment;
    EXPECT_NE(s.message().find(c.fragment), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line: " << s.message();
  }
}

TEST(ServerOptionRange, OneTableForTheCommandLineAndTheServer) {
  const OptionRange& body = ServerOptionRange("--max-body-bytes");
  EXPECT_EQ(body.lo, 1);
  EXPECT_EQ(body.hi, 1 << 30);
  EXPECT_STREQ(body.unit, " bytes");
  ServerOptions o;
  o.max_body_bytes = static_cast<int64_t>(body.hi);
  EXPECT_TRUE(CheckServerOptions(o).ok());  // the edge is inside, one past it is not
  o.max_body_bytes += 1;
  EXPECT_FALSE(CheckServerOptions(o).ok());
  EXPECT_THROW(ServerOptionRange("--no-such-flag"), std::out_of_range);
}

TEST(ResolveServerLimits, TheDefaultCapLeavesDescriptorsForEverythingElse) {
  ServerOptions o;
  StatusOr<ResolvedServerLimits> r = ResolveServerLimits(o, 64);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->max_connections, 64 - 16 - 16);  // ulimit -n 64: 16 kept back, 16 to refuse with
  r = ResolveServerLimits(o, 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_connections, 1024 - 256 - 16);
  r = ResolveServerLimits(o, 1 << 20);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_connections, 4096);  // never more than 4096 by default
  EXPECT_LT(r->max_connections, 1 << 20);
}

TEST(ResolveServerLimits, ACapAboveWhatTheLimitLeavesIsRefused) {
  ServerOptions o;
  o.max_connections = 100;
  const StatusOr<ResolvedServerLimits> r = ResolveServerLimits(o, 64);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--max-connections must be in [1, 32]"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("ulimit -n 64"), std::string::npos);
  EXPECT_FALSE(ResolveServerLimits(ServerOptions{}, 32).ok());  // nothing left for sockets
}

TEST(ResolveServerLimits, TheBodyBudgetHoldsThirtyTwoBodiesWithinItsBounds) {
  ServerOptions o;  // 8 MiB bodies: 256 MiB
  StatusOr<ResolvedServerLimits> r = ResolveServerLimits(o, 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_buffered_bytes, int64_t{256} << 20);
  o.max_body_bytes = 1 << 10;  // small bodies: at least 64 MiB
  r = ResolveServerLimits(o, 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_buffered_bytes, int64_t{64} << 20);
  o.max_body_bytes = 1 << 30;  // huge bodies: at most 1 GiB, yet one body fits
  r = ResolveServerLimits(o, 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_buffered_bytes, int64_t{1} << 30);
  o.max_body_bytes = 8 << 20;
  o.max_buffered_bytes = 1 << 20;  // less than one body
  r = ResolveServerLimits(o, 1024);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--max-buffered-bytes must hold at least one body"), std::string::npos);
}

TEST(LogLimiter, WritesOneLineAnIntervalAndCountsTheRest) {
  LogLimiter flood(std::chrono::seconds(60));
  int64_t held = -1;
  ASSERT_TRUE(flood.Allow(&held));
  EXPECT_EQ(held, 0);
  int allowed = 0;
  for (int i = 0; i < 1000; ++i) allowed += flood.Allow(&held) ? 1 : 0;
  EXPECT_EQ(allowed, 0);  // a flood within the interval writes nothing more

  LogLimiter limiter(std::chrono::milliseconds(500));
  ASSERT_TRUE(limiter.Allow(&held));
  int64_t refused = 0;
  for (int i = 0; i < 100; ++i) refused += limiter.Allow(&held) ? 0 : 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(550));
  ASSERT_TRUE(limiter.Allow(&held));
  EXPECT_EQ(held, refused);  // the next line says how many were held back
}

}  // namespace
}  // namespace tierscope
