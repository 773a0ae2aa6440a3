// The KServe v2 gRPC front end of `tierscope serve` (inference.GRPCInferenceService on
// --grpc-port, Debian's gRPC C++ library, callback API: no thread waits on a request).
// ModelInfer requests are validated exactly as HTTP ones are (the same parser, fed the
// request as the binary tensor extension's header and bytes) and submitted to the same
// inference service, so gRPC and HTTP inputs share one batcher; the HTTP server's drain
// covers both.
#ifndef TIERSCOPE_SERVE_GRPC_SERVER_H_
#define TIERSCOPE_SERVE_GRPC_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "serve/api.h"
#include "serve/metrics.h"
#include "serve/service.h"
#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

// What one client may take of the gRPC server.
struct GrpcLimits {
  int64_t max_message_bytes = 8 << 20;  // a request message (--max-body-bytes)
  int max_streams = 64;                 // concurrent calls per connection (--grpc-max-streams)
  int64_t memory_bytes = 64 << 20;      // gRPC's resource quota (--max-buffered-bytes)
  double idle_timeout_s = 60;           // a connection without calls is closed (--idle-timeout)
};

class GrpcFrontend {
 public:
  // Binds host:port (0: any free port) and starts serving within `limits`, its metadata
  // at most 16 KiB. FailedPrecondition when the port cannot be bound (in use: the port
  // is not shared).
  static StatusOr<std::unique_ptr<GrpcFrontend>> Start(const std::string& host, int port, BertEngine& engine,
                                                       InferenceService& service, ServerMetrics& metrics,
                                                       const std::string& model_name, const ApiLimits& limits,
                                                       const GrpcLimits& grpc_limits);
  ~GrpcFrontend();

  int port() const;
  // Readiness turns false and new ModelInfer calls get UNAVAILABLE; accepted ones finish.
  void BeginDrain();
  // ModelInfer calls accepted and not yet answered.
  int64_t in_flight() const;
  // Finishes every call still waiting in the inference service with UNAVAILABLE and
  // `why`, taking it out of the queue (a drain that timed out, a second signal). A client
  // that cancels has its call taken out the same way, at once.
  void AbandonWaiting(const std::string& why);
  // Before the inference service is destroyed: calls still being parsed are refused with
  // UNAVAILABLE instead of reaching it (the calls already in it are the service's to
  // deliver as it drains); afterwards the frontend never touches the service.
  void Detach();
  // Stops the server: waits up to `deadline_s` for calls still running, then cancels them.
  void Shutdown(double deadline_s);

  class Impl;

 private:
  explicit GrpcFrontend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_GRPC_SERVER_H_
