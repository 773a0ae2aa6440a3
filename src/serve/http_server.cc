// The HTTP front of `tierscope serve`: Beast sessions on one Asio thread, routing, the
// parse and response pool, the disconnect watch of a waiting request, and the graceful
// drain on SIGINT/SIGTERM.
#include "serve/http_server.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <boost/asio.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "model/bert.h"
#include "serve/api.h"
#include "serve/grpc_server.h"
#include "serve/http_limits.h"
#include "serve/http_router.h"
#include "serve/metrics.h"
#include "serve/openai_api.h"
#include "serve/server_info.h"
#include "tierscope/version.h"

namespace tierscope {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = MonotonicClock;

class Session;

// State shared by the sessions; touched only on the io thread (the service and the
// metrics are thread-safe).
struct Server {
  net::io_context& ioc;
  BertEngine& engine;
  const WordPieceTokenizer* tokenizer;
  InferenceService& service;
  ServerMetrics& metrics;
  ServerOptions options;
  ApiLimits limits;
  tcp::acceptor acceptor;
  net::steady_timer timer;
  net::signal_set signals;
  std::map<Session*, std::weak_ptr<Session>> sessions;
  GrpcFrontend* grpc = nullptr;  // the gRPC front end, when serving one: drained with HTTP
  RouteContext route;            // what the router reads; route.draining follows `draining`
  ResolvedServerLimits resolved;
  int64_t buffered = 0;          // request body bytes the sessions hold (reserved at their headers)
  int64_t refusing = 0;          // connections over the cap being answered 503
  LogLimiter accept_log{std::chrono::seconds(1)};
  int64_t in_flight = 0;
  bool draining = false;
  bool interrupted = false;      // a second signal: stop now, answering nothing more
  Clock::time_point drain_deadline;
  Status result;
  // Parses bodies and writes responses off the io thread; null with 0 workers. Last, so it
  // is joined before anything its tasks reach is destroyed.
  std::unique_ptr<net::thread_pool> pool;

  Server(net::io_context& io, BertEngine& e, const WordPieceTokenizer* t, InferenceService& s,
         ServerMetrics& m, const ServerOptions& o, const ApiLimits& l, const ResolvedServerLimits& r)
      : ioc(io), engine(e), tokenizer(t), service(s), metrics(m), options(o), limits(l),
        acceptor(io), timer(io), signals(io, SIGINT, SIGTERM), resolved(r) {
    route.limits = &limits;
    route.tokenizer = tokenizer;
    route.pooling = options.pooling;
    route.model_name = options.model_name;
    route.config = &engine.config();
    route.has_pooler = engine.model().has_pooler();
    route.info = [this] { return Info(); };
    route.metrics = [this](bool ready) { return metrics.Render(ready); };
    if (o.tokenization_workers > 0) pool = std::make_unique<net::thread_pool>(o.tokenization_workers);
  }

  Status Listen();
  void Accept();
  // At the connection cap: closes the session that has waited longest for a request
  // (idle keep-alive, slow-loris headers); false when every one has a request in hand.
  bool EvictIdle();
  // The request-body budget is short by `need`: closes the uploads whose bodies have been
  // arriving longest (at least kStalledUpload: headers that announce a body and then
  // stall would otherwise hold the budget until the idle timeout), oldest first; false
  // when that does not make room.
  bool EvictStalledUploads(int64_t need);
  // Answers a connection over the cap 503 and closes it (at most 16 at once; beyond, the
  // socket is closed unanswered).
  void RefuseConnection(tcp::socket socket);
  void WaitSignal();
  void BeginDrain(int signal);
  void CheckDrained();
  void RefuseUnanswered(const std::string& why);  // each session's (Session::RefuseUnanswered)
  void Stop();
  std::string Info() const;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Server& server) : stream_(std::move(socket)), server_(server) {}
  void Start() { DoRead(); }
  void Close();
  // The server is closing: a request read, or being read, and not yet answered is
  // answered 503 with Retry-After and `why` now (written at once if the socket takes it),
  // not cut off.
  void RefuseUnanswered(const std::string& why);
  // No request read and being answered: the session waits for one (since read_since()).
  bool WaitingForRequest() const { return !header_read_ && !active_ && !closed_; }
  // Its header is in and its body is still arriving (holding `reserved_` of the budget).
  bool Uploading() const { return header_read_ && !active_ && !closed_ && reserved_ > 0; }
  Clock::time_point header_since() const { return header_since_; }
  Clock::time_point read_since() const { return read_since_; }

