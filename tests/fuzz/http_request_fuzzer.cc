// libFuzzer target: the server's request path without the sockets. Bytes that start like
// an HTTP request go through Beast's request parser (eager, with smaller header and body
// limits than the server's, to keep inputs fast), then, by target, into the /embed and
// /tokenize (TEI) or KServe v2 infer parser the server calls; any other bytes are handed
// to all of them as a body. A request they accept is answered with a response of the right shape,
// written by the server's writers. The routing of http_server.cc itself (a session on a
// socket) is not exercised here; tests/serve covers it over loopback.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api.h"
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const bool http_like = bytes.rfind("POST ", 0) == 0 || bytes.rfind("GET ", 0) == 0 ||
                         bytes.rfind("HEAD ", 0) == 0 || bytes.rfind("PUT ", 0) == 0;
  if (!http_like) {
    Embed(bytes);
    TokenizeRoute(bytes);
    Infer(bytes, "");
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
  std::string path(req.target());
  if (auto q = path.find('?'); q != std::string::npos) path.resize(q);
  if (path == "/embed" || path == "/") Embed(req.body());
  if (path == "/tokenize") TokenizeRoute(req.body());
  if (path.rfind("/v2/models/", 0) == 0) {
    const auto header = req["Inference-Header-Content-Length"];
    Infer(req.body(), std::string_view(header.data(), header.size()));
  }
  return 0;
}
