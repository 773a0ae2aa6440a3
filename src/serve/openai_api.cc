// OpenAI's embeddings API: request parsing and validation, the response (float lists or
// base64 float32), and OpenAI's error shape.
#include "serve/openai_api.h"

#include <bit>
#include <cstring>
#include <vector>

#include <boost/beast/core/detail/base64.hpp>
#include <nlohmann/json.hpp>

#include "serve/api_util.h"

namespace tierscope {
namespace {

using nlohmann::json;

ApiError BadRequest(std::string message, std::string type = "Validation") {
  return {400, std::move(message), std::move(type)};
}

// One pre-tokenized input: ids inside the vocabulary, at most max_input_length of them.
std::optional<ApiError> TokenInput(const json& ids, size_t index, const ApiLimits& limits,
                                   std::vector<int32_t>* out) {
  if (ids.empty()) return BadRequest("`input[" + std::to_string(index) + "]` is an empty token array");
  if (static_cast<int64_t>(ids.size()) > limits.max_input_length) {
    return BadRequest("`input[" + std::to_string(index) + "]` has " + std::to_string(ids.size()) +
                      " tokens, more than the maximum of " + std::to_string(limits.max_input_length));
  }
  for (size_t j = 0; j < ids.size(); ++j) {
    if (!ids[j].is_number_integer() || ids[j].get<int64_t>() < 0 ||
        (limits.vocab_size > 0 && ids[j].get<int64_t>() >= limits.vocab_size)) {
      return BadRequest("`input[" + std::to_string(index) + "][" + std::to_string(j) +
                        "]` is not a token id in [0, " + std::to_string(limits.vocab_size) + ")");
    }
    out->push_back(static_cast<int32_t>(ids[j].get<int64_t>()));
  }
  return std::nullopt;
}

// `input` as a list of token-id lists or of strings (a single one wrapped).
std::optional<ApiError> CollectInputs(const json& input, const ApiLimits& limits,
                                      const WordPieceTokenizer* tokenizer, ServeRequest* out) {
  std::vector<const json*> items;
  json wrapped;
  if (input.is_string() || (input.is_array() && !input.empty() && input[0].is_number_integer())) {
    wrapped = json::array({input});  // one text, or one token array
    items.push_back(&wrapped[0]);
  } else if (input.is_array()) {
    if (input.empty()) return BadRequest("`input` cannot be an empty list");
    for (const json& v : input) items.push_back(&v);
  } else {
    return BadRequest(std::string("`input` must be a string, a list of strings or token arrays, got ") +
                      input.type_name());
  }
  if (static_cast<int64_t>(items.size()) > limits.max_client_batch_size) {
    return ApiError{413,
                    "batch size " + std::to_string(items.size()) + " > maximum allowed batch size " +
                        std::to_string(limits.max_client_batch_size),
                    "Validation"};
  }
  for (size_t i = 0; i < items.size(); ++i) {
    ServeInput in;
    if (items[i]->is_string()) {
      if (tokenizer == nullptr) {
        return BadRequest("this model directory has no vocab.txt: send token arrays, not text");
      }
      if (auto e = EncodeInput(*tokenizer, items[i]->get<std::string>(), limits, false, i, &in.ids, nullptr,
                               /*can_truncate=*/false)) {
        return BadRequest(e->message);
      }
    } else if (items[i]->is_array()) {
      if (auto e = TokenInput(*items[i], i, limits, &in.ids)) return e;
    } else {
      return BadRequest("`input[" + std::to_string(i) + "]` must be a string or a token array, got " +
                        items[i]->type_name());
    }
    out->inputs.push_back(std::move(in));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseOpenAiEmbeddingsRequest(std::string_view body, const ApiLimits& limits,
                                                     const WordPieceTokenizer* tokenizer, Pooling pooling,
                                                     const std::string& model_name, ServeRequest* out,
                                                     OpenAiCall* call) {
  json j;
  if (auto e = ParseJsonObject(body, &j)) return BadRequest(e->message);
  auto model = j.find("model");
  if (model == j.end() || !model->is_string()) return BadRequest("`model` must be given, as a string");
  call->model = model->get<std::string>();
  if (call->model != model_name) {
    return ApiError{404, "the model '" + call->model + "' does not exist; this server has '" + model_name + "'",
                    "NotFound"};
  }
  if (auto d = j.find("dimensions"); d != j.end() && !d->is_null()) {
    return BadRequest("`dimensions` is not supported: " + model_name +
                      " has one embedding size; leave `dimensions` out");
  }
  call->base64 = false;
  if (auto f = j.find("encoding_format"); f != j.end() && !f->is_null()) {
    if (!f->is_string() || (*f != "float" && *f != "base64")) {
      return BadRequest("`encoding_format` must be \"float\" or \"base64\"");
    }
    call->base64 = *f == "base64";
  }
  auto input = j.find("input");
  if (input == j.end()) return BadRequest("missing `input`");
  out->inputs.clear();
  if (auto e = CollectInputs(*input, limits, tokenizer, out)) return e;
  call->prompt_tokens = 0;
  for (const ServeInput& in : out->inputs) call->prompt_tokens += static_cast<int64_t>(in.ids.size());
  out->want_embedding = true;
  out->pooling = pooling;
  out->normalize = true;
  return std::nullopt;
}

std::string OpenAiEmbeddingsResponse(const OpenAiCall& call, const ServeResult& result) {
  std::string out = "{\"object\":\"list\",\"data\":[";
  std::string b64;
  for (size_t i = 0; i < result.embedding.size(); ++i) {
    const std::vector<float>& v = result.embedding[i];
    out += i ? ",{" : "{";
    out += "\"object\":\"embedding\",\"index\":" + std::to_string(i) + ",\"embedding\":";
    if (call.base64) {
      // The float32 values' bytes as they lie in memory: little-endian on every host
      // tierscope builds for, which is what OpenAI's clients decode.
      static_assert(std::endian::native == std::endian::little);
      namespace b64ns = boost::beast::detail::base64;
      b64.resize(b64ns::encoded_size(v.size() * sizeof(float)));
      b64.resize(b64ns::encode(b64.data(), v.data(), v.size() * sizeof(float)));
      out += '"' + b64 + '"';
    } else {
      AppendFloats(v, &out);
    }
    out += '}';
  }
  out += "],\"model\":" + DumpJson(call.model) + ",\"usage\":{\"prompt_tokens\":" +
         std::to_string(call.prompt_tokens) + ",\"total_tokens\":" + std::to_string(call.prompt_tokens) + "}}";
  return out;
}

int OpenAiErrorStatus(const ApiError& e) { return e.code == 422 ? 400 : e.code; }

std::string OpenAiErrorBody(const ApiError& e) {
  const int status = OpenAiErrorStatus(e);
  const char* type = status == 429 ? "rate_limit_exceeded"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  json code = nullptr;
  if (status == 404) code = "model_not_found";
  if (status == 429) code = "rate_limit_exceeded";
  return DumpJson(json{{"error", {{"message", e.message}, {"type", type}, {"param", nullptr}, {"code", code}}}});
}

}  // namespace tierscope