 private:
  using Kind = RequestKind;
  // Runs `work` on the pool (here, without one), any exception an internal error, and then
  // `done` with its result on the io thread, unless the session closed meanwhile.
  template <typename Result, typename Work, typename Done>
  void OffPool(Work work, Done done);
  // Parses the body off the io thread with `parse`, then queues the request (or answers).
  void ParseThenSubmit(Kind kind, std::function<std::optional<ApiError>(Parsed&)> parse);
  void OnParsed(Parsed parsed);
  void DoRead();
  // A request has arrived (whole, or refused at its header): counted in flight.
  void BeginRequest();
  void OnRead(beast::error_code ec);
  void ReleaseBuffered();
  void Handle();  // Route, with any exception answered as 500
  void Route();
  void OnHeader(beast::error_code ec);
  void ReadBody();
  void Submit(ServeRequest request, Kind kind);
  void Finish(uint64_t seq, ServeResult result);
  void WatchDisconnect();
  // `json_length` > 0: binary outputs follow that many bytes of JSON (KServe's extension).
  void Respond(int code, std::string body, const char* content_type = "application/json",
               size_t json_length = 0);
  // In the error shape of the API the request came to: OpenAI's under /v1/, TEI's and
  // KServe's ({"error", "error_type"}) elsewhere.
  void Error(const ApiError& e) {
    if (openai_target_) return Respond(OpenAiErrorStatus(e), OpenAiErrorBody(e));
    Respond(e.code, ErrorBody(e));
  }
  void EndRequest();

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> req_;
  Server& server_;
  std::string endpoint_ = "other";  // the metrics label of the request being answered
  Clock::time_point t0_;
  int code_ = 0;
  bool active_ = false;      // a request was read and its response is not yet written
  bool header_read_ = false;  // its header is in: the body is on its way (never evicted as idle)
  Clock::time_point header_since_;
  bool responding_ = false;  // its response is being written
  bool watching_ = false;
  bool closed_ = false;
  Clock::time_point read_since_;  // when the read of the next request began
  int64_t reserved_ = 0;          // this request's share of the server's body budget
  uint64_t seq_ = 0;      // requests read on this connection
  uint64_t pending_ = 0;  // the service's id of the queued request, 0 when none
  Kind kind_ = Kind::kEmbed;
  InferCall call_;
  OpenAiCall openai_;
  bool openai_target_ = false;  // the request went to /v1/...: errors in OpenAI's shape
  // Keeps the session alive while its request waits in the service (the service's
  // callback holds only a weak reference); cleared on the io thread by Finish or Close.
  std::shared_ptr<Session> hold_;
};

void Session::DoRead() {
  if (closed_) return;
  read_since_ = Clock::now();
  header_read_ = false;
  parser_.emplace();
  parser_->body_limit(static_cast<uint64_t>(server_.options.max_body_bytes));
  stream_.expires_after(std::chrono::milliseconds(
      static_cast<int64_t>(server_.options.idle_timeout_s * 1000)));
  http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](
                                                        beast::error_code ec, size_t) {
    self->OnHeader(ec);
  });
}

