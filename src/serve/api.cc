// Parsing and validation of TEI's /embed and /tokenize bodies, their response writers,
// and the model directory's serving settings. KServe v2 is kserve_api.cc; OpenAI's
// embeddings API is openai_api.cc.
#include "serve/api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>
#include <unicode/utf8.h>

#include "core/paths.h"
#include "serve/api_util.h"

namespace tierscope {
namespace {

using nlohmann::json;

ApiError Invalid(std::string message) { return {422, std::move(message), "Validation"}; }

std::optional<ApiError> OptionalBool(const json& j, const char* key, bool* value) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return Invalid(std::string("`") + key + "` must be a boolean");
  *value = it->get<bool>();
  return std::nullopt;
}

// Encodes enough of `text` to know its first max_tokens + 1 tokens ([CLS] and [SEP]
// counted), so a megabyte of text costs about what its first few hundred tokens do.
// Prefixes end just after ASCII whitespace or punctuation, where BERT's pre-tokenizer
// always splits, so the tokens of a prefix are the first tokens of the whole (but for a
// last one that a cut inside "[MASK]" splits: it is past what the caller keeps). `whole`
// says whether all of it was encoded. No [CLS]/[SEP] in what it returns.
std::vector<WordPieceTokenizer::Piece> EncodeAtMost(const WordPieceTokenizer& tokenizer, std::string_view text,
                                                    int64_t max_tokens, bool* whole) {
  const auto splits = [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) || std::ispunct(static_cast<unsigned char>(c));
  };
  size_t budget = static_cast<size_t>(std::max<int64_t>(max_tokens, 1)) * 16;
  for (;;) {
    if (budget >= text.size()) break;
    size_t cut = budget;
    while (cut > 0 && !splits(text[cut - 1])) --cut;
    if (cut == 0) {  // a giant first word: cut after the first split past it, if any
      cut = budget;
      while (cut < text.size() && !splits(text[cut - 1])) ++cut;
      if (cut >= text.size()) break;  // none: encode it all
    }
    std::vector<WordPieceTokenizer::Piece> pieces = tokenizer.EncodeWithOffsets(text.substr(0, cut));
    if (static_cast<int64_t>(pieces.size()) + 2 > max_tokens) {
      *whole = false;
      return pieces;
    }
    budget = std::max(budget, cut) * 4;
  }
  *whole = true;
  return tokenizer.EncodeWithOffsets(text);
}

}  // namespace

ApiError InvalidRequest(std::string message) { return Invalid(std::move(message)); }
std::optional<ApiError> ParseJsonObject(std::string_view body, json* out) {
  // No request of any API nests deeper than a few levels ({"inputs": [[ids]]}); a body of
  // millions of '[' would build a tree of ~90 bytes a byte before its end was seen. One
  // pass over the bytes counts the open containers (strings skipped) before the parse.
  constexpr int kMaxDepth = 32;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character is not a quote
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) {
        return Invalid("the JSON nests deeper than " + std::to_string(kMaxDepth) + " levels; no request needs more");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    *out = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {  // parse errors, and numbers out of double's range
    return Invalid("invalid JSON: " + std::string(e.what()));
  }
  if (!out->is_object()) return Invalid("the body must be a JSON object");
  return std::nullopt;
}

// Text from a request or the file system may not be UTF-8: invalid bytes become U+FFFD
// rather than an exception.
std::string DumpJson(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void AppendFloats(const std::vector<float>& v, std::string* out) {
  *out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) *out += ',';
    AppendFloat(v[i], out);
  }
  *out += ']';
}

