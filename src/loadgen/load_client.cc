// The Beast client of `tierscope load`: one-off GETs and the open or closed loop traffic,
// all on one io_context; the counters and warnings of the report.
#include "loadgen/load_client.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "core/clock.h"
#include "core/splitmix.h"

namespace tierscope {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = MonotonicClock;
using nlohmann::json;

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
std::string FormatMs(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", ms);
  return buf;
}

std::string HostHeader(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// --- One-off GETs (/metrics, /info) ------------------------------------------------

using GetDone = std::function<void(StatusOr<HttpReply>)>;

struct GetState {
  explicit GetState(asio::io_context& ioc) : stream(ioc) {}
  void Fail(const char* step, const beast::error_code& ec) {
    stream.close();
    done(FailedPrecondition(what + ": " + step + ": " +
                            (ec == beast::error::timeout ? "timed out" : ec.message())));
  }
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::request<http::empty_body> req;
  http::response<http::string_body> res;
  std::string what;
  GetDone done;
};

// GET `target` on `ioc`; `done` gets the reply or a FailedPrecondition naming the step.
void AsyncGet(asio::io_context& ioc, const tcp::resolver::results_type& endpoints,
              const std::string& host, const std::string& target, double timeout_s, GetDone done) {
  auto s = std::make_shared<GetState>(ioc);
  s->what = "GET " + target;
  s->done = std::move(done);
  s->req = http::request<http::empty_body>(http::verb::get, target, 11);
  s->req.set(http::field::host, host);
  s->req.set(http::field::user_agent, "tierscope-load");
  s->req.keep_alive(false);
  s->stream.expires_after(Seconds(timeout_s));
  s->stream.async_connect(endpoints, [s](beast::error_code ec, const tcp::endpoint&) {
    if (ec) return s->Fail("connect", ec);
    http::async_write(s->stream, s->req, [s](beast::error_code ec, size_t) {
      if (ec) return s->Fail("write", ec);
      http::async_read(s->stream, s->buffer, s->res, [s](beast::error_code ec, size_t) {
        if (ec) return s->Fail("read", ec);
        s->stream.close();
        s->done(HttpReply{static_cast<int>(s->res.result_int()), std::move(s->res.body())});
      });
    });
  });
}

StatusOr<tcp::resolver::results_type> Resolve(const std::string& host, uint16_t port) {
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return InvalidArgument("--url: cannot resolve '" + host + "': " + ec.message());
  return endpoints;
}

// --- The traffic -------------------------------------------------------------------

class LoadRunner {
 public:
  LoadRunner(const TrafficPlan& plan, tcp::resolver::results_type endpoints)
      : plan_(plan),
        o_(plan_.options),
        endpoints_(std::move(endpoints)),
        host_header_(HostHeader(plan.host, plan.port)),
        open_(o_.mode == "open"),
        body_rng_(SplitMix64(o_.seed).Next()),
        schedule_(o_.rate, o_.seed),
        arrival_timer_(ioc_),
        end_timer_(ioc_),
        deadline_timer_(ioc_),
        warm_timer_(ioc_) {}

  // Runs the whole load; returns when every request is answered or given up.
  void Run();
  // The counters, latencies and warnings of the report.
  json Counters() const;
  // The /metrics reply at the end of warmup (only taken when warmup_s > 0).
  const std::optional<StatusOr<HttpReply>>& warm_metrics() const { return warm_metrics_; }

 private:
  struct Request {
    Clock::time_point scheduled;  // open loop: the arrival; closed loop: the send
    bool counted = false;         // issued inside the measured window
    bool retried = false;         // re-sent once after a stale keep-alive connection
    bool sent = false;
    int64_t tokens = 0;
  };
  struct Conn {
    explicit Conn(asio::io_context& ioc) : stream(ioc) {}
    uint64_t id = 0;
    int slot = -1;  // closed loop: the client it belongs to
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    std::optional<http::response_parser<http::string_body>> parser;
    std::optional<Request> current;
    Clock::time_point connect_started;
    int served = 0;
  };

  void OnArrivals();
  void Issue(Request r);
  void OpenConnection(int slot);
  void OnConnected(Conn* c, const beast::error_code& ec);
  void TakeWork(Conn* c);
  void Send(Conn* c, Request r);
  void OnRead(Conn* c, const beast::error_code& ec);
  void Fail(Conn* c, const beast::error_code& ec);
  void Replenish();
  void Reconnect(int slot, bool after_pause);
  void Record(const Request& r, const std::string& kind, bool got_response);
  void DropConn(Conn* c);
  void EndIssuing();
  void MaybeFinish();
  void Finish();
  Request NewRequest(Clock::time_point scheduled);
  std::string Body(Request* r);

  const TrafficPlan plan_;
  const LoadOptions& o_;
  const tcp::resolver::results_type endpoints_;
  const std::string host_header_;
  const bool open_;
  asio::io_context ioc_;  // before the timers and connections, so it outlives them
  std::mt19937_64 body_rng_;
  PoissonSchedule schedule_;
  asio::steady_timer arrival_timer_, end_timer_, deadline_timer_, warm_timer_;
  std::vector<std::unique_ptr<asio::steady_timer>> pause_timers_;  // closed loop, per client
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<Conn>> graveyard_;  // dropped, freed once their handler returns
  std::vector<Conn*> idle_;
  std::deque<Request> queue_;  // open loop: arrivals waiting for a connection
  uint64_t next_conn_ = 1;
  size_t connecting_ = 0;
  int64_t outstanding_ = 0;  // issued, not yet recorded
  bool issuing_ = true, done_ = false;
  Clock::time_point t0_, t_warm_, t_end_;
  Clock::time_point next_arrival_;

  // Counters over counted requests unless noted.
  int64_t issued_ = 0, sent_ = 0, completed_ = 0, ok_ = 0, warmup_requests_ = 0;
  int64_t ok_in_window_ = 0, tokens_in_window_ = 0;  // completions inside the window, any request
  std::map<std::string, int64_t> errors_;
  std::map<std::string, std::string> error_samples_;
  std::vector<double> latencies_ms_, lags_ms_;
  size_t max_queue_ = 0, max_queue_at_cap_ = 0, max_conns_ = 0;
  int64_t connections_opened_ = 0, connect_failures_ = 0, retries_ = 0;
  std::optional<StatusOr<HttpReply>> warm_metrics_;
};

void LoadRunner::Run() {
  t0_ = Clock::now();
  t_warm_ = t0_ + Seconds(o_.warmup_s);
  t_end_ = t0_ + Seconds(o_.duration_s);
  if (o_.warmup_s > 0) {
    warm_timer_.expires_at(t_warm_);
    warm_timer_.async_wait([this](const beast::error_code& ec) {
      if (ec || done_) return;
      AsyncGet(ioc_, endpoints_, host_header_, "/metrics", std::min(o_.timeout_s, 10.0),
               [this](StatusOr<HttpReply> r) { warm_metrics_ = std::move(r); });
    });
  }
  deadline_timer_.expires_at(t_end_ + Seconds(o_.timeout_s));
  deadline_timer_.async_wait([this](const beast::error_code& ec) {
    if (!ec) Finish();
  });
  if (open_) {
    next_arrival_ = t0_ + Seconds(schedule_.Next());
    OnArrivals();
  } else {
    end_timer_.expires_at(t_end_);
    end_timer_.async_wait([this](const beast::error_code& ec) {
      if (!ec) EndIssuing();
    });
    for (int slot = 0; slot < o_.concurrency; ++slot) {
      pause_timers_.push_back(std::make_unique<asio::steady_timer>(ioc_));
      OpenConnection(slot);
    }
  }
  // The deadline timer ends everything; the margin only guards against a bug here.
  ioc_.run_for(Seconds(o_.duration_s + o_.timeout_s + 10));
  if (!ioc_.stopped()) {
    Finish();
    ioc_.run_for(std::chrono::seconds(2));
    ioc_.stop();
  }
}

// Issues every arrival that is due, then sleeps until the next one.
void LoadRunner::OnArrivals() {
  if (done_ || !issuing_) return;
  const Clock::time_point now = Clock::now();
  while (next_arrival_ <= now && next_arrival_ < t_end_) {
    Request r = NewRequest(next_arrival_);
    if (r.counted) lags_ms_.push_back(Ms(now - next_arrival_));
    Issue(r);
    next_arrival_ = t0_ + Seconds(schedule_.Next());
  }
  if (next_arrival_ >= t_end_) return EndIssuing();
  arrival_timer_.expires_at(next_arrival_);
  arrival_timer_.async_wait([this](const beast::error_code& ec) {
    if (!ec) OnArrivals();
  });
}

LoadRunner::Request LoadRunner::NewRequest(Clock::time_point scheduled) {
  Request r;
  r.scheduled = scheduled;
  r.counted = scheduled >= t_warm_;
  ++outstanding_;
  if (r.counted) {
    ++issued_;
  } else {
    ++warmup_requests_;
  }
  return r;
}

void LoadRunner::Issue(Request r) {
  if (!idle_.empty()) {
    Conn* c = idle_.back();  // the most recently used: fewer connections stay busy
    idle_.pop_back();
    return Send(c, r);
  }
  queue_.push_back(r);
  max_queue_ = std::max(max_queue_, queue_.size());
  if (conns_.size() >= static_cast<size_t>(o_.max_connections)) {
    max_queue_at_cap_ = std::max(max_queue_at_cap_, queue_.size());
  }
  Replenish();
}

// Opens connections for queued arrivals: one per arrival not already covered by a
// connection in progress, up to max_connections.
void LoadRunner::Replenish() {
  while (!done_ && queue_.size() > connecting_ &&
         conns_.size() < static_cast<size_t>(o_.max_connections)) {
    OpenConnection(-1);
  }
}

void LoadRunner::OpenConnection(int slot) {
  auto owned = std::make_unique<Conn>(ioc_);
  Conn* c = owned.get();
  c->id = next_conn_++;
  c->slot = slot;
  c->connect_started = Clock::now();
  c->req.method(http::verb::post);
  c->req.target(plan_.target);
  c->req.version(11);
  c->req.set(http::field::host, host_header_);
  c->req.set(http::field::user_agent, "tierscope-load");
  c->req.set(http::field::content_type, "application/json");
  c->req.keep_alive(true);
  conns_.emplace(c->id, std::move(owned));
  max_conns_ = std::max(max_conns_, conns_.size());
  ++connecting_;
  ++connections_opened_;
  c->stream.expires_after(Seconds(o_.timeout_s));
  c->stream.async_connect(
      endpoints_, [this, c](beast::error_code ec, const tcp::endpoint&) { OnConnected(c, ec); });
}

void LoadRunner::OnConnected(Conn* c, const beast::error_code& ec) {
  --connecting_;
  if (done_) return;
  if (!ec) {
    beast::error_code ignored;
    c->stream.socket().set_option(tcp::no_delay(true), ignored);
    return TakeWork(c);
  }
  ++connect_failures_;
  error_samples_.emplace("connect", ec == beast::error::timeout ? "timed out" : ec.message());
  const int slot = c->slot;
  const Clock::time_point started = c->connect_started;
  DropConn(c);
  if (open_) {
    // The connection was opened for the oldest waiting arrival: it fails with it.
    if (!queue_.empty()) {
      const Request r = queue_.front();
      queue_.pop_front();
      Record(r, "connect", false);
    }
    Replenish();
  } else if (issuing_) {
    Record(NewRequest(started), "connect", false);
    Reconnect(slot, /*after_pause=*/true);
  }
  MaybeFinish();
}

void LoadRunner::TakeWork(Conn* c) {
  if (open_) {
    while (!queue_.empty()) {
      Request r = queue_.front();
      queue_.pop_front();
      // An arrival that already waited past its timeout in the client is not sent.
      if (Clock::now() - r.scheduled >= Seconds(o_.timeout_s)) {
        Record(r, "timeout", false);
        continue;
      }
      return Send(c, r);
    }
  } else if (issuing_ && Clock::now() < t_end_) {
    return Send(c, NewRequest(Clock::now()));
  }
  idle_.push_back(c);
  MaybeFinish();
}

std::string LoadRunner::Body(Request* r) {
  std::vector<int64_t> lengths(static_cast<size_t>(o_.inputs_per_request));
  for (int64_t& l : lengths) {
    l = plan_.lengths.Draw(body_rng_);
    r->tokens += l;
  }
  return o_.endpoint == "infer" ? BuildInferBody(lengths, plan_.outputs, body_rng_)
                                : BuildEmbedBody(lengths, body_rng_);
}

void LoadRunner::Send(Conn* c, Request r) {
  if (!r.sent) {
    r.sent = true;
    if (r.counted) ++sent_;
  }
  r.tokens = 0;
  c->req.body() = Body(&r);
  c->req.prepare_payload();
  c->current = r;
  // Open loop: the timeout runs from the arrival, like the latency.
  c->stream.expires_at(r.scheduled + Seconds(o_.timeout_s));
  http::async_write(c->stream, c->req, [this, c](beast::error_code ec, size_t) {
    if (done_) return;
    if (ec) return Fail(c, ec);
    c->parser.emplace();
    // Hidden states can be large (they are dropped). Not boost::none: Beast 1.74 then
    // rejects every body with a Content-Length.
    c->parser->body_limit(std::uint64_t{1} << 40);
    http::async_read(c->stream, c->buffer, *c->parser,
                     [this, c](beast::error_code ec, size_t) { OnRead(c, ec); });
  });
}

void LoadRunner::OnRead(Conn* c, const beast::error_code& ec) {
  if (done_) return;
  if (ec) return Fail(c, ec);
  const Request r = *c->current;
  c->current.reset();
  const auto& res = c->parser->get();
  const int status = static_cast<int>(res.result_int());
  const bool keep_alive = res.keep_alive();
  if (status != 200) error_samples_.emplace(std::to_string(status), res.body().substr(0, 300));
  Record(r, status == 200 ? "" : std::to_string(status), true);
  c->parser.reset();
  ++c->served;
  if (!keep_alive) {
    const int slot = c->slot;
    DropConn(c);
    if (open_) {
      Replenish();
    } else {
      Reconnect(slot, false);
    }
    return MaybeFinish();
  }
  TakeWork(c);
}

void LoadRunner::Fail(Conn* c, const beast::error_code& ec) {
  Request r = *c->current;
  c->current.reset();
  std::string kind = "io";
  if (ec == beast::error::timeout) {
    kind = "timeout";
  } else if (ec == http::error::end_of_stream || ec == asio::error::eof ||
             ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
             ec == asio::error::connection_aborted) {
    kind = "closed";
  } else if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
    kind = "bad_response";
  }
  const bool stale = kind == "closed" && c->served > 0 && !r.retried;
  const int slot = c->slot;
  DropConn(c);
  if (open_ && stale) {
    // The server closed an idle keep-alive connection under us: send it again, once.
    r.retried = true;
    ++retries_;
    queue_.push_front(r);
    Replenish();
    return;
  }
  error_samples_.emplace(kind, ec.message());
  Record(r, kind, false);
  if (open_) {
    Replenish();
  } else {
    Reconnect(slot, false);
  }
  MaybeFinish();
}

void LoadRunner::Reconnect(int slot, bool after_pause) {
  if (done_ || !issuing_) return;
  if (!after_pause) return OpenConnection(slot);
  // A refused connect fails at once: pause so a dead server does not spin the loop.
  auto& timer = *pause_timers_[static_cast<size_t>(slot)];
  timer.expires_after(std::chrono::milliseconds(50));
  timer.async_wait([this, slot](const beast::error_code& ec) {
    if (!ec && !done_ && issuing_) OpenConnection(slot);
  });
}

void LoadRunner::Record(const Request& r, const std::string& kind, bool got_response) {
  const Clock::time_point now = Clock::now();
  --outstanding_;
  const bool ok = kind.empty();
  if (ok && now >= t_warm_ && now <= t_end_) {
    ++ok_in_window_;
    tokens_in_window_ += r.tokens;
  }
  if (!r.counted) return;
  if (got_response) ++completed_;
  if (ok) {
    ++ok_;
    latencies_ms_.push_back(Ms(now - r.scheduled));
  } else {
    ++errors_[kind];
  }
}

void LoadRunner::DropConn(Conn* c) {
  beast::error_code ignored;
  c->stream.socket().close(ignored);
  idle_.erase(std::remove(idle_.begin(), idle_.end(), c), idle_.end());
  auto it = conns_.find(c->id);
  if (it == conns_.end()) return;
  graveyard_.push_back(std::move(it->second));
  conns_.erase(it);
  if (graveyard_.size() == 1) asio::post(ioc_, [this] { graveyard_.clear(); });
}

void LoadRunner::EndIssuing() {
  issuing_ = false;
  arrival_timer_.cancel();
  MaybeFinish();
}

// Once issuing has ended and every request is answered: close the idle connections and
// stop the timers, which lets the io_context run out of work.
void LoadRunner::MaybeFinish() {
  if (done_ || issuing_ || outstanding_ > 0) return;
  done_ = true;
  for (auto& [id, c] : conns_) {
    beast::error_code ignored;
    c->stream.socket().close(ignored);
  }
  arrival_timer_.cancel();
  end_timer_.cancel();
  deadline_timer_.cancel();
  warm_timer_.cancel();
  for (auto& t : pause_timers_) t->cancel();
}

// The deadline (end + timeout_s): whatever is still waiting or in flight timed out.
void LoadRunner::Finish() {
  if (done_) return;
  issuing_ = false;
  for (auto& [id, c] : conns_) {
    if (c->current) Record(*c->current, "timeout", false);
    c->current.reset();
  }
  for (const Request& r : queue_) Record(r, "timeout", false);
  queue_.clear();
  outstanding_ = 0;
  MaybeFinish();
}

json LoadRunner::Counters() const {
  json r;
  const double window = o_.duration_s - o_.warmup_s;
  r["issued"] = issued_;
  r["sent"] = sent_;
  r["completed"] = completed_;
  r["ok"] = ok_;
  r["errors"] = json::object();
  for (const auto& [kind, n] : errors_) r["errors"][kind] = n;
  r["error_samples"] = error_samples_;
  r["warmup_requests"] = warmup_requests_;
  r["duration_s"] = window;
  r["throughput_rps"] = static_cast<double>(ok_in_window_) / window;
  r["inputs_per_s"] = static_cast<double>(ok_in_window_ * o_.inputs_per_request) / window;
  r["tokens_per_s"] = static_cast<double>(tokens_in_window_) / window;
  r["offered_rps"] = static_cast<double>(issued_) / window;
  r["latency_ms"] = SummarizeLatencies(latencies_ms_);
  r["latency_from"] = open_ ? "scheduled arrival" : "send";
  r["connections_opened"] = connections_opened_;
  r["connect_failures"] = connect_failures_;
  r["max_connections_used"] = max_conns_;
  r["retries"] = retries_;
  r["warnings"] = json::array();
  json& warnings = r["warnings"];
  if (open_) {
    r["max_client_queue"] = max_queue_;
    const json lag = SummarizeLatencies(lags_ms_);
    r["schedule_lag_ms"] = {{"p99", lag["p99"]}, {"max", lag["max"]}};
    if (max_queue_at_cap_ > 0) {
      warnings.push_back(
          "all " + std::to_string(o_.max_connections) + " connections were busy and up to " +
          std::to_string(max_queue_at_cap_) +
          " arrivals waited in the client: the server did not keep up with the "
          "offered rate (or raise --max-connections); that wait is in the latencies");
    } else if (static_cast<double>(max_queue_) > std::max(16.0, 0.05 * o_.rate)) {
      warnings.push_back("up to " + std::to_string(max_queue_) +
                         " arrivals waited in the client for a new connection: the client did "
                         "not keep up; that wait is in the latencies");
    }
    if (lag["p99"].is_number() && lag["p99"].get<double>() > 10) {
      warnings.push_back("the client fell behind its own arrival schedule (p99 " +
                         FormatMs(lag["p99"].get<double>()) +
                         " ms late): the load generator, not only the server, limits this rate");
    }
  } else {
    r["max_client_queue"] = 0;
  }
  if (issued_ == 0) {
    warnings.push_back("no request was issued in the measured window");
  } else if (ok_ == 0) {
    warnings.push_back("no request succeeded");
  }
  return r;
}

}  // namespace