void Session::OnHeader(beast::error_code ec) {
  if (ec || closed_) return OnRead(ec);
  header_read_ = true;
  header_since_ = Clock::now();
  if (std::optional<ApiError> e = CheckFraming(parser_->get())) {  // answered before any body is read
    BeginRequest();
    endpoint_ = "other";
    req_ = {};
    req_.version(parser_->get().version());
    req_.keep_alive(false);
    return Error(*e);
  }
  // The body's bytes come out of the server's budget before they are read: a declared
  // length, the whole limit for a chunked body, nothing when there is none (a GET).
  const int64_t limit = server_.options.max_body_bytes;
  const auto declared = parser_->content_length();
  reserved_ = parser_->chunked() ? limit
              : declared         ? static_cast<int64_t>(std::min<uint64_t>(*declared, static_cast<uint64_t>(limit)))
                                 : 0;
  if (server_.buffered + reserved_ > server_.resolved.max_buffered_bytes &&
      !server_.EvictStalledUploads(reserved_)) {
    reserved_ = 0;
    BeginRequest();
    endpoint_ = "other";
    req_ = {};
    req_.version(parser_->get().version());
    req_.keep_alive(false);
    return Error({503, "the server holds " + std::to_string(server_.buffered) +
                           " bytes of request bodies, its budget (--max-buffered-bytes " +
                           std::to_string(server_.resolved.max_buffered_bytes) + "); retry shortly",
                  "Overloaded"});
  }
  server_.buffered += reserved_;
  // A client that sent `Expect: 100-continue` waits for a go-ahead before its body.
  const auto& h = parser_->get();
  if (beast::iequals(h[http::field::expect], "100-continue") && !parser_->is_done()) {
    auto go = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                   h.version());
    http::async_write(stream_, *go, [self = shared_from_this(), go](beast::error_code ec, size_t) {
      if (ec) return self->Close();
      self->ReadBody();
    });
    return;
  }
  ReadBody();
}

void Session::ReadBody() {
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
}

void Session::OnRead(beast::error_code ec) {
  if (closed_) return;
  if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
      ec == net::error::operation_aborted || ec == net::error::connection_reset ||
      ec == net::error::eof) {
    return Close();
  }
  BeginRequest();
  if (ec == http::error::partial_message && header_read_) {
    // The client went away mid-body: its endpoint's 499 ("client closed request"), not a
    // 400 of no endpoint, which would read as the server refusing bad requests.
    endpoint_ = RouteRequest(server_.route, parser_->get()).endpoint;
    return Close();
  }
  if (ec == http::error::body_limit) {
    endpoint_ = "other";
    req_.keep_alive(false);
    return Error({413, "the body is larger than " + std::to_string(server_.options.max_body_bytes) +
                           " bytes", "Validation"});
  }
  if (ec) {
    endpoint_ = "other";
    req_ = {};
    req_.keep_alive(false);
    if (ec == http::error::header_limit) {
      return Error({431, "the request's header is larger than the server takes", "Validation"});
    }
    if (ec == http::error::bad_version) return Error({505, "bad HTTP request: HTTP/1.0 and 1.1 only", "Validation"});
    return Error({400, "bad HTTP request: " + ec.message(), "Validation"});
  }
  req_ = parser_->release();
  Handle();
}

void Session::BeginRequest() {
  active_ = true;
  t0_ = Clock::now();
  ++server_.in_flight;
  server_.metrics.SetInFlight(server_.in_flight);
  ++seq_;
  if (parser_) {
    const auto target = parser_->get().target();
    openai_target_ = std::string_view(target.data(), target.size()).starts_with("/v1/");
  }
}

void Session::ReleaseBuffered() {
  server_.buffered -= reserved_;
  reserved_ = 0;
}

void Session::Handle() {
  try {
    Route();
  } catch (const std::exception& e) {
    // A bug, never a bad request (those are answered by the parsers), yet the server lives on.
    if (!responding_) Error({500, std::string("internal error: ") + e.what(), "Backend"});
  }
}

void Session::Route() {
  RouteDecision d = RouteRequest(server_.route, req_);
  endpoint_ = d.endpoint;
  if (d.close) req_.keep_alive(false);
  if (d.error) return Error(*d.error);
  if (d.parse) return ParseThenSubmit(*d.kind, std::move(d.parse));
  Respond(d.code, std::move(d.body), d.content_type);
}

