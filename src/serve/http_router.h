// The routing of `tierscope serve`'s HTTP requests, without sockets: a request and what
// the server knows (limits, tokenizer, model, draining) in, a decision out — an answer
// now, or a body to parse off the io thread and then queue or answer. The sessions of
// http_server.cc act on it, and the HTTP fuzzer calls the same function.
#ifndef TIERSCOPE_SERVE_HTTP_ROUTER_H_
#define TIERSCOPE_SERVE_HTTP_ROUTER_H_

#include <functional>
#include <optional>
#include <string>

#include <boost/beast/http.hpp>

#include "tierscope/engine.h"
#include "serve/api.h"
#include "serve/openai_api.h"
#include "serve/service.h"
#include "text/wordpiece.h"

namespace tierscope {

enum class RequestKind { kEmbed, kInfer, kOpenAi, kTokenize };

// What a body's parse hands back: an error, or the request to queue and the call's
// details (or, for /tokenize, the whole response).
struct Parsed {
  std::optional<ApiError> error;
  ServeRequest request;
  OpenAiCall openai;
  InferCall call;
  std::string body;
};

// What the router reads of the server; the callbacks give /info's and /metrics' bodies.
struct RouteContext {
  const ApiLimits* limits = nullptr;
  const WordPieceTokenizer* tokenizer = nullptr;  // null: no vocab.txt
  Pooling pooling = Pooling::kCls;
  std::string model_name;
  const BertConfig* config = nullptr;
  bool has_pooler = false;
  bool draining = false;
  std::function<std::string()> info;
  std::function<std::string(bool ready)> metrics;
};

struct RouteDecision {
  std::string endpoint = "other";  // the metrics label
  bool close = false;              // answer with Connection: close
  // An answer now: an error in the shape of the API asked, or a body.
  std::optional<ApiError> error;
  int code = 200;
  std::string body;
  const char* content_type = "application/json";
  // Or a body to parse (it reads the request's body: keep the request alive until then).
  std::optional<RequestKind> kind;
  std::function<std::optional<ApiError>(Parsed&)> parse;
};

RouteDecision RouteRequest(const RouteContext& ctx, const boost::beast::http::request<boost::beast::http::string_body>& req);

// A request's framing, judged from its header before any body is read (RFC 9112): a
// Transfer-Encoding whose last coding is not chunked is 400 (its body's end is unknown: a
// proxy before us may frame it otherwise), a coding besides chunked (gzip, chunked) 501,
// an HTTP/1.1 request with no Host 400, an unknown method 501. Every such answer closes
// the connection, its body unread.
std::optional<ApiError> CheckFraming(const boost::beast::http::request_header<>& h);

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_HTTP_ROUTER_H_