StatusOr<std::vector<std::string>> ResolveHost(const std::string& host, uint16_t port) {
  TS_ASSIGN_OR_RETURN(const auto endpoints, Resolve(host, port));
  std::vector<std::string> out;
  for (const auto& e : endpoints) out.push_back(e.endpoint().address().to_string());
  return out;
}

StatusOr<HttpReply> HttpGet(const std::string& host, uint16_t port, const std::string& target,
                            double timeout_s) {
  TS_ASSIGN_OR_RETURN(const auto endpoints, Resolve(host, port));
  asio::io_context ioc;
  std::optional<StatusOr<HttpReply>> result;
  AsyncGet(ioc, endpoints, HostHeader(host, port), target, timeout_s,
           [&](StatusOr<HttpReply> r) { result = std::move(r); });
  ioc.run();
  if (!result) return Internal("GET " + target + " ended without a result");
  return *std::move(result);
}

TrafficResult RunTraffic(const TrafficPlan& plan) {
  TrafficResult result;
  StatusOr<tcp::resolver::results_type> endpoints = Resolve(plan.host, plan.port);
  if (!endpoints.ok()) {
    // RunLoad resolved the host a moment ago; if that no longer works, say so.
    result.counters = {{"issued", 0}, {"warnings", {endpoints.status().message()}}};
    return result;
  }
  const auto runner = std::make_unique<LoadRunner>(plan, *std::move(endpoints));
  runner->Run();
  result.counters = runner->Counters();
  result.warm_metrics = runner->warm_metrics();
  return result;
}

}  // namespace tierscope