template <typename Result, typename Work, typename Done>
void Session::OffPool(Work work, Done done) {
  auto run = [work = std::move(work)]() mutable {
    Result r;
    try {
      work(r);
    } catch (const std::exception& e) {  // a bug, or out of memory: answered as 500 like Handle's
      r = Result{};
      r.error = ApiError{500, std::string("internal error: ") + e.what(), "Backend"};
    } catch (...) {
      r = Result{};
      r.error = ApiError{500, "internal error: an unknown exception", "Backend"};
    }
    return r;
  };
  if (!server_.pool) return done(run());
  net::post(*server_.pool, [self = shared_from_this(), run = std::move(run), done = std::move(done)]() mutable {
    net::io_context& ioc = self->server_.ioc;
    // The session moves to the io thread with its result: never released on the pool.
    net::post(ioc, [self = std::move(self), result = run(), done = std::move(done)]() mutable {
      if (self->closed_) return;  // the client left, or the server stopped: Close counted it
      try {
        done(std::move(result));
      } catch (const std::exception& e) {
        if (!self->responding_) self->Error({500, std::string("internal error: ") + e.what(), "Backend"});
      }
    });
  });
}

void Session::ParseThenSubmit(Kind kind, std::function<std::optional<ApiError>(Parsed&)> parse) {
  kind_ = kind;
  // The body (req_) is not touched on the io thread until the answer: the next request is
  // read only after this one's response is written.
  OffPool<Parsed>([parse = std::move(parse)](Parsed& out) { out.error = parse(out); },
                  [this](Parsed parsed) { OnParsed(std::move(parsed)); });
}

// Its exceptions are answered 500 by its callers: OffPool's handler on the io thread, or
// Handle when there is no pool.
void Session::OnParsed(Parsed parsed) {
  if (parsed.error) return Error(*parsed.error);
  switch (kind_) {
    case Kind::kTokenize: return Respond(200, std::move(parsed.body));
    case Kind::kOpenAi: openai_ = std::move(parsed.openai); break;
    case Kind::kInfer: call_ = std::move(parsed.call); break;
    case Kind::kEmbed: break;
  }
  // Accepted before any drain began (Route refused it otherwise): it is queued and
  // answered, as the drain keeps the service running while requests are in flight.
  Submit(std::move(parsed.request), kind_);
}

void Session::Submit(ServeRequest request, Kind kind) {
  kind_ = kind;
  const uint64_t seq = seq_;
  std::weak_ptr<Session> weak = weak_from_this();
  net::io_context& ioc = server_.ioc;
  StatusOr<uint64_t> id = server_.service.Submit(
      std::move(request), [weak, seq, &ioc](ServeResult result) {
        net::post(ioc, [weak, seq, r = std::move(result)]() mutable {
          if (auto self = weak.lock()) self->Finish(seq, std::move(r));
        });
      });
  if (!id.ok()) {
    if (id.status().code() == StatusCode::kResourceExhausted) {
      return Error({429, id.status().message() + "; retry later", "Overloaded"});
    }
    if (id.status().code() == StatusCode::kFailedPrecondition) {  // larger than the queue
      return Error({413, id.status().message(), "Validation"});
    }
    return Error({422, id.status().message(), "Validation"});
  }
  pending_ = *id;
  hold_ = shared_from_this();
  stream_.expires_never();
  WatchDisconnect();
}

void Session::WatchDisconnect() {
  watching_ = true;
  stream_.socket().async_wait(
      tcp::socket::wait_read, [self = shared_from_this(), seq = seq_](beast::error_code ec) {
        self->watching_ = false;
        if (ec || self->closed_ || self->seq_ != seq || self->pending_ == 0) return;
        beast::error_code ec2;
        const size_t available = self->stream_.socket().available(ec2);
        if (ec2 || available == 0) return self->Close();  // end of stream: the client left
        // A pipelined request: its bytes wait in the read buffer for the next read, and the
        // watch goes on, so a client that pipelines and then leaves is still seen to leave.
        // Past 64 KiB buffered the watch stops (the bytes stay unread in the socket).
        constexpr size_t kMaxPipelinedBytes = 64 << 10;
        if (self->buffer_.size() + available > kMaxPipelinedBytes) return;
        const size_t n = self->stream_.socket().read_some(self->buffer_.prepare(available), ec2);
        if (ec2) return self->Close();
        self->buffer_.commit(n);
        self->WatchDisconnect();
      });
}

