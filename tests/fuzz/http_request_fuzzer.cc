// libFuzzer target: the server's request path without the sockets. Bytes that start like
// an HTTP request go through Beast's request parser (eager, with smaller header and body
// limits than the server's, to keep inputs fast), then through the server's own router
// (RouteRequest, which Session::Route calls) — draining or not, with or without a
// vocabulary — and the parse it picks (/embed and /tokenize of TEI, KServe v2 infer,
// OpenAI's /v1/embeddings); any other bytes are handed to every parser as a body. An
// accepted request is answered with a response of the right shape by the server's writers,
// and a refusal is written in its API's error shape.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api.h"
#include "serve/http_router.h"
#include "serve/openai_api.h"
#include "text/wordpiece.h"

namespace {

namespace http = boost::beast::http;

const tierscope::WordPieceTokenizer& Tokenizer() {
  static const tierscope::WordPieceTokenizer t =
      *tierscope::WordPieceTokenizer::FromVocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "a", "hello",
                                                 "world", "##s", "##ing", ",", ".", "!", "token"},
                                                true, "fuzz-vocab");
  return t;
}

tierscope::ApiLimits Limits() {
  tierscope::ApiLimits l;
  l.max_client_batch_size = 8;
  l.max_input_length = 32;
  l.vocab_size = 14;
  l.type_vocab_size = 2;
  return l;
}

// A result of the right shape for the request, as the dispatcher would fill it.
tierscope::ServeResult Answer(const tierscope::ServeRequest& r) {
  tierscope::ServeResult res;
  res.hidden = 4;
  for (const tierscope::ServeInput& in : r.inputs) {
    if (r.want_embedding) res.embedding.emplace_back(4, 0.5f);
    if (r.want_hidden) res.last_hidden.emplace_back(in.ids.size() * 4, -1.25f);
    if (r.want_pooler) res.pooler.emplace_back(4, 0.25f);
  }
  return res;
}

void Embed(std::string_view body) {
  tierscope::ServeRequest r;
  if (!tierscope::ParseEmbedRequest(body, Limits(), Tokenizer(), tierscope::Pooling::kMean, &r)) {
    if (r.inputs.empty()) __builtin_trap();  // accepted, so it has inputs
    for (const auto& in : r.inputs) {
      if (in.ids.empty() || static_cast<int64_t>(in.ids.size()) > Limits().max_input_length) __builtin_trap();
    }
    (void)tierscope::EmbedResponse(Answer(r));
  }
}

// /tokenize: offsets inside the text, in order, each token's text the characters they
// name (the response slices the input by them).
void TokenizeRoute(std::string_view body) {
  std::vector<tierscope::TokenizedInput> inputs;
  if (tierscope::ParseTokenizeRequest(body, Limits(), Tokenizer(), &inputs)) return;
  for (const tierscope::TokenizedInput& in : inputs) {
    if (in.offsets.size() != in.ids.size()) __builtin_trap();
    const int64_t n = tierscope::CodePoints(in.text);
    for (const auto& [start, stop] : in.offsets) {
      if (start == -1 && stop == -1) continue;  // [CLS], [SEP]
      if (start < 0 || start >= stop || stop > n) __builtin_trap();
    }
  }
  (void)tierscope::TokenizeResponse(Tokenizer(), inputs);
}

void Infer(std::string_view body, std::string_view header_length) {
  tierscope::ServeRequest r;
  tierscope::InferCall call;
  size_t json_bytes = 0;
  if (tierscope::ParseInferHeaderLength(header_length, body.size(), &json_bytes)) return;
  if (json_bytes > body.size()) __builtin_trap();  // checked against the body
  if (!tierscope::ParseInferRequest(body, json_bytes, Limits(), /*has_pooler=*/true, &r, &call)) {
    for (const auto& in : r.inputs) {
      for (int32_t id : in.ids) {
        if (id < 0 || id >= Limits().vocab_size) __builtin_trap();  // validated before queueing
      }
    }
    size_t response_json = 0;
    const std::string response = tierscope::InferResponse("bert", call, Answer(r), &response_json);
    if (response_json > response.size()) __builtin_trap();
  }
}

// OpenAI's /v1/embeddings, with the vocabulary or without it (token arrays only).
void OpenAi(std::string_view body, bool with_vocab) {
  tierscope::ServeRequest r;
  tierscope::OpenAiCall call;
  if (auto e = tierscope::ParseOpenAiEmbeddingsRequest(body, Limits(), with_vocab ? &Tokenizer() : nullptr,
                                                       tierscope::Pooling::kMean, "bert", &r, &call)) {
    const int status = tierscope::OpenAiErrorStatus(*e);
    if (status < 400 || status > 599) __builtin_trap();
    (void)tierscope::OpenAiErrorBody(*e);
    return;
  }
  if (r.inputs.empty()) __builtin_trap();
  for (const auto& in : r.inputs) {
    if (in.ids.empty() || static_cast<int64_t>(in.ids.size()) > Limits().max_input_length) __builtin_trap();
    for (int32_t id : in.ids) {
      if (id < 0 || id >= Limits().vocab_size) __builtin_trap();
    }
  }
  (void)tierscope::OpenAiEmbeddingsResponse(call, Answer(r));
}

