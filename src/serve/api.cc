// Parsing and validation of /embed and KServe v2 infer bodies; response writers.
#include "serve/api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/paths.h"

namespace tierscope {
namespace {

using nlohmann::json;

ApiError Invalid(std::string message) { return {422, std::move(message), "Validation"}; }

// Text from a request or the file system may not be UTF-8: invalid bytes become U+FFFD
// rather than an exception.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::optional<ApiError> ParseJson(std::string_view body, json* out) {
  try {
    *out = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {  // parse errors, and numbers out of double's range
    return Invalid("invalid JSON: " + std::string(e.what()));
  }
  if (!out->is_object()) return Invalid("the body must be a JSON object");
  return std::nullopt;
}

std::optional<ApiError> OptionalBool(const json& j, const char* key, bool* value) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return Invalid(std::string("`") + key + "` must be a boolean");
  *value = it->get<bool>();
  return std::nullopt;
}

// Flattens `data` (a flat list of integers, or a list of such lists) into `out`.
std::optional<ApiError> FlattenInts(const json& data, const std::string& name,
                                    std::vector<int64_t>* out, int depth = 0) {
  if (data.is_array()) {
    if (depth == 2) {
      return Invalid("input `" + name + "` has data nested deeper than [batch][seq_len]");
    }
    for (const json& v : data) {
      if (auto e = FlattenInts(v, name, out, depth + 1)) return e;
    }
    return std::nullopt;
  }
  if (data.is_number_integer()) {
    out->push_back(data.is_number_unsigned() && data.get<uint64_t>() > INT64_MAX
                       ? INT64_MAX
                       : data.get<int64_t>());
    return std::nullopt;
  }
  return Invalid("input `" + name + "` holds " + std::string(data.type_name()) +
                 " values; its datatype is integer");
}

void AppendFloats(const std::vector<float>& v, std::string* out) {
  *out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) *out += ',';
    AppendFloat(v[i], out);
  }
  *out += ']';
}

// Encodes enough of `text` to know its first max_tokens + 1 tokens, so a megabyte of text
// costs about what its first few hundred tokens do. Prefixes end just after ASCII
// whitespace or punctuation, where BERT's pre-tokenizer always splits, so the tokens of a
// prefix are the first tokens of the whole. `whole` says whether all of it was encoded.
std::vector<int32_t> EncodeAtMost(const WordPieceTokenizer& tokenizer, std::string_view text,
                                  int64_t max_tokens, bool* whole) {
  size_t budget = static_cast<size_t>(std::max<int64_t>(max_tokens, 1)) * 16;
  for (;;) {
    if (budget >= text.size()) break;
    size_t cut = budget;
    while (cut > 0 && !(std::isspace(static_cast<unsigned char>(text[cut - 1])) ||
                        std::ispunct(static_cast<unsigned char>(text[cut - 1])))) {
      --cut;
    }
    if (cut == 0) break;  // one giant word: encode it all
    std::vector<int32_t> ids = tokenizer.Encode(text.substr(0, cut), true);
    if (static_cast<int64_t>(ids.size()) > max_tokens) {
      *whole = false;
      return ids;
    }
    budget *= 4;
  }
  *whole = true;
  return tokenizer.Encode(text, true);
}

}  // namespace

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
  return Dump(json{{"error", e.message}, {"error_type", e.type}});
}

std::optional<ApiError> ParseEmbedRequest(std::string_view body, const ApiLimits& limits,
                                          const WordPieceTokenizer& tokenizer, Pooling pooling,
                                          ServeRequest* out) {
  json j;
  if (auto e = ParseJson(body, &j)) return e;
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
    bool whole = true;
    std::vector<int32_t> ids = EncodeAtMost(tokenizer, texts[i], limits.max_input_length, &whole);
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n > limits.max_input_length) {
      if (!truncate) {
        return Invalid("input " + std::to_string(i) + " has " + (whole ? "" : "at least ") +
                       std::to_string(n) + " tokens, more than the maximum of " +
                       std::to_string(limits.max_input_length) +
                       "; shorten it or send \"truncate\": true");
      }
      // As Hugging Face truncates: keep the first max-1 tokens, end with [SEP].
      ids.resize(static_cast<size_t>(limits.max_input_length));
      ids.back() = tokenizer.sep_id();
    }
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