void Session::Finish(uint64_t seq, ServeResult result) {
  if (closed_ || seq != seq_ || pending_ == 0) return;
  pending_ = 0;
  auto keep = std::move(hold_);  // alive until the response is on its way
  if (watching_) {
    beast::error_code ec;
    stream_.socket().cancel(ec);
  }
  if (!result.status.ok()) return Error({500, result.status.message(), "Backend"});
  // The response is written on the pool too: formatting floats costs more than parsing.
  struct Built {
    std::optional<ApiError> error;
    std::string body;
    size_t json_length = 0;  // KServe binary outputs: the JSON part's length
  };
  auto build = [this, r = std::move(result)](Built& out) {
    switch (kind_) {
      case Kind::kEmbed: out.body = EmbedResponse(r); break;
      case Kind::kOpenAi: out.body = OpenAiEmbeddingsResponse(openai_, r); break;
      case Kind::kInfer: out.body = InferResponse(server_.options.model_name, call_, r, &out.json_length); break;
      case Kind::kTokenize: break;  // answered without the service
    }
  };
  OffPool<Built>(std::move(build), [this, keep](Built b) {
    if (b.error) return Error(*b.error);
    Respond(200, std::move(b.body), b.json_length > 0 ? "application/octet-stream" : "application/json",
            b.json_length);
  });
}

void Session::Respond(int code, std::string body, const char* content_type, size_t json_length) {
  code_ = code;
  responding_ = true;
  auto res = std::make_shared<http::response<http::string_body>>(
      static_cast<http::status>(code), req_.version() ? req_.version() : 11);
  res->set(http::field::server, "tierscope/" TIERSCOPE_VERSION);
  res->set(http::field::content_type, content_type);
  if (code == 429) {
    res->set(http::field::retry_after, std::to_string(server_.service.RetryAfterSeconds(server_.options.retry_after_s)));
  }
  if (json_length > 0) res->set("Inference-Header-Content-Length", std::to_string(json_length));
  if (code == 405) {
    const bool post_only = endpoint_ == "/embed" || endpoint_ == "/" || endpoint_ == "/tokenize" ||
                           endpoint_ == "/v1/embeddings" || endpoint_ == "/v2/models/{name}/infer";
    res->set(http::field::allow, post_only ? "POST" : "GET");
  }
  // A refusal of a request read whole keeps the connection (a pipelined request behind it
  // is answered); malformed framing and unread bodies set keep_alive(false) where found.
  res->keep_alive(req_.keep_alive() && !server_.draining);
  if (req_.method() == http::verb::head) {
    res->content_length(body.size());  // what a GET would carry, and no body
  } else {
    res->body() = std::move(body);
    res->prepare_payload();
  }
  stream_.expires_after(std::chrono::seconds(30));
  http::async_write(stream_, *res,
                    [self = shared_from_this(), res](beast::error_code ec, size_t) {
                      self->responding_ = false;
                      self->EndRequest();
                      if (ec || !res->keep_alive()) return self->Close();
                      self->DoRead();
                    });
}

void Session::EndRequest() {
  ReleaseBuffered();
  if (!active_) return;
  active_ = false;
  server_.metrics.CountRequest(endpoint_, code_);
  server_.metrics.ObserveTotal(std::chrono::duration<double>(Clock::now() - t0_).count());
  --server_.in_flight;
  server_.metrics.SetInFlight(server_.in_flight);
}

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  if (pending_) {
    server_.service.Cancel(pending_);  // its inputs leave the queue, or their results are dropped
    pending_ = 0;
  }
  auto keep = std::move(hold_);
  if (active_ && !responding_) {
    code_ = 499;  // nginx's "client closed request"
    EndRequest();
  }
  ReleaseBuffered();
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
  server_.sessions.erase(this);
}

