// The KServe v2 gRPC front end: health and metadata answered in place, ModelInfer
// validated by the HTTP parser and submitted to the shared inference service; the
// service's callback fills the response and finishes the call.
#include "serve/grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "kserve_grpc.grpc.pb.h"
#include "model/bert.h"
#include "tierscope/version.h"

namespace tierscope {
namespace {

using nlohmann::json;

grpc::StatusCode GrpcCode(int http) {
  switch (http) {
    case 400: case 413: case 415: case 422: return grpc::StatusCode::INVALID_ARGUMENT;
    case 404: return grpc::StatusCode::NOT_FOUND;
    case 429: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 503: return grpc::StatusCode::UNAVAILABLE;
    default: return grpc::StatusCode::INTERNAL;
  }
}

// The values input i carries against its shape, in gRPC's own terms (int64_contents,
// raw_input_contents[i]); the extension's parser would name its binary_data_size.
// Shapes it cannot count (a negative or huge dim) are left to that parser's message.
std::optional<ApiError> CheckValueCount(const inference::ModelInferRequest& req, int i) {
  const auto& in = req.inputs(i);
  const bool int64 = in.datatype() == "INT64";
  if (!int64 && in.datatype() != "INT32") return std::nullopt;
  double want = 1;
  std::string shape;
  for (int64_t d : in.shape()) {
    if (d < 0) return std::nullopt;
    want *= static_cast<double>(d);
    if (!shape.empty()) shape += ',';
    shape += std::to_string(d);
  }
  if (want > 1e12) return std::nullopt;
  const auto need = static_cast<int64_t>(want);
  const std::string of = "input `" + in.name() + "`'s shape [" + shape + "] of " + in.datatype() + " needs ";
  if (req.raw_input_contents_size() > 0) {
    const int64_t have = static_cast<int64_t>(req.raw_input_contents(i).size());
    const int64_t bytes = need * (int64 ? 8 : 4);
    if (have == bytes) return std::nullopt;
    return ApiError{400, "raw_input_contents[" + std::to_string(i) + "] has " + std::to_string(have) + " bytes; " +
                             of + std::to_string(bytes), "Validation"};
  }
  const int64_t have = int64 ? in.contents().int64_contents_size() : in.contents().int_contents_size();
  if (have == need) return std::nullopt;
  return ApiError{400, "input `" + in.name() + "` has " + std::to_string(have) + " values in " +
                           (int64 ? "int64_contents" : "int_contents") + "; its shape [" + shape + "] needs " +
                           std::to_string(need), "Validation"};
}

// The request as the HTTP binary tensor extension sees one: a JSON header with each
// input's shape and byte count (every output asked for as binary), then the inputs' bytes:
// raw_input_contents, or the typed contents written out little-endian.
std::optional<ApiError> ToExtensionBody(const inference::ModelInferRequest& req, std::string* body,
                                        size_t* header_length) {
  if (req.raw_input_contents_size() > 0 && req.raw_input_contents_size() != req.inputs_size()) {
    return ApiError{400,
                    "raw_input_contents has " + std::to_string(req.raw_input_contents_size()) + " entries for " +
                        std::to_string(req.inputs_size()) + " inputs",
                    "Validation"};
  }
  static_assert(std::endian::native == std::endian::little);
  for (const auto& in : req.inputs()) {
    const auto& c = in.contents();
    const bool typed = c.int64_contents_size() > 0 || c.int_contents_size() > 0 || c.uint64_contents_size() > 0 ||
                       c.uint_contents_size() > 0 || c.fp32_contents_size() > 0 || c.fp64_contents_size() > 0 ||
                       c.bool_contents_size() > 0 || c.bytes_contents_size() > 0;
    if (typed && req.raw_input_contents_size() > 0) {
      return ApiError{400, "input `" + in.name() + "` has typed contents beside raw_input_contents; send one or the other",
                      "Validation"};
    }
    if (in.datatype() == "INT64" && c.int64_contents_size() == 0 && c.int_contents_size() > 0) {
      return ApiError{400, "INT64 input `" + in.name() + "` has its data in int_contents; INT64 data goes in int64_contents",
                      "Validation"};
    }
    if (in.datatype() == "INT32" && c.int_contents_size() == 0 && c.int64_contents_size() > 0) {
      return ApiError{400, "INT32 input `" + in.name() + "` has its data in int64_contents; INT32 data goes in int_contents",
                      "Validation"};
    }
  }
  for (int i = 0; i < req.inputs_size(); ++i) {
    if (auto e = CheckValueCount(req, i)) return e;
  }
  json header{{"inputs", json::array()}, {"parameters", {{"binary_data_output", true}}}};
  if (!req.id().empty()) header["id"] = req.id();
  std::string bytes;
  for (int i = 0; i < req.inputs_size(); ++i) {
    const auto& in = req.inputs(i);
    json shape = json::array();
    for (int64_t d : in.shape()) shape.push_back(d);
    const size_t before = bytes.size();
    if (req.raw_input_contents_size() > 0) {
      bytes += req.raw_input_contents(i);
    } else if (in.datatype() == "INT64") {
      const auto& v = in.contents().int64_contents();
      bytes.append(reinterpret_cast<const char*>(v.data()), static_cast<size_t>(v.size()) * sizeof(int64_t));
    } else if (in.datatype() == "INT32") {
      const auto& v = in.contents().int_contents();
      bytes.append(reinterpret_cast<const char*>(v.data()), static_cast<size_t>(v.size()) * sizeof(int32_t));
    }
    header["inputs"].push_back({{"name", in.name()},
                                {"datatype", in.datatype()},
                                {"shape", shape},
                                {"parameters", {{"binary_data_size", bytes.size() - before}}}});
  }
  if (req.outputs_size() > 0) {
    header["outputs"] = json::array();
    for (const auto& o : req.outputs()) header["outputs"].push_back({{"name", o.name()}, {"parameters", {{"binary_data", true}}}});
  }
  *body = header.dump(-1, ' ', false, json::error_handler_t::replace);
  *header_length = body->size();
  *body += bytes;
  return std::nullopt;
}

void FillResponse(const std::string& model, const InferCall& call, const ServeResult& r,
                  inference::ModelInferResponse* resp) {
  resp->set_model_name(model);
  resp->set_model_version("1");
  resp->set_id(call.id);
  for (const std::string& name : call.outputs) {
    const bool hidden = name == "last_hidden_state";
    auto* o = resp->add_outputs();
    o->set_name(name);
    o->set_datatype("FP32");
    o->add_shape(call.batch);
    if (hidden) o->add_shape(call.seq_len);
    o->add_shape(r.hidden);
    std::string* raw = resp->add_raw_output_contents();
    for (const auto& row : hidden ? r.last_hidden : r.pooler) {
      raw->append(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(float));
    }
  }
}

}  // namespace

class GrpcFrontend::Impl final : public inference::GRPCInferenceService::CallbackService {
 public:
  // A ModelInfer call waiting in the inference service. Exactly one of the service's
  // callback, a client cancel (OnCancel) or a drain that timed out finishes it: whichever
  // takes it out of calls_ (the service's Cancel decides between the last two and the first).
  class InferReactor final : public grpc::ServerUnaryReactor {
   public:
    explicit InferReactor(Impl* impl) : impl_(impl) {}
    void OnCancel() override { impl_->Abandon(this, grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client")); }
    void OnDone() override { delete this; }
    uint64_t id = 0;  // the service's request id, set before the call is visible to OnCancel
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();  // the call read

   private:
    Impl* impl_;
  };

  Impl(BertEngine& engine, InferenceService& service, ServerMetrics& metrics, std::string model_name,
       const ApiLimits& limits)
      : engine_(engine), service_(service), metrics_(metrics), model_(std::move(model_name)), limits_(limits) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* ctx, const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* resp) override {
    resp->set_live(true);
    return Done(ctx, grpc::Status::OK);
  }
  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* ctx, const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* resp) override {
    resp->set_ready(!draining_.load());
    return Done(ctx, grpc::Status::OK);
  }
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* ctx, const inference::ModelReadyRequest* req,
                                       inference::ModelReadyResponse* resp) override {
    if (req->name() == model_ && !req->version().empty() && req->version() != "1") {
      return Done(ctx, UnknownVersion(req->version()));
    }
    resp->set_ready(req->name() == model_ && !draining_.load());
    return Done(ctx, grpc::Status::OK);
  }
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* ctx, const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* resp) override {
    resp->set_name("tierscope");
    resp->set_version(TIERSCOPE_VERSION);
    return Done(ctx, grpc::Status::OK);
  }
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* ctx, const inference::ModelMetadataRequest* req,
                                          inference::ModelMetadataResponse* resp) override {
    if (req->name() != model_) return Done(ctx, UnknownModel(req->name()));
    if (!req->version().empty() && req->version() != "1") return Done(ctx, UnknownVersion(req->version()));
    const json meta = json::parse(tierscope::ModelMetadata(model_, engine_.config(), engine_.model().has_pooler()));
    resp->set_name(model_);
    resp->add_versions("1");
    resp->set_platform(meta["platform"].get<std::string>());
    for (const char* side : {"inputs", "outputs"}) {
      for (const json& t : meta[side]) {
        auto* m = std::string(side) == "inputs" ? resp->add_inputs() : resp->add_outputs();
        m->set_name(t["name"].get<std::string>());
        m->set_datatype(t["datatype"].get<std::string>());
        for (const json& d : t["shape"]) m->add_shape(d.get<int64_t>());
      }
    }
    return Done(ctx, grpc::Status::OK);
  }
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* ctx, const inference::ModelInferRequest* req,
                                       inference::ModelInferResponse* resp) override;

  // Takes `reactor`'s call out of the service if it is still waiting there, and finishes
  // it with `status`; nothing when the service already delivered it.
  void Abandon(InferReactor* reactor, const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = calls_.find(reactor->id);
      if (it == calls_.end() || !service_.Cancel(reactor->id)) return;
      calls_.erase(it);
    }
    Answered(status.error_code() == grpc::StatusCode::CANCELLED ? 499 : 503, reactor->t0);
    metrics_.AddGrpcInFlight(-1);
    in_flight_.fetch_sub(1);
    reactor->Finish(status);
  }
  // Finishes every call still waiting in the service (a drain that timed out).
  void AbandonAll(const std::string& why) {
    std::vector<InferReactor*> waiting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, r] : calls_) waiting.push_back(r);
    }
    for (InferReactor* r : waiting) Abandon(r, grpc::Status(grpc::StatusCode::UNAVAILABLE, why));
  }

  // The service is about to be destroyed: calls parsed from now on are refused. Those
  // already in it are delivered by its destructor's drain (or were abandoned), leaving
  // calls_; a later cancel finds none there, so nothing touches the service afterwards.
  void Detach() {
    std::lock_guard<std::mutex> lock(mu_);
    detached_ = true;
  }

  std::atomic<bool> draining_{false};
  std::atomic<int64_t> in_flight_{0};
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

 private:
  grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* ctx, const grpc::Status& s) {
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(s);
    return reactor;
  }
  grpc::Status UnknownVersion(const std::string& version) const {
    return {grpc::StatusCode::NOT_FOUND, "model '" + model_ + "' has version 1 only, not '" + version + "'"};
  }
  grpc::Status UnknownModel(const std::string& name) const {
    return {grpc::StatusCode::NOT_FOUND, "unknown model '" + name + "'; this server has '" + model_ + "'"};
  }
  grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* ctx, const ApiError& e,
                                   std::chrono::steady_clock::time_point t0) {
    Answered(e.code, t0);
    return Done(ctx, grpc::Status(GrpcCode(e.code), e.message));
  }
  // A ModelInfer call answered: counted by its code, and its time observed as an HTTP request's is.
  void Answered(int code, std::chrono::steady_clock::time_point t0) {
    metrics_.CountRequest("grpc:ModelInfer", code);
    metrics_.ObserveTotal(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  BertEngine& engine_;
  InferenceService& service_;
  ServerMetrics& metrics_;
  const std::string model_;
  const ApiLimits limits_;
  std::mutex mu_;  // calls_ and detached_; taken before the service's own lock, never after
  bool detached_ = false;  // Detach ran: the service is going away
  std::map<uint64_t, InferReactor*> calls_;
};

grpc::ServerUnaryReactor* GrpcFrontend::Impl::ModelInfer(grpc::CallbackServerContext* ctx,
                                                         const inference::ModelInferRequest* req,
                                                         inference::ModelInferResponse* resp) {
  // Counted before the drain flag is read: a drain that sees no call in flight cannot miss
  // one that is past this check (both are sequentially consistent).
  const auto t0 = std::chrono::steady_clock::now();
  metrics_.AddGrpcInFlight(1);
  in_flight_.fetch_add(1);
  auto refuse = [&](const ApiError& e) {
    metrics_.AddGrpcInFlight(-1);
    in_flight_.fetch_sub(1);
    return Refuse(ctx, e, t0);
  };
  if (draining_.load()) return refuse({503, "the server is draining (shutting down); send this request elsewhere", "Unhealthy"});
  if (req->model_name() != model_) return refuse({404, "unknown model '" + req->model_name() + "'; this server has '" + model_ + "'", "NotFound"});
  if (!req->model_version().empty() && req->model_version() != "1") {
    return refuse({404, "model '" + model_ + "' has version 1 only, not '" + req->model_version() + "'", "NotFound"});
  }
  std::string body;
  size_t header_length = 0;
  if (auto e = ToExtensionBody(*req, &body, &header_length)) return refuse(*e);
  ServeRequest request;
  auto call = std::make_shared<InferCall>();
  if (auto e = ParseInferRequest(body, header_length, limits_, engine_.model().has_pooler(), &request, call.get())) {
    return refuse(*e);
  }
  auto* reactor = new InferReactor(this);
  reactor->t0 = t0;  // from the call's arrival: its parse counts, as an HTTP request's does
  std::unique_lock<std::mutex> lock(mu_);  // held until the call is in calls_: its callback waits
  if (detached_) {  // the service is going away: a call parsed past the drain never reaches it
    Answered(503, t0);
    metrics_.AddGrpcInFlight(-1);
    in_flight_.fetch_sub(1);
    lock.unlock();
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    return reactor;
  }
  StatusOr<uint64_t> id = service_.Submit(std::move(request), [this, reactor, resp, call](ServeResult r) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.erase(reactor->id);
    }
    if (r.status.ok()) FillResponse(model_, *call, r, resp);
    Answered(r.status.ok() ? 200 : 500, reactor->t0);
    metrics_.AddGrpcInFlight(-1);
    in_flight_.fetch_sub(1);  // last of this frontend's state touched, before Finish
    reactor->Finish(r.status.ok() ? grpc::Status::OK : grpc::Status(grpc::StatusCode::INTERNAL, r.status.message()));
  });
  if (!id.ok()) {
    const int code = id.status().code() == StatusCode::kResourceExhausted   ? 429
                     : id.status().code() == StatusCode::kFailedPrecondition ? 413
                                                                             : 422;
    Answered(code, t0);
    metrics_.AddGrpcInFlight(-1);
    in_flight_.fetch_sub(1);
    lock.unlock();  // Finish may run the reactor's hooks, which take the lock
    reactor->Finish(grpc::Status(GrpcCode(code), id.status().message()));
    return reactor;
  }
  reactor->id = *id;
  calls_[*id] = reactor;
  return reactor;
}

