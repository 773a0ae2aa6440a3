// The KServe v2 gRPC front end of `tierscope serve` (inference.GRPCInferenceService on
// --grpc-port, Debian's gRPC C++ library, callback API: no thread waits on a request).
// ModelInfer requests are validated exactly as HTTP ones are (the same parser, fed the
// request as the binary tensor extension's header and bytes) and submitted to the same
// inference service, so gRPC and HTTP inputs share one batcher; the HTTP server's drain
// covers both.
#ifndef TIERSCOPE_SERVE_GRPC_SERVER_H_
#define TIERSCOPE_SERVE_GRPC_SERVER_H_

#include <atomic>
#include <memory>
#include <string>

#include "serve/api.h"
#include "serve/metrics.h"
#include "serve/service.h"
#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

class GrpcFrontend {
 public:
  // Binds host:port (0: any free port) and starts serving; a request message may be up
  // to `max_message_bytes` (--max-body-bytes). FailedPrecondition when the port cannot be
  // bound (in use: the port is not shared).
  static StatusOr<std::unique_ptr<GrpcFrontend>> Start(const std::string& host, int port, BertEngine& engine,
                                                       InferenceService& service, ServerMetrics& metrics,
                                                       const std::string& model_name, const ApiLimits& limits,
                                                       int64_t max_message_bytes);
  ~GrpcFrontend();

  int port() const;
  // Readiness turns false and new ModelInfer calls get UNAVAILABLE; accepted ones finish.
  void BeginDrain();
  // ModelInfer calls accepted and not yet answered.
  int64_t in_flight() const;
  // Finishes every call still waiting in the inference service with UNAVAILABLE, taking
  // it out of the queue (a drain that timed out). A client that cancels has its call
  // taken out the same way, at once.
  void AbandonWaiting();
  // Stops the server: waits up to `deadline_s` for calls still running, then cancels them.
  void Shutdown(double deadline_s);

  class Impl;

 private:
  explicit GrpcFrontend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_GRPC_SERVER_H_