Status Server::Listen() {
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(options.host, ec);
  if (ec) return InvalidArgument("--host " + options.host + " is not an IP address");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return FailedPrecondition("cannot listen on " + options.host + ":" +
                              std::to_string(options.port) + ": " + ec.message());
  }
  const tcp::endpoint bound = acceptor.local_endpoint();
  std::cout << "tierscope serve: listening on http://"
            << (bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                        : bound.address().to_string())
            << ":" << bound.port() << std::endl;
  return OkStatus();
}

void Server::Accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {  // e.g. out of file descriptors: try again shortly rather than spin
      int64_t held = 0;
      if (accept_log.Allow(&held)) {
        std::cerr << "tierscope serve: accept failed: " << ec.message()
                  << (held > 0 ? " (and " + std::to_string(held) + " more since the last report)" : "") << "\n";
      }
      auto retry = std::make_shared<net::steady_timer>(ioc, std::chrono::milliseconds(50));
      retry->async_wait([this, retry](beast::error_code) { Accept(); });
      return;
    }
    if (static_cast<int64_t>(sessions.size()) >= resolved.max_connections && !EvictIdle()) {
      RefuseConnection(std::move(socket));
      return Accept();
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto session = std::make_shared<Session>(std::move(socket), *this);
    sessions[session.get()] = session;
    session->Start();
    Accept();
  });
}

bool Server::EvictIdle() {
  std::shared_ptr<Session> oldest;
  for (auto& [p, weak] : sessions) {
    auto s = weak.lock();
    if (s && s->WaitingForRequest() && (!oldest || s->read_since() < oldest->read_since())) oldest = s;
  }
  if (!oldest) return false;
  metrics.CountConnectionEvicted();
  oldest->Close();
  return true;
}

bool Server::EvictStalledUploads(int64_t need) {
  constexpr auto kStalledUpload = std::chrono::seconds(2);
  const Clock::time_point now = Clock::now();
  while (buffered + need > resolved.max_buffered_bytes) {
    std::shared_ptr<Session> oldest;
    for (auto& [p, weak] : sessions) {
      auto s = weak.lock();
      if (s && s->Uploading() && now - s->header_since() >= kStalledUpload &&
          (!oldest || s->header_since() < oldest->header_since())) {
        oldest = s;
      }
    }
    if (!oldest) return false;
    metrics.CountConnectionEvicted();
    oldest->Close();  // gives its reservation back
  }
  return true;
}