GrpcFrontend::GrpcFrontend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrpcFrontend::~GrpcFrontend() { Shutdown(0); }

StatusOr<std::unique_ptr<GrpcFrontend>> GrpcFrontend::Start(const std::string& host, int port, BertEngine& engine,
                                                            InferenceService& service, ServerMetrics& metrics,
                                                            const std::string& model_name, const ApiLimits& limits,
                                                            const GrpcLimits& grpc_limits) {
  if (port < 0 || port > 65535) return InvalidArgument("--grpc-port must be in [0, 65535]");
  auto impl = std::make_unique<Impl>(engine, service, metrics, model_name, limits);
  grpc::ServerBuilder builder;
  const std::string address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &impl->port_);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a port in use is an error, not shared
  builder.RegisterService(impl.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(grpc_limits.max_message_bytes, INT32_MAX)));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, grpc_limits.max_streams);
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, 16 << 10);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(std::clamp(grpc_limits.idle_timeout_s * 1000, 1.0, 2e9)));
  // Memory for every connection's buffers and calls together: beyond it gRPC refuses new
  // work (RESOURCE_EXHAUSTED) instead of growing.
  grpc::ResourceQuota quota("tierscope-serve-grpc");
  quota.Resize(static_cast<size_t>(grpc_limits.memory_bytes));
  builder.SetResourceQuota(quota);
  impl->server_ = builder.BuildAndStart();
  if (impl->server_ == nullptr || impl->port_ == 0) {
    return FailedPrecondition("cannot serve gRPC on " + host + ":" + std::to_string(port) + " (port in use?)");
  }
  return std::unique_ptr<GrpcFrontend>(new GrpcFrontend(std::move(impl)));
}

int GrpcFrontend::port() const { return impl_->port_; }
void GrpcFrontend::BeginDrain() { impl_->draining_.store(true); }
void GrpcFrontend::AbandonWaiting(const std::string& why) { impl_->AbandonAll(why); }
void GrpcFrontend::Detach() { impl_->Detach(); }
int64_t GrpcFrontend::in_flight() const { return impl_->in_flight_.load(); }

void GrpcFrontend::Shutdown(double deadline_s) {
  if (impl_ == nullptr || impl_->server_ == nullptr) return;
  impl_->draining_.store(true);
  impl_->server_->Shutdown(std::chrono::system_clock::now() +
                           std::chrono::milliseconds(static_cast<int64_t>(deadline_s * 1000)));
  impl_->server_->Wait();
  impl_->server_.reset();
}

}  // namespace tierscope