std::optional<ApiError> ParseInferRequest(std::string_view body, const ApiLimits& limits,
                                          bool has_pooler, ServeRequest* out, InferCall* call) {
  json j;
  if (auto e = ParseJson(body, &j)) return e;
  if (auto id = j.find("id"); id != j.end()) {
    if (!id->is_string()) return Invalid("`id` must be a string");
    call->id = id->get<std::string>();
  }
  auto inputs = j.find("inputs");
  if (inputs == j.end() || !inputs->is_array() || inputs->empty()) {
    return Invalid("`inputs` must be a non-empty list of tensors");
  }
  std::map<std::string, std::vector<int64_t>> tensors;
  std::vector<int64_t> shape;
  for (const json& t : *inputs) {
    if (!t.is_object()) return Invalid("each entry of `inputs` must be an object");
    auto name = t.find("name");
    if (name == t.end() || !name->is_string()) return Invalid("an input has no `name`");
    const std::string n = name->get<std::string>();
    if (n != "input_ids" && n != "attention_mask" && n != "token_type_ids") {
      return Invalid("unknown input `" + n +
                     "`; the model takes input_ids, attention_mask and token_type_ids");
    }
    if (tensors.count(n)) return Invalid("input `" + n + "` is given twice");
    auto dt = t.find("datatype");
    if (dt == t.end() || !dt->is_string()) return Invalid("input `" + n + "` has no `datatype`");
    const std::string dtype = dt->get<std::string>();
    if (dtype != "INT64" && dtype != "INT32") {
      return Invalid("input `" + n + "` has datatype " + dtype + "; expected INT64 (or INT32)");
    }
    auto sh = t.find("shape");
    if (sh == t.end() || !sh->is_array()) return Invalid("input `" + n + "` has no `shape`");
    if (sh->size() != 2) {
      return Invalid("input `" + n + "` has a shape of " + std::to_string(sh->size()) +
                     " dimensions; expected [batch, seq_len]");
    }
    std::vector<int64_t> s;
    for (const json& d : *sh) {
      if (!d.is_number_integer() || (d.is_number_unsigned() && d.get<uint64_t>() > INT64_MAX) ||
          d.get<int64_t>() < 1) {
        return Invalid("input `" + n + "` has a bad shape; expected [batch, seq_len], both "
                       "integers >= 1");
      }
      s.push_back(d.get<int64_t>());
    }
    const std::string shape_text = "[" + std::to_string(s[0]) + "," + std::to_string(s[1]) + "]";
    if (s[0] > limits.max_client_batch_size) {
      return ApiError{413,
                      "batch size " + std::to_string(s[0]) + " > maximum allowed batch size " +
                          std::to_string(limits.max_client_batch_size),
                      "Validation"};
    }
    if (s[1] > limits.max_input_length) {
      return Invalid("seq_len " + std::to_string(s[1]) + " is more than the maximum of " +
                     std::to_string(limits.max_input_length) + " tokens");
    }
    if (!shape.empty() && s != shape) {
      return Invalid("input `" + n + "` has shape " + shape_text + ", unlike the other inputs");
    }
    shape = s;
    auto data = t.find("data");
    if (data == t.end()) return Invalid("input `" + n + "` has no `data`");
    std::vector<int64_t> values;
    if (auto e = FlattenInts(*data, n, &values)) return e;
    if (static_cast<int64_t>(values.size()) != s[0] * s[1]) {
      return Invalid("input `" + n + "` has " + std::to_string(values.size()) +
                     " values; its shape " + shape_text + " needs " + std::to_string(s[0] * s[1]));
    }
    tensors[n] = std::move(values);
  }
  if (!tensors.count("input_ids")) return Invalid("missing input `input_ids`");
  const int64_t B = shape[0], S = shape[1];
  const auto& ids = tensors["input_ids"];
  const std::vector<int64_t>* mask = tensors.count("attention_mask") ? &tensors["attention_mask"] : nullptr;
  const std::vector<int64_t>* types = tensors.count("token_type_ids") ? &tensors["token_type_ids"] : nullptr;
  auto where = [S](size_t i) {
    std::string w(1, '[');  // appended, not "[" + ...: GCC 12 warns falsely on that
    w += std::to_string(static_cast<int64_t>(i) / S);
    w += "][";
    w += std::to_string(static_cast<int64_t>(i) % S);
    w += ']';
    return w;
  };
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= limits.vocab_size) {
      return Invalid("input_ids" + where(i) + " = " + std::to_string(ids[i]) +
                     " is outside the vocabulary [0, " + std::to_string(limits.vocab_size) + ")");
    }
    if (mask && (*mask)[i] != 0 && (*mask)[i] != 1) {
      return Invalid("attention_mask" + where(i) + " = " + std::to_string((*mask)[i]) +
                     "; values must be 0 or 1");
    }
    if (types && ((*types)[i] < 0 || (*types)[i] >= limits.type_vocab_size)) {
      return Invalid("token_type_ids" + where(i) + " = " + std::to_string((*types)[i]) +
                     " is outside [0, " + std::to_string(limits.type_vocab_size) + ")");
    }
  }
  call->outputs.clear();
  if (auto outs = j.find("outputs"); outs != j.end() && !outs->is_null()) {
    if (!outs->is_array()) return Invalid("`outputs` must be a list");
    for (const json& o : *outs) {
      auto name = o.is_object() ? o.find("name") : o.end();
      if (!o.is_object() || name == o.end() || !name->is_string()) {
        return Invalid("each entry of `outputs` needs a `name`");
      }
      const std::string n = name->get<std::string>();
      if (n != "last_hidden_state" && !(n == "pooler_output" && has_pooler)) {
        return Invalid("unknown output `" + n + "`; the model has last_hidden_state" +
                       std::string(has_pooler ? " and pooler_output" : ""));
      }
      call->outputs.push_back(n);
    }
  }
  if (call->outputs.empty()) {
    call->outputs.push_back("last_hidden_state");
    if (has_pooler) call->outputs.push_back("pooler_output");
  }
  call->batch = B;
  call->seq_len = S;
  out->inputs.assign(static_cast<size_t>(B), ServeInput{});
  for (int64_t b = 0; b < B; ++b) {
    ServeInput& in = out->inputs[static_cast<size_t>(b)];
    for (int64_t s = 0; s < S; ++s) {
      const size_t i = static_cast<size_t>(b * S + s);
      in.ids.push_back(static_cast<int32_t>(ids[i]));
      if (mask) in.mask.push_back(static_cast<int32_t>((*mask)[i]));
      if (types) in.type_ids.push_back(static_cast<int32_t>((*types)[i]));
    }
  }
  for (const std::string& o : call->outputs) {
    if (o == "last_hidden_state") out->want_hidden = true;
    if (o == "pooler_output") out->want_pooler = true;
  }
  return std::nullopt;
}