std::optional<ApiError> EncodeInput(const WordPieceTokenizer& tokenizer, std::string_view text,
                                    const ApiLimits& limits, bool truncate, size_t index,
                                    std::vector<int32_t>* ids, std::vector<std::pair<int64_t, int64_t>>* offsets,
                                    bool can_truncate) {
  bool whole = true;
  std::vector<WordPieceTokenizer::Piece> pieces = EncodeAtMost(tokenizer, text, limits.max_input_length, &whole);
  const int64_t n = static_cast<int64_t>(pieces.size()) + 2;  // with [CLS] and [SEP]
  if (n > limits.max_input_length) {
    if (!truncate) {
      return Invalid("input " + std::to_string(index) + " has " + (whole ? "" : "at least ") +
                     std::to_string(n) + " tokens, more than the maximum of " +
                     std::to_string(limits.max_input_length) +
                     (can_truncate ? "; shorten it or send \"truncate\": true" : "; shorten it"));
    }
    // As Hugging Face truncates: keep the first max-1 tokens, end with [SEP].
    pieces.resize(static_cast<size_t>(std::max<int64_t>(limits.max_input_length - 2, 0)));
  }
  ids->assign({tokenizer.cls_id()});
  for (const auto& p : pieces) ids->push_back(p.id);
  ids->push_back(tokenizer.sep_id());
  if (static_cast<int64_t>(ids->size()) > limits.max_input_length) {  // a limit below 2: [SEP] last
    ids->resize(static_cast<size_t>(std::max<int64_t>(limits.max_input_length, 1)));
    ids->back() = tokenizer.sep_id();
  }
  if (offsets != nullptr) {
    offsets->assign(ids->size(), {-1, -1});
    for (size_t i = 1; i + 1 < ids->size(); ++i) offsets->at(i) = {pieces[i - 1].start, pieces[i - 1].stop};
  }
  return std::nullopt;
}

void AppendFloat(float v, std::string* out) {
  if (!std::isfinite(v)) {  // JSON has no NaN or Infinity
    *out += "null";
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

std::string ErrorBody(const ApiError& e) {
  return DumpJson(json{{"error", e.message}, {"error_type", e.type}});
}

std::optional<ApiError> ParseEmbedRequest(std::string_view body, const ApiLimits& limits,
                                          const WordPieceTokenizer& tokenizer, Pooling pooling,
                                          ServeRequest* out) {
  json j;
  if (auto e = ParseJsonObject(body, &j)) return e;
  auto it = j.find("inputs");
  if (it == j.end()) return Invalid("missing `inputs`");
  std::vector<std::string> texts;
  if (it->is_string()) {
    texts.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    if (it->empty()) return Invalid("`inputs` cannot be empty");
    if (static_cast<int64_t>(it->size()) > limits.max_client_batch_size) {
      return ApiError{413,
                      "batch size " + std::to_string(it->size()) +
                          " > maximum allowed batch size " +
                          std::to_string(limits.max_client_batch_size),
                      "Validation"};
    }
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        return Invalid("`inputs[" + std::to_string(i) + "]` must be a string, got " +
                       (*it)[i].type_name());
      }
      texts.push_back((*it)[i].get<std::string>());
    }
  } else {
    return Invalid(std::string("`inputs` must be a string or a list of strings, got ") +
                   it->type_name());
  }
  bool truncate = false;
  out->normalize = true;
  if (auto e = OptionalBool(j, "normalize", &out->normalize)) return e;
  if (auto e = OptionalBool(j, "truncate", &truncate)) return e;
  out->want_embedding = true;
  out->pooling = pooling;
  out->inputs.clear();
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> ids;
    if (auto e = EncodeInput(tokenizer, texts[i], limits, truncate, i, &ids)) return e;
    ServeInput in;
    in.ids = std::move(ids);
    out->inputs.push_back(std::move(in));
  }
  return std::nullopt;
}

std::string EmbedResponse(const ServeResult& result) {
  std::string out;
  out.reserve(result.embedding.size() * static_cast<size_t>(result.hidden) * 12 + 2);
  out += '[';
  for (size_t i = 0; i < result.embedding.size(); ++i) {
    if (i) out += ',';
    AppendFloats(result.embedding[i], &out);
  }
  out += ']';
  return out;
}