void Server::RefuseConnection(tcp::socket socket) {
  metrics.CountConnectionRefused();
  int64_t held = 0;
  if (accept_log.Allow(&held)) {
    std::cerr << "tierscope serve: " << sessions.size() << " connections, every one with a request in hand "
              << "(--max-connections " << resolved.max_connections << "): answering new ones 503"
              << (held > 0 ? " (" + std::to_string(held) + " more log lines held back)" : "") << "\n";
  }
  if (refusing >= resolved.max_refusing) {  // a flood: no answer, just the descriptor back
    beast::error_code ec;
    socket.close(ec);
    return;
  }
  ++refusing;
  static const std::string kBusy = [] {
    const std::string body =
        "{\"error\":\"the server is at its connection limit (--max-connections)\",\"error_type\":\"Overloaded\"}";
    return "HTTP/1.1 503 Service Unavailable\r\nServer: tierscope/" TIERSCOPE_VERSION
           "\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }();
  auto s = std::make_shared<beast::tcp_stream>(std::move(socket));
  s->expires_after(std::chrono::seconds(2));
  net::async_write(*s, net::buffer(kBusy), [this, s](beast::error_code, size_t) {
    --refusing;
    beast::error_code ec;
    s->socket().shutdown(tcp::socket::shutdown_both, ec);
    s->close();
  });
}

void Server::WaitSignal() {
  signals.async_wait([this](beast::error_code ec, int signal) {
    if (ec) return;
    if (draining) {
      // At once: the queued inputs are dropped, not run, and gRPC waits for nobody.
      std::cerr << "tierscope serve: second signal: stopping now; " << in_flight << " HTTP and "
                << (grpc != nullptr ? grpc->in_flight() : 0) << " gRPC requests and " << service.queued()
                << " queued inputs are dropped\n";
      result = Internal("interrupted while draining " + std::to_string(in_flight) + " requests");
      interrupted = true;
      service.AbandonQueued();
      if (grpc != nullptr) grpc->AbandonWaiting("the server was stopped by a second signal");
      return Stop();
    }
    BeginDrain(signal);
  });
}

void Server::BeginDrain(int signal) {
  draining = true;
  route.draining = true;
  drain_deadline = Clock::now() + std::chrono::milliseconds(
                                      static_cast<int64_t>(options.drain_timeout_s * 1000));
  std::cerr << "tierscope serve: " << (signal == SIGINT ? "SIGINT" : "SIGTERM")
            << ": draining (" << in_flight << " requests in flight, " << service.queued()
            << " inputs queued); new work is refused with 503, health says not ready\n";
  if (grpc != nullptr) grpc->BeginDrain();
  service.BeginDrain();
  WaitSignal();
  CheckDrained();
}

void Server::CheckDrained() {
  const bool done = in_flight == 0 && (grpc == nullptr || grpc->in_flight() == 0) && service.Idle();
  if (!done && Clock::now() < drain_deadline) {
    timer.expires_after(std::chrono::milliseconds(2));
    timer.async_wait([this](beast::error_code ec) {
      if (!ec) CheckDrained();
    });
    return;
  }
  if (!done) {
    const int64_t grpc_calls = grpc != nullptr ? grpc->in_flight() : 0;
    if (grpc != nullptr) grpc->AbandonWaiting("the server's drain timed out before this request ran");
    const int64_t http_calls = in_flight;
    RefuseUnanswered("the server's drain timed out before this request was answered");
    result = Internal("the drain timed out after " + std::to_string(options.drain_timeout_s) +
                      " s with " + std::to_string(http_calls) + " HTTP and " + std::to_string(grpc_calls) +
                      " gRPC requests in flight");
    std::cerr << "tierscope serve: error: " << result.message() << "\n";
  } else {
    // A request whose body was still arriving was never accepted: 503, not cut off.
    RefuseUnanswered("the server is shutting down and this request's body had not arrived");
    std::cerr << "tierscope serve: drained; every accepted request was answered\n";
  }
  Stop();
}

void Session::RefuseUnanswered(const std::string& why) {
  if (closed_ || responding_ || !(active_ || header_read_)) return;
  if (pending_) {
    server_.service.Cancel(pending_);  // its inputs leave the queue, or its result is dropped
    pending_ = 0;
  }
  if (!active_) {  // its body was still arriving: the request as its header says
    BeginRequest();
    endpoint_ = RouteRequest(server_.route, parser_->get()).endpoint;
    req_ = {};
    req_.version(parser_->get().version());
  }
  const ApiError e{503, why + "; send it elsewhere", "Unhealthy"};
  code_ = openai_target_ ? OpenAiErrorStatus(e) : e.code;
  http::response<http::string_body> res(static_cast<http::status>(code_), req_.version() ? req_.version() : 11);
  res.set(http::field::server, "tierscope/" TIERSCOPE_VERSION);
  res.set(http::field::content_type, "application/json");
  res.set(http::field::retry_after, std::to_string(server_.options.retry_after_s));
  res.keep_alive(false);
  res.body() = openai_target_ ? OpenAiErrorBody(e) : ErrorBody(e);
  res.prepare_payload();
  // A few hundred bytes, which a socket's buffer takes; a client that reads nothing and
  // filled it gets none rather than holding the shutdown.
  beast::error_code ec;
  stream_.socket().cancel(ec);  // a body still being read: its read ends (operation_aborted) first
  stream_.socket().non_blocking(true, ec);
  if (!ec) http::write(stream_.socket(), res, ec);
  if (!ec) {
    // Bytes of the body left unread would make the close a reset, which may drop the 503.
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    char sink[4096];
    for (int i = 0; i < 64 && stream_.socket().available(ec) > 0 && !ec; ++i) stream_.socket().read_some(net::buffer(sink), ec);
  }
  responding_ = true;
  EndRequest();
}

void Server::RefuseUnanswered(const std::string& why) {
  for (auto& [p, weak] : sessions) {
    if (auto s = weak.lock()) s->RefuseUnanswered(why);
  }
}

void Server::Stop() {
  std::vector<std::shared_ptr<Session>> all;
  for (auto& [p, weak] : sessions) {
    if (auto s = weak.lock()) all.push_back(s);
  }
  for (auto& s : all) s->Close();
  beast::error_code ec;
  signals.cancel(ec);
  // And back to the default action: a signal during the last of the shutdown (gRPC's)
  // stops the process instead of waiting unheard in the set.
  signals.clear(ec);
  timer.cancel();
  acceptor.close(ec);
  ioc.stop();
}

std::string Server::Info() const {
  return ServerInfo(engine, options, service.options(), limits, resolved,
                    grpc != nullptr ? std::optional<int>(grpc->port()) : std::nullopt, tokenizer != nullptr);
}

}  // namespace