std::string InferResponse(const std::string& model_name, const InferCall& call,
                          const ServeResult& result) {
  std::string out = "{\"model_name\":" + Dump(json(model_name)) + ",\"model_version\":\"1\"";
  if (!call.id.empty()) out += ",\"id\":" + Dump(json(call.id));
  out += ",\"outputs\":[";
  bool first = true;
  for (const std::string& name : call.outputs) {
    if (!first) out += ',';
    first = false;
    const bool hidden = name == "last_hidden_state";
    json shape = hidden ? json::array({call.batch, call.seq_len, result.hidden})
                        : json::array({call.batch, result.hidden});
    out += "{\"name\":\"" + name + "\",\"datatype\":\"FP32\",\"shape\":" + shape.dump() +
           ",\"data\":[";
    const auto& rows = hidden ? result.last_hidden : result.pooler;
    bool first_value = true;
    for (const auto& row : rows) {
      for (float v : row) {
        if (!first_value) out += ',';
        first_value = false;
        AppendFloat(v, &out);
      }
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

std::string ModelMetadata(const std::string& model_name, const BertConfig& config,
                          bool has_pooler) {
  json inputs = json::array();
  for (const char* n : {"input_ids", "attention_mask", "token_type_ids"}) {
    inputs.push_back({{"name", n}, {"datatype", "INT64"}, {"shape", {-1, -1}}});
  }
  json outputs = json::array();
  outputs.push_back({{"name", "last_hidden_state"},
                     {"datatype", "FP32"},
                     {"shape", {-1, -1, config.hidden_size}}});
  if (has_pooler) {
    outputs.push_back(
        {{"name", "pooler_output"}, {"datatype", "FP32"}, {"shape", {-1, config.hidden_size}}});
  }
  return json{{"name", model_name},
              {"versions", {"1"}},
              {"platform", "tierscope_bert"},
              {"inputs", inputs},
              {"outputs", outputs}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
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