const tierscope::BertConfig& Config() {
  static const tierscope::BertConfig c = [] {
    tierscope::BertConfig config;
    config.vocab_size = Limits().vocab_size;
    config.hidden_size = 4;
    config.num_hidden_layers = 1;
    config.num_attention_heads = 1;
    config.intermediate_size = 8;
    config.max_position_embeddings = Limits().max_input_length;
    return config;
  }();
  return c;
}

// The request through the server's router, as Session::Route takes it: an answer now or
// a parse, then the response the session would write.
void Route(const http::request<http::string_body>& req, bool draining, bool with_vocab) {
  static const tierscope::ApiLimits limits = Limits();
  tierscope::RouteContext ctx;
  ctx.limits = &limits;
  ctx.tokenizer = with_vocab ? &Tokenizer() : nullptr;
  ctx.pooling = tierscope::Pooling::kMean;
  ctx.model_name = "bert";
  ctx.config = &Config();
  ctx.has_pooler = true;
  ctx.draining = draining;
  ctx.info = [] { return std::string("{}"); };
  ctx.metrics = [](bool) { return std::string(); };
  tierscope::RouteDecision d = tierscope::RouteRequest(ctx, req);
  if (d.endpoint.empty()) __builtin_trap();
  if (d.error) {
    if (d.error->code < 400 || d.error->code > 599 || d.parse) __builtin_trap();  // one decision
    (void)tierscope::ErrorBody(*d.error);
    return;
  }
  if (!d.parse) {
    if (d.kind || d.code < 200 || d.code > 599) __builtin_trap();
    // Nothing that reaches the model is answered without a parse, and never while draining.
    if (d.endpoint == "/embed" || d.endpoint == "/tokenize" || d.endpoint == "/v1/embeddings") __builtin_trap();
    return;
  }
  if (draining || !d.kind) __builtin_trap();  // a drain refuses every inference route, /tokenize too
  tierscope::Parsed out;
  out.error = d.parse(out);
  if (out.error) {
    if (out.error->code < 400 || out.error->code > 599) __builtin_trap();
    if (*d.kind == tierscope::RequestKind::kOpenAi) {
      (void)tierscope::OpenAiErrorBody(*out.error);
    } else {
      (void)tierscope::ErrorBody(*out.error);
    }
    return;
  }
  if (*d.kind == tierscope::RequestKind::kTokenize) {
    if (out.body.empty()) __builtin_trap();  // the whole response
    return;
  }
  if (out.request.inputs.empty()) __builtin_trap();
  for (const auto& in : out.request.inputs) {
    for (int32_t id : in.ids) {
      if (id < 0 || id >= limits.vocab_size) __builtin_trap();  // validated before queueing
    }
  }
  switch (*d.kind) {
    case tierscope::RequestKind::kEmbed: (void)tierscope::EmbedResponse(Answer(out.request)); break;
    case tierscope::RequestKind::kOpenAi:
      (void)tierscope::OpenAiEmbeddingsResponse(out.openai, Answer(out.request));
      break;
    case tierscope::RequestKind::kInfer: {
      size_t json = 0;
      const std::string response = tierscope::InferResponse("bert", out.call, Answer(out.request), &json);
      if (json > response.size()) __builtin_trap();
      break;
    }
    case tierscope::RequestKind::kTokenize: break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const bool http_like = bytes.rfind("POST ", 0) == 0 || bytes.rfind("GET ", 0) == 0 ||
                         bytes.rfind("HEAD ", 0) == 0 || bytes.rfind("PUT ", 0) == 0;
  if (!http_like) {
    Embed(bytes);
    TokenizeRoute(bytes);
    Infer(bytes, "");
    OpenAi(bytes, true);
    OpenAi(bytes, false);
    // The binary tensor extension: the first byte says where the JSON header ends.
    if (size > 1) Infer(bytes.substr(1), std::to_string(data[0] % size));
    return 0;
  }
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  parser.header_limit(16 * 1024);
  parser.body_limit(1 << 20);
  boost::beast::error_code ec;
  size_t used = 0;
  while (used < size && !ec && !parser.is_done()) {
    const size_t n = parser.put(boost::asio::buffer(data + used, size - used), ec);
    if (n == 0) break;
    used += n;
  }
  if (!parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;
  const auto& req = parser.get();
  // Two headers of the fuzzer's own set the server's state, so seeds and mutations reach
  // a draining server and a model directory without vocab.txt.
  Route(req, /*draining=*/req.count("X-Fuzz-Draining") > 0, /*with_vocab=*/req.count("X-Fuzz-No-Vocab") == 0);
  return 0;
}