std::optional<ApiError> ParseTokenizeRequest(std::string_view body, const ApiLimits& limits,
                                             const WordPieceTokenizer& tokenizer, std::vector<TokenizedInput>* out) {
  json j;
  if (auto e = ParseJsonObject(body, &j)) return e;
  auto it = j.find("inputs");
  if (it == j.end()) return Invalid("missing `inputs`");
  out->clear();
  if (it->is_string()) {
    out->push_back({it->get<std::string>(), {}, {}});
  } else if (it->is_array() && !it->empty()) {
    if (static_cast<int64_t>(it->size()) > limits.max_client_batch_size) {
      return ApiError{413,
                      "batch size " + std::to_string(it->size()) + " > maximum allowed batch size " +
                          std::to_string(limits.max_client_batch_size),
                      "Validation"};
    }
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) return Invalid("`inputs[" + std::to_string(i) + "]` must be a string");
      out->push_back({(*it)[i].get<std::string>(), {}, {}});
    }
  } else {
    return Invalid("`inputs` must be a string or a non-empty list of strings");
  }
  bool special = true, truncate = false;
  if (auto e = OptionalBool(j, "add_special_tokens", &special)) return e;
  if (auto e = OptionalBool(j, "truncate", &truncate)) return e;
  for (size_t i = 0; i < out->size(); ++i) {
    // As long as the model takes, like every other route (an 8 MiB body would otherwise
    // be millions of tokens on the io thread).
    TokenizedInput& in = (*out)[i];
    if (auto e = EncodeInput(tokenizer, in.text, limits, truncate, i, &in.ids, &in.offsets)) return e;
    if (!special && in.ids.size() >= 2) {  // [CLS] ... [SEP] off
      in.ids = std::vector<int32_t>(in.ids.begin() + 1, in.ids.end() - 1);
      in.offsets = std::vector<std::pair<int64_t, int64_t>>(in.offsets.begin() + 1, in.offsets.end() - 1);
    }
  }
  return std::nullopt;
}

std::string TokenizeResponse(const WordPieceTokenizer& tokenizer, const std::vector<TokenizedInput>& inputs) {
  json out = json::array();
  for (const TokenizedInput& in : inputs) {
    // Byte offset of each code point of the text, as far as the offsets reach.
    int64_t last = 0;
    for (const auto& [start, stop] : in.offsets) last = std::max(last, stop);
    std::vector<size_t> at = {0};
    const auto* s = reinterpret_cast<const uint8_t*>(in.text.data());
    const int32_t n = static_cast<int32_t>(in.text.size());
    for (int32_t i = 0; static_cast<int64_t>(at.size()) <= last && i < n;) {
      U8_FWD_1(s, i, n);
      at.push_back(static_cast<size_t>(i));
    }
    json tokens = json::array();
    for (size_t t = 0; t < in.ids.size(); ++t) {
      const auto [start, stop] = in.offsets[t];
      if (start < 0) {
        tokens.push_back({{"id", in.ids[t]}, {"text", tokenizer.token(in.ids[t])}, {"special", true},
                          {"start", nullptr}, {"stop", nullptr}});
        continue;
      }
      const size_t b0 = at[static_cast<size_t>(start)], b1 = at[static_cast<size_t>(stop)];
      tokens.push_back({{"id", in.ids[t]}, {"text", in.text.substr(b0, b1 - b0)}, {"special", false},
                        {"start", start}, {"stop", stop}});
    }
    out.push_back(std::move(tokens));
  }
  return DumpJson(out);
}

StatusOr<std::optional<Pooling>> PoolingFromModelDir(const std::string& dir) {
  const std::string path = dir + "/1_Pooling/config.json";
  if (!IsRegularFile(path)) return std::optional<Pooling>();
  TS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return DataLoss(path + ": not a JSON object");
  if (j.value("pooling_mode_mean_tokens", false)) return std::optional<Pooling>(Pooling::kMean);
  if (j.value("pooling_mode_cls_token", false)) return std::optional<Pooling>(Pooling::kCls);
  return Unimplemented(path + ": only CLS and mean pooling are supported");
}

int64_t MaxSeqLengthFromModelDir(const std::string& dir) {
  StatusOr<std::string> text = ReadFile(dir + "/sentence_bert_config.json");
  if (!text.ok()) return 0;
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return 0;
  auto it = j.find("max_seq_length");
  return it != j.end() && it->is_number_integer() && it->get<int64_t>() > 0 ? it->get<int64_t>() : 0;
}

bool LowerCaseFromModelDir(const std::string& dir) {
  StatusOr<std::string> text = ReadFile(dir + "/tokenizer_config.json");
  if (!text.ok()) return true;
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return true;
  auto it = j.find("do_lower_case");
  return it == j.end() || !it->is_boolean() || it->get<bool>();
}

}  // namespace tierscope
