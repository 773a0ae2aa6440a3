// RouteRequest: path and method to endpoint, the draining and tokenizer checks, the
// answers that need no body (health, info, metrics, metadata) and the parse each
// inference route runs.
#include "serve/http_router.h"

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tierscope/version.h"

namespace tierscope {
namespace {

namespace http = boost::beast::http;

RouteDecision Answer(int code, std::string body, const char* content_type = "application/json") {
  RouteDecision d;
  d.code = code;
  d.body = std::move(body);
  d.content_type = content_type;
  return d;
}

RouteDecision Refuse(ApiError e, bool close = false) {
  RouteDecision d;
  d.error = std::move(e);
  d.close = close;
  return d;
}

RouteDecision Parse(RequestKind kind, std::function<std::optional<ApiError>(Parsed&)> parse) {
  RouteDecision d;
  d.kind = kind;
  d.parse = std::move(parse);
  return d;
}

RouteDecision NoVocabulary(const std::string& what) {
  // Not 503: nothing will change by waiting, and clients retry a 503.
  return Refuse({422, "this model directory has no vocab.txt: " + what, "Validation"});
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The codings of every `field` line of `h`, in order ("gzip, chunked" is two); an empty
// line adds none. Returns whether the header has the field at all.
template <typename Header>
bool Codings(const Header& h, http::field field, std::vector<std::string_view>* out) {
  bool present = false;
  for (const auto& f : h) {
    if (f.name() != field) continue;
    present = true;
    for (std::string_view rest(f.value().data(), f.value().size()); !rest.empty();) {
      const size_t comma = rest.find(',');
      if (const std::string_view c = Trim(rest.substr(0, comma)); !c.empty()) out->push_back(c);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return present;
}

bool IEquals(std::string_view a, std::string_view b) {
  return boost::beast::iequals(boost::beast::string_view(a.data(), a.size()), boost::beast::string_view(b.data(), b.size()));
}

// The first Content-Encoding coding, over every such line, that is not identity; "" when none.
std::string Encoding(const http::request<http::string_body>& req) {
  std::vector<std::string_view> codings;
  Codings(req, http::field::content_encoding, &codings);
  for (std::string_view c : codings) {
    if (!IEquals(c, "identity")) return std::string(c);
  }
  return "";
}

// /v2/models/{name}[/versions/1][, /ready, /infer].
std::optional<RouteDecision> RouteModel(const RouteContext& ctx, const http::request<http::string_body>& req,
                                        const std::string& path, bool get, bool post) {
  const std::string prefix = "/v2/models/";
  if (path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string rest = path.substr(prefix.size());
  const std::string model = rest.substr(0, rest.find('/'));
  std::string tail = rest.substr(model.size());
  if (tail.compare(0, 11, "/versions/1") == 0) tail = tail.substr(11);
  if (!(tail.empty() || tail == "/ready" || tail == "/infer")) return std::nullopt;
  const bool infer = tail == "/infer";
  RouteDecision d;
  if (infer ? !post : !get) {
    d = Refuse({405, "method " + std::string(req.method_string()) + " is not allowed on " + path + "; use " +
                         (infer ? "POST" : "GET"),
                "Validation"});
  } else if (model != ctx.model_name) {
    d = Refuse({404, "unknown model '" + model + "'; this server has '" + ctx.model_name + "'", "NotFound"});
  } else if (tail.empty()) {
    d = Answer(200, ModelMetadata(ctx.model_name, *ctx.config, ctx.has_pooler));
  } else if (tail == "/ready") {
    d = Answer(ctx.draining ? 503 : 200, "");
  } else if (ctx.draining) {
    d = Refuse({503, "the server is draining (shutting down); send this request elsewhere", "Unhealthy"}, true);
  } else if (const std::string enc = Encoding(req); !enc.empty()) {
    d = Refuse({415, "Content-Encoding " + enc + " is not supported; send the body uncompressed", "Validation"});
  } else {
    size_t header_length = 0;
    const auto value = req["Inference-Header-Content-Length"];
    if (auto e = ParseInferHeaderLength(std::string_view(value.data(), value.size()), req.body().size(),
                                        &header_length)) {
      d = Refuse(*e);
    } else {
      const std::string* body = &req.body();
      d = Parse(RequestKind::kInfer, [&ctx, body, header_length](Parsed& out) {
        return ParseInferRequest(*body, header_length, *ctx.limits, ctx.has_pooler, &out.request, &out.call);
      });
    }
  }
  d.endpoint = "/v2/models/{name}" + tail;
  return d;
}

RouteDecision RouteGet(const RouteContext& ctx, const std::string& path) {
  const bool ready = !ctx.draining;
  if (path == "/v1/models") {
    return Answer(200, nlohmann::json{{"object", "list"},
                                      {"data", {{{"id", ctx.model_name}, {"object", "model"}, {"created", 0},
                                                 {"owned_by", "tierscope"}}}}}
                           .dump());
  }
  if (path == "/health" || path == "/v2/health/ready" || path == "/v2/health/live") {
    const bool ok = path == "/v2/health/live" || ready;
    return Answer(ok ? 200 : 503, ok ? "" : "{\"error\":\"draining\"}");
  }
  if (path == "/info") return Answer(200, ctx.info());
  if (path == "/metrics") return Answer(200, ctx.metrics(ready), "text/plain; version=0.0.4");
  return Answer(200, nlohmann::json{{"name", "tierscope"},
                                    {"version", TIERSCOPE_VERSION},
                                    {"extensions", nlohmann::json::array()}}
                         .dump());  // /v2
}

}  // namespace

std::optional<ApiError> CheckFraming(const http::request_header<>& h) {
  if (h.method() == http::verb::unknown) {
    return ApiError{501, "method " + std::string(h.method_string()) + " is not implemented", "Validation"};
  }
  if (h.version() == 11 && h.find(http::field::host) == h.end()) {
    return ApiError{400, "an HTTP/1.1 request needs a Host header", "Validation"};
  }
  std::vector<std::string_view> list;
  // An empty Transfer-Encoding is one too, and refused below.
  if (!Codings(h, http::field::transfer_encoding, &list)) return std::nullopt;
  std::string codings;  // as the client wrote them, for the message
  for (std::string_view c : list) codings += (codings.empty() ? "" : ", ") + std::string(c);
  if (list.empty() || !IEquals(list.back(), "chunked")) {
    return ApiError{400, "Transfer-Encoding '" + codings + "': the last coding must be chunked (a body's end is "
                         "otherwise unknown)", "Validation"};
  }
  if (list.size() > 1) {
    return ApiError{501, "Transfer-Encoding " + std::string(list.front()) + " is not supported; send the body "
                         "with chunked alone", "Validation"};
  }
  return std::nullopt;
}

RouteDecision RouteRequest(const RouteContext& ctx, const http::request<http::string_body>& req) {
  std::string path(req.target());
  if (auto q = path.find('?'); q != std::string::npos) path.resize(q);
  const bool get = req.method() == http::verb::get || req.method() == http::verb::head;
  const bool post = req.method() == http::verb::post;
  const bool embed = path == "/embed" || path == "/";  // TEI serves embed at / too (InferenceClient posts there)
  const bool post_route = embed || path == "/tokenize" || path == "/v1/embeddings";
  const bool get_route = path == "/v1/models" || path == "/health" || path == "/v2/health/ready" ||
                         path == "/v2/health/live" || path == "/info" || path == "/metrics" || path == "/v2";
  if (auto model = RouteModel(ctx, req, path, get, post)) return std::move(*model);
  if (!post_route && !get_route) return Refuse({404, "no endpoint " + path, "NotFound"});
  RouteDecision d;
  if (post_route ? !post : !get) {
    d = Refuse({405, "method " + std::string(req.method_string()) + " is not allowed on " + path + "; use " +
                         (post_route ? "POST" : "GET"),
                "Validation"});
  } else if (get_route) {
    d = RouteGet(ctx, path);
  } else if (ctx.draining) {  // every inference route, /tokenize too
    d = Refuse({503, "the server is draining (shutting down); send this request elsewhere", "Unhealthy"}, true);
  } else if (const std::string enc = Encoding(req); !enc.empty()) {
    d = Refuse({415, "Content-Encoding " + enc + " is not supported; send the body uncompressed", "Validation"});
  } else if (embed) {
    if (ctx.tokenizer == nullptr) {
      d = NoVocabulary("text cannot be tokenized; use /v2/models/" + ctx.model_name + "/infer with token ids");
    } else {
      const std::string* body = &req.body();
      d = Parse(RequestKind::kEmbed, [&ctx, body](Parsed& out) {
        return ParseEmbedRequest(*body, *ctx.limits, *ctx.tokenizer, ctx.pooling, &out.request);
      });
    }
  } else if (path == "/tokenize") {
    if (ctx.tokenizer == nullptr) {
      d = NoVocabulary("there is nothing to tokenize with");
    } else {
      const std::string* body = &req.body();
      d = Parse(RequestKind::kTokenize, [&ctx, body](Parsed& out) -> std::optional<ApiError> {
        std::vector<TokenizedInput> inputs;
        if (auto e = ParseTokenizeRequest(*body, *ctx.limits, *ctx.tokenizer, &inputs)) return e;
        out.body = TokenizeResponse(*ctx.tokenizer, inputs);
        return std::nullopt;
      });
    }
  } else {  // /v1/embeddings
    const std::string* body = &req.body();
    d = Parse(RequestKind::kOpenAi, [&ctx, body](Parsed& out) {
      return ParseOpenAiEmbeddingsRequest(*body, *ctx.limits, ctx.tokenizer, ctx.pooling, ctx.model_name,
                                          &out.request, &out.openai);
    });
  }
  d.endpoint = path;
  return d;
}

}  // namespace tierscope
