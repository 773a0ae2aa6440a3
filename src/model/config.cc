// config.json parsing with Hugging Face BertConfig defaults.
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/paths.h"
#include "tierscope/engine.h"

namespace tierscope {
namespace {

using nlohmann::json;

Status ReadInt(const json& j, const char* key, const std::string& src, int64_t min_value,
               int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return OkStatus();
  int64_t v = 0;
  if (!JsonWholeNumber(*it, &v)) {
    return InvalidArgument(src + ": field '" + key + "' must be a whole number, got " + JsonExcerpt(*it) + ", which " +
                           NotWholeBecause(*it));
  }
  if (v < min_value) {
    return InvalidArgument(src + ": field '" + key + "' must be >= " + std::to_string(min_value) +
                           ", got " + std::to_string(v));
  }
  *out = v;
  return OkStatus();
}

Status ReadString(const json& j, const char* key, const std::string& src, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return OkStatus();
  if (!it->is_string()) {
    return InvalidArgument(src + ": field '" + key + "' must be a string, got " + JsonExcerpt(*it));
  }
  *out = it->get<std::string>();
  return OkStatus();
}

}  // namespace

StatusOr<BertConfig> ParseBertConfig(const std::string& text, const std::string& src) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(src + ": not valid JSON");
  if (!j.is_object()) return InvalidArgument(src + ": expected a JSON object");
  BertConfig c;
  TS_RETURN_IF_ERROR(ReadString(j, "model_type", src, &c.model_type));
  if (c.model_type != "bert") {
    return Unimplemented(src + ": model_type '" + c.model_type +
                         "' is not supported (supported: bert)");
  }
  TS_RETURN_IF_ERROR(ReadInt(j, "vocab_size", src, 1, &c.vocab_size));
  TS_RETURN_IF_ERROR(ReadInt(j, "hidden_size", src, 1, &c.hidden_size));
  TS_RETURN_IF_ERROR(ReadInt(j, "num_hidden_layers", src, 0, &c.num_hidden_layers));
  TS_RETURN_IF_ERROR(ReadInt(j, "num_attention_heads", src, 1, &c.num_attention_heads));
  TS_RETURN_IF_ERROR(ReadInt(j, "intermediate_size", src, 1, &c.intermediate_size));
  TS_RETURN_IF_ERROR(ReadInt(j, "max_position_embeddings", src, 1, &c.max_position_embeddings));
  TS_RETURN_IF_ERROR(ReadInt(j, "type_vocab_size", src, 1, &c.type_vocab_size));
  TS_RETURN_IF_ERROR(ReadInt(j, "pad_token_id", src, 0, &c.pad_token_id));
  TS_RETURN_IF_ERROR(ReadString(j, "hidden_act", src, &c.hidden_act));
  TS_RETURN_IF_ERROR(ReadString(j, "position_embedding_type", src, &c.position_embedding_type));
  if (auto it = j.find("layer_norm_eps"); it != j.end() && !it->is_null()) {
    if (!it->is_number()) {
      return InvalidArgument(src + ": field 'layer_norm_eps' must be a number, got " + JsonExcerpt(*it));
    }
    c.layer_norm_eps = it->get<double>();
    if (!(c.layer_norm_eps > 0)) return InvalidArgument(src + ": layer_norm_eps must be > 0");
  }
  if (c.hidden_act != "gelu") {
    return Unimplemented(src + ": hidden_act '" + c.hidden_act +
                         "' is not supported (supported: gelu, the exact erf form)");
  }
  if (c.position_embedding_type != "absolute") {
    return Unimplemented(src + ": position_embedding_type '" + c.position_embedding_type +
                         "' is not supported (supported: absolute)");
  }
  if (c.hidden_size % c.num_attention_heads != 0) {
    return InvalidArgument(src + ": hidden_size " + std::to_string(c.hidden_size) +
                           " is not a multiple of num_attention_heads " +
                           std::to_string(c.num_attention_heads));
  }
  const int64_t kLimit = int64_t{1} << 24;
  if (c.hidden_size > kLimit || c.intermediate_size > kLimit || c.vocab_size > kLimit * 8 ||
      c.max_position_embeddings > kLimit || c.num_hidden_layers > 4096 ||
      c.type_vocab_size > kLimit) {
    return InvalidArgument(src + ": a dimension is implausibly large");
  }
  return c;
}

StatusOr<BertConfig> LoadBertConfig(const std::string& path) {
  TS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseBertConfig(text, path);
}

}  // namespace tierscope
