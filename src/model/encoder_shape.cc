// config.json of any Hugging Face encoder: each field under the names the families use
// (transformers' attribute_map: DistilBERT's dim / n_layers / n_heads, T5's d_model, ...).
#include "model/encoder_shape.h"

#include <array>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/paths.h"
#include "model/bert.h"

namespace tierscope {
namespace {

using nlohmann::json;

// The first of `names` the config states: its value, or 0 when none is there.
StatusOr<int64_t> FirstInt(const json& j, std::initializer_list<const char*> names, const std::string& src) {
  for (const char* name : names) {
    const auto it = j.find(name);
    if (it == j.end() || it->is_null()) continue;
    int64_t v = 0;
    if (!JsonWholeNumber(*it, &v)) {
      return InvalidArgument(src + ": field '" + name + "' must be an integer, got " + JsonExcerpt(*it));
    }
    constexpr int64_t kLimit = int64_t{1} << 27;
    if (v < 1 || v > kLimit) {
      return InvalidArgument(src + ": field '" + name + "' is " + std::to_string(v) + ", outside 1.." +
                             std::to_string(kLimit));
    }
    return v;
  }
  return int64_t{0};
}

std::string StringField(const json& j, const char* name) {
  const auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

StatusOr<EncoderShape> ParseEncoderShape(const std::string& json_text, const std::string& source) {
  const json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(source + ": not valid JSON");
  if (!j.is_object()) return InvalidArgument(source + ": expected a JSON object");
  EncoderShape s;
  s.model_type = StringField(j, "model_type");
  if (s.model_type == "bert") {
    // BERT's own parser, with Hugging Face's defaults for the fields a config leaves out.
    if (StatusOr<BertConfig> c = ParseBertConfig(json_text, source); c.ok()) {
      s.vocab_size = c->vocab_size;
      s.hidden_size = c->hidden_size;
      s.layers = c->num_hidden_layers;
      s.heads = c->num_attention_heads;
      s.intermediate_size = c->intermediate_size;
      s.positions = c->max_position_embeddings;
      s.bert_layers = true;
      return s;
    }
  }
  TS_ASSIGN_OR_RETURN(s.vocab_size, FirstInt(j, {"vocab_size", "n_vocab"}, source));
  TS_ASSIGN_OR_RETURN(s.hidden_size, FirstInt(j, {"hidden_size", "dim", "d_model", "n_embd"}, source));
  TS_ASSIGN_OR_RETURN(s.layers, FirstInt(j, {"num_hidden_layers", "n_layers", "num_layers", "n_layer"}, source));
  TS_ASSIGN_OR_RETURN(s.heads, FirstInt(j, {"num_attention_heads", "n_heads", "num_heads", "n_head"}, source));
  TS_ASSIGN_OR_RETURN(s.intermediate_size, FirstInt(j, {"intermediate_size", "hidden_dim", "d_ff", "n_inner"}, source));
  TS_ASSIGN_OR_RETURN(s.positions, FirstInt(j, {"max_position_embeddings", "n_positions"}, source));
  const std::array<std::pair<int64_t, const char*>, 4> required = {{
      {s.vocab_size, "a vocabulary size (vocab_size)"},
      {s.hidden_size, "a hidden size (hidden_size, dim, d_model or n_embd)"},
      {s.layers, "a layer count (num_hidden_layers, n_layers, num_layers or n_layer)"},
      {s.heads, "a head count (num_attention_heads, n_heads, num_heads or n_head)"},
  }};
  for (const auto& [value, what] : required) {
    if (value == 0) return InvalidArgument(source + ": states no " + what);
  }
  if (s.hidden_size % s.heads != 0) {
    return InvalidArgument(source + ": hidden size " + std::to_string(s.hidden_size) + " is not a multiple of " +
                           std::to_string(s.heads) + " heads");
  }
  // RoBERTa's family numbers positions from pad_token_id + 1: that many fewer are usable.
  const bool roberta = s.model_type == "roberta" || s.model_type == "xlm-roberta" || s.model_type == "camembert";
  if (roberta && s.positions > 0) {
    // pad_token_id may be 0; Hugging Face's default for the family is 1.
    int64_t pad = 1;
    if (const auto it = j.find("pad_token_id"); it != j.end() && !it->is_null()) {
      if (!JsonWholeNumber(*it, &pad) || pad < 0) {
        return InvalidArgument(source + ": field 'pad_token_id' must be an integer >= 0, got " + JsonExcerpt(*it));
      }
    }
    s.positions = std::max<int64_t>(0, s.positions - pad - 1);
  }
  // Layers that are BERT's: the families that share BertLayer's structure, with GELU
  // feed-forwards and absolute positions (relative ones add work the count omits).
  const std::string act = StringField(j, s.model_type == "distilbert" ? "activation" : "hidden_act");
  const std::string pos = StringField(j, "position_embedding_type");
  s.bert_layers = (s.model_type == "bert" || roberta || s.model_type == "distilbert") && s.intermediate_size > 0 &&
                  (act.empty() || act == "gelu") && (pos.empty() || pos == "absolute");
  return s;
}

StatusOr<EncoderShape> LoadEncoderShape(const std::string& path) {
  TS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseEncoderShape(text, path);
}

double EncoderFlopsPerSample(const EncoderShape& shape, int64_t seq_len, DType t) {
  if (!shape.bert_layers) return 0;
  BertConfig c;
  c.hidden_size = shape.hidden_size;
  c.num_hidden_layers = shape.layers;
  c.num_attention_heads = shape.heads;
  c.intermediate_size = shape.intermediate_size;
  c.vocab_size = shape.vocab_size;
  const double flops = BertFlopsPerSample(c, seq_len, t);
  // DistilBERT has no token-type table: its embedding sums two lookups, one add fewer.
  return shape.model_type == "distilbert" ? flops - static_cast<double>(seq_len * shape.hidden_size) : flops;
}

}  // namespace tierscope