Status RunServer(BertEngine& engine, const WordPieceTokenizer* tokenizer,
                 const BatcherOptions& batcher, const ServerOptions& options) {
  TS_ASSIGN_OR_RETURN(const ResolvedServerLimits resolved, ResolveServerLimits(options, DescriptorLimit()));
  TS_ASSIGN_OR_RETURN(const ApiLimits limits, ServeApiLimits(engine, batcher, options));
  ServerOptions o = options;
  if (o.model_name.empty()) o.model_name = "bert";
  if (o.tokenization_workers < 0) {
    // A hand-off to a pool and back costs two thread wake-ups per request: measured on 2
    // cores with the engine on both, 8-11% of the served rate. So by default the pool gets
    // only the cores the engine leaves free.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    o.tokenization_workers = std::clamp(cores - engine.threads(), 0, 4);
  }
  ServerMetrics metrics;
  EngineRunner runner(engine);
  TS_ASSIGN_OR_RETURN(std::unique_ptr<InferenceService> service, InferenceService::Start(runner, batcher, &metrics));
  if (batcher.packed && !service->options().packed) {
    std::cerr << "tierscope serve: " << engine.device_name()
              << " has no packed-sequence kernels: batching by length bucket instead\n";
  }
  net::io_context ioc(1);
  Server server(ioc, engine, tokenizer, *service, metrics, o, limits, resolved);
  TS_RETURN_IF_ERROR(server.Listen());
  std::unique_ptr<GrpcFrontend> grpc;
  if (o.grpc_port >= 0) {
    GrpcLimits gl;
    gl.max_message_bytes = o.max_body_bytes;
    gl.max_streams = o.grpc_max_streams;
    gl.memory_bytes = resolved.max_buffered_bytes;
    gl.idle_timeout_s = o.idle_timeout_s;
    TS_ASSIGN_OR_RETURN(grpc, GrpcFrontend::Start(o.host, o.grpc_port, engine, *service, metrics, o.model_name, limits, gl));
    server.grpc = grpc.get();
    std::cout << "tierscope serve: grpc listening on " << o.host << ":" << grpc->port() << std::endl;
  }
  server.Accept();
  server.WaitSignal();
  ioc.run();
  // Let the pool finish what it holds (its results go to the stopped context, unread).
  if (server.pool) server.pool->join();
  // Join the dispatcher while the io context still exists: a callback it is delivering
  // posts to the context (and is then dropped with it), and while the gRPC server does:
  // its calls still waiting are finished by the dispatcher's drain, and a call still being
  // parsed is refused (Detach) rather than submitted to a service going away. Then gRPC stops.
  Status result = server.result;
  if (grpc) grpc->Detach();
  service.reset();
  // A drain that ran out of time, or a second signal, waits for no gRPC call.
  if (grpc) grpc->Shutdown(server.interrupted || !result.ok() ? 0 : options.drain_timeout_s);
  return result;
}

}  // namespace tierscope
