// The KServe v2 (Triton) inference protocol over HTTP: infer requests with tensors as JSON
// data or in the binary tensor extension (Inference-Header-Content-Length: a JSON header,
// then each input's raw bytes), validated before anything is queued; responses with
// outputs as JSON data or binary; model metadata.
#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "serve/api.h"
#include "serve/api_util.h"

namespace tierscope {
namespace {

using nlohmann::json;

ApiError Invalid(std::string message) { return InvalidRequest(std::move(message)); }

// A client's name as an error quotes it: at most 64 bytes of it.
std::string Clipped(const std::string& name) { return name.size() <= 64 ? name : name.substr(0, 64) + "..."; }

// Flattens `data` (a flat list of integers, or a list of such lists) into `out`.
std::optional<ApiError> FlattenInts(const json& data, const std::string& name, std::vector<int64_t>* out,
                                    int depth = 0) {
  if (data.is_array()) {
    if (depth == 2) return Invalid("input `" + name + "` has data nested deeper than [batch][seq_len]");
    for (const json& v : data) {
      if (auto e = FlattenInts(v, name, out, depth + 1)) return e;
    }
    return std::nullopt;
  }
  if (data.is_number_integer()) {
    out->push_back(data.is_number_unsigned() && data.get<uint64_t>() > INT64_MAX ? INT64_MAX
                                                                                 : data.get<int64_t>());
    return std::nullopt;
  }
  return Invalid("input `" + name + "` holds " + std::string(data.type_name()) +
                 " values; its datatype is integer");
}

// Nested `data` is [batch][seq_len] as the shape says, every row seq_len values: a ragged
// or half-nested list would otherwise flatten into other rows than the client wrote.
std::optional<ApiError> CheckNesting(const json& data, const std::string& name, int64_t batch, int64_t seq_len,
                                     const std::string& shape_text) {
  if (!data.is_array() || std::none_of(data.begin(), data.end(), [](const json& v) { return v.is_array(); })) {
    return std::nullopt;  // flat: its count is checked against the shape
  }
  if (static_cast<int64_t>(data.size()) != batch) {
    return Invalid("input `" + name + "` has " + std::to_string(data.size()) + " nested rows; its shape " +
                   shape_text + " needs " + std::to_string(batch));
  }
  for (size_t i = 0; i < data.size(); ++i) {
    if (!data[i].is_array() || static_cast<int64_t>(data[i].size()) != seq_len) {
      return Invalid("input `" + name + "` row [" + std::to_string(i) + "] is " +
                     (data[i].is_array() ? "a list of " + std::to_string(data[i].size()) + " values"
                                         : std::string("not a list")) +
                     "; its shape " + shape_text + " needs rows of " + std::to_string(seq_len));
    }
  }
  return std::nullopt;
}

// A tensor parameter: absent (nullopt), or a non-negative integer / a boolean.
std::optional<ApiError> Parameter(const json& t, const char* key, const std::string& what, int64_t* out,
                                  bool* present) {
  *present = false;
  auto p = t.find("parameters");
  if (p == t.end() || p->is_null()) return std::nullopt;
  if (!p->is_object()) return Invalid(what + ": `parameters` must be an object");
  auto v = p->find(key);
  if (v == p->end() || v->is_null()) return std::nullopt;
  if (v->is_boolean()) {
    *out = v->get<bool>() ? 1 : 0;
  } else if (v->is_number_integer() && !(v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX) &&
             v->get<int64_t>() >= 0) {
    *out = v->get<int64_t>();
  } else {
    return Invalid(what + ": parameter `" + key + "` must be a non-negative integer or a boolean");
  }
  *present = true;
  return std::nullopt;
}

// The binary part of a request: each input with binary_data_size takes the next bytes.
struct BinaryCursor {
  std::string_view data;
  size_t used = 0;
};

// One input tensor: its name, shape [batch, seq_len] and values, from `data` or from the
// binary part (little-endian INT64 or INT32, exactly shape's bytes).
std::optional<ApiError> ParseInput(const json& t, const ApiLimits& limits, BinaryCursor* bin, std::string* n,
                                   std::vector<int64_t>* s, std::vector<int64_t>* values) {
  if (!t.is_object()) return Invalid("each entry of `inputs` must be an object");
  auto name = t.find("name");
  if (name == t.end() || !name->is_string()) return Invalid("an input has no `name`");
  *n = name->get<std::string>();
  if (*n != "input_ids" && *n != "attention_mask" && *n != "token_type_ids") {
    return Invalid("unknown input `" + *n + "`; the model takes input_ids, attention_mask and token_type_ids");
  }
  auto dt = t.find("datatype");
  if (dt == t.end() || !dt->is_string()) return Invalid("input `" + *n + "` has no `datatype`");
  const std::string dtype = dt->get<std::string>();
  if (dtype != "INT64" && dtype != "INT32") {
    return Invalid("input `" + *n + "` has datatype " + dtype + "; expected INT64 (or INT32)");
  }
  auto sh = t.find("shape");
  if (sh == t.end() || !sh->is_array()) return Invalid("input `" + *n + "` has no `shape`");
  if (sh->size() != 2) {
    return Invalid("input `" + *n + "` has a shape of " + std::to_string(sh->size()) +
                   " dimensions; expected [batch, seq_len]");
  }
  s->clear();
  for (const json& d : *sh) {
    if (!d.is_number_integer() || (d.is_number_unsigned() && d.get<uint64_t>() > INT64_MAX) || d.get<int64_t>() < 1) {
      return Invalid("input `" + *n + "` has a bad shape; expected [batch, seq_len], both integers >= 1");
    }
    s->push_back(d.get<int64_t>());
  }
  const std::string shape_text = "[" + std::to_string((*s)[0]) + "," + std::to_string((*s)[1]) + "]";
  if ((*s)[0] > limits.max_client_batch_size) {
    return ApiError{413,
                    "batch size " + std::to_string((*s)[0]) + " > maximum allowed batch size " +
                        std::to_string(limits.max_client_batch_size),
                    "Validation"};
  }
  if ((*s)[1] > limits.max_input_length) {
    return Invalid("seq_len " + std::to_string((*s)[1]) + " is more than the maximum of " +
                   std::to_string(limits.max_input_length) + " tokens");
  }
  const int64_t count = (*s)[0] * (*s)[1];  // both bounded above: no overflow
  int64_t bytes = 0;
  bool binary = false;
  if (auto e = Parameter(t, "binary_data_size", "input `" + *n + "`", &bytes, &binary)) return e;
  auto data = t.find("data");
  if (binary && data != t.end()) return Invalid("input `" + *n + "` has both `data` and `binary_data_size`");
  values->clear();
  if (binary) {
    const int64_t esize = dtype == "INT64" ? 8 : 4;
    if (bytes != count * esize) {
      return Invalid("input `" + *n + "` has binary_data_size " + std::to_string(bytes) + "; its shape " +
                     shape_text + " of " + dtype + " needs " + std::to_string(count * esize) + " bytes");
    }
    if (static_cast<int64_t>(bin->data.size() - bin->used) < bytes) {
      return Invalid("input `" + *n + "` needs " + std::to_string(bytes) + " bytes of binary data; the body has " +
                     std::to_string(bin->data.size() - bin->used) + " left");
    }
    static_assert(std::endian::native == std::endian::little);  // the extension's byte order
    const char* p = bin->data.data() + bin->used;
    for (int64_t i = 0; i < count; ++i) {
      if (esize == 8) {
        int64_t v;
        std::memcpy(&v, p + i * 8, 8);
        values->push_back(v);
      } else {
        int32_t v;
        std::memcpy(&v, p + i * 4, 4);
        values->push_back(v);
      }
    }
    bin->used += static_cast<size_t>(bytes);
    return std::nullopt;
  }
  if (data == t.end()) return Invalid("input `" + *n + "` has no `data` (nor a binary_data_size)");
  if (auto e = CheckNesting(*data, *n, (*s)[0], (*s)[1], shape_text)) return e;
  if (auto e = FlattenInts(*data, *n, values)) return e;
  if (static_cast<int64_t>(values->size()) != count) {
    return Invalid("input `" + *n + "` has " + std::to_string(values->size()) + " values; its shape " +
                   shape_text + " needs " + std::to_string(count));
  }
  return std::nullopt;
}

// Every id inside the vocabulary, mask values 0 or 1, token types inside their table.
std::optional<ApiError> CheckValues(const std::map<std::string, std::vector<int64_t>>& tensors, int64_t S,
                                    const ApiLimits& limits) {
  const auto& ids = tensors.at("input_ids");
  const std::vector<int64_t>* mask = tensors.count("attention_mask") ? &tensors.at("attention_mask") : nullptr;
  const std::vector<int64_t>* types = tensors.count("token_type_ids") ? &tensors.at("token_type_ids") : nullptr;
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
      return Invalid("input_ids" + where(i) + " = " + std::to_string(ids[i]) + " is outside the vocabulary [0, " +
                     std::to_string(limits.vocab_size) + ")");
    }
    if (mask && (*mask)[i] != 0 && (*mask)[i] != 1) {
      return Invalid("attention_mask" + where(i) + " = " + std::to_string((*mask)[i]) + "; values must be 0 or 1");
    }
    if (types && ((*types)[i] < 0 || (*types)[i] >= limits.type_vocab_size)) {
      return Invalid("token_type_ids" + where(i) + " = " + std::to_string((*types)[i]) + " is outside [0, " +
                     std::to_string(limits.type_vocab_size) + ")");
    }
  }
  return std::nullopt;
}

// The outputs asked for, each as JSON data or binary: per output
// parameters.binary_data, else the request's parameters.binary_data_output.
std::optional<ApiError> ParseOutputs(const json& j, bool has_pooler, InferCall* call) {
  int64_t all_binary = 0;
  bool present = false;
  if (auto e = Parameter(j, "binary_data_output", "the request", &all_binary, &present)) return e;
  call->outputs.clear();
  call->binary.clear();
  if (auto outs = j.find("outputs"); outs != j.end() && !outs->is_null()) {
    if (!outs->is_array()) return Invalid("`outputs` must be a list");
    for (const json& o : *outs) {
      auto name = o.is_object() ? o.find("name") : o.end();
      if (!o.is_object() || name == o.end() || !name->is_string()) {
        return Invalid("each entry of `outputs` needs a `name`");
      }
      const std::string n = name->get<std::string>();
      // A name given twice would carry its tensor twice: one request could multiply its
      // response without bound (1,000 copies in 31 KB of JSON gave 11 MB). Refused (400),
      // as is a name the model does not have.
      if (n != "last_hidden_state" && !(n == "pooler_output" && has_pooler)) {
        return ApiError{400, "unknown output `" + Clipped(n) + "`; the model has last_hidden_state" +
                                 std::string(has_pooler ? " and pooler_output" : "")};
      }
      if (std::find(call->outputs.begin(), call->outputs.end(), n) != call->outputs.end()) {
        return ApiError{400, "output `" + Clipped(n) + "` is requested more than once; name each output once"};
      }
      int64_t binary = all_binary;
      if (auto e = Parameter(o, "binary_data", "output `" + n + "`", &binary, &present)) return e;
      call->outputs.push_back(n);
      call->binary.push_back(binary != 0);
    }
  }
  if (call->outputs.empty()) {
    call->outputs.push_back("last_hidden_state");
    call->binary.push_back(all_binary != 0);
    if (has_pooler) {
      call->outputs.push_back("pooler_output");
      call->binary.push_back(all_binary != 0);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseInferHeaderLength(std::string_view value, size_t body_size, size_t* length) {
  *length = 0;
  if (value.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v > body_size) {
    return ApiError{400,
                    "Inference-Header-Content-Length '" + std::string(value.substr(0, 32)) +
                        "' is not a byte count within the body's " + std::to_string(body_size),
                    "Validation"};
  }
  *length = static_cast<size_t>(v);
  return std::nullopt;
}

std::optional<ApiError> ParseInferRequest(std::string_view body, size_t header_length, const ApiLimits& limits,
                                          bool has_pooler, ServeRequest* out, InferCall* call) {
  if (header_length > body.size()) {
    return ApiError{400,
                    "Inference-Header-Content-Length " + std::to_string(header_length) + " is more than the body's " +
                        std::to_string(body.size()) + " bytes",
                    "Validation"};
  }
  BinaryCursor bin{header_length > 0 ? body.substr(header_length) : std::string_view()};
  json j;
  if (auto e = ParseJsonObject(header_length > 0 ? body.substr(0, header_length) : body, &j)) return e;
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
    std::string n;
    std::vector<int64_t> s, values;
    if (auto e = ParseInput(t, limits, &bin, &n, &s, &values)) return e;
    if (tensors.count(n)) return Invalid("input `" + n + "` is given twice");
    if (!shape.empty() && s != shape) {
      return Invalid("input `" + n + "` has shape [" + std::to_string(s[0]) + "," + std::to_string(s[1]) +
                     "], unlike the other inputs");
    }
    shape = s;
    tensors[n] = std::move(values);
  }
  if (bin.used != bin.data.size()) {
    return Invalid("the body has " + std::to_string(bin.data.size() - bin.used) +
                   " bytes of binary data beyond what the inputs' binary_data_size claim");
  }
  if (!tensors.count("input_ids")) return Invalid("missing input `input_ids`");
  const int64_t B = shape[0], S = shape[1];
  if (auto e = CheckValues(tensors, S, limits)) return e;
  if (auto e = ParseOutputs(j, has_pooler, call)) return e;
  call->batch = B;
  call->seq_len = S;
  const auto& ids = tensors["input_ids"];
  const std::vector<int64_t>* mask = tensors.count("attention_mask") ? &tensors["attention_mask"] : nullptr;
  const std::vector<int64_t>* types = tensors.count("token_type_ids") ? &tensors["token_type_ids"] : nullptr;
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

std::string InferResponse(const std::string& model_name, const InferCall& call, const ServeResult& result,
                          size_t* header_length) {
  std::string out = "{\"model_name\":" + DumpJson(json(model_name)) + ",\"model_version\":\"1\"";
  if (!call.id.empty()) out += ",\"id\":" + DumpJson(json(call.id));
  out += ",\"outputs\":[";
  std::string binary;
  for (size_t k = 0; k < call.outputs.size(); ++k) {
    const std::string& name = call.outputs[k];
    if (k) out += ',';
    const bool hidden = name == "last_hidden_state";
    json shape = hidden ? json::array({call.batch, call.seq_len, result.hidden}) : json::array({call.batch, result.hidden});
    out += "{\"name\":\"" + name + "\",\"datatype\":\"FP32\",\"shape\":" + shape.dump();
    const auto& rows = hidden ? result.last_hidden : result.pooler;
    if (k < call.binary.size() && call.binary[k]) {
      // The extension: FP32 little-endian bytes after the JSON header, in output order.
      size_t bytes = 0;
      for (const auto& row : rows) {
        binary.append(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(float));
        bytes += row.size() * sizeof(float);
      }
      out += ",\"parameters\":{\"binary_data_size\":" + std::to_string(bytes) + "}}";
      continue;
    }
    out += ",\"data\":[";
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
  *header_length = binary.empty() ? 0 : out.size();
  return out + binary;
}

std::string ModelMetadata(const std::string& model_name, const BertConfig& config, bool has_pooler) {
  json inputs = json::array();
  for (const char* n : {"input_ids", "attention_mask", "token_type_ids"}) {
    inputs.push_back({{"name", n}, {"datatype", "INT64"}, {"shape", {-1, -1}}});
  }
  json outputs = json::array();
  outputs.push_back({{"name", "last_hidden_state"}, {"datatype", "FP32"}, {"shape", {-1, -1, config.hidden_size}}});
  if (has_pooler) {
    outputs.push_back({{"name", "pooler_output"}, {"datatype", "FP32"}, {"shape", {-1, config.hidden_size}}});
  }
  return DumpJson(json{{"name", model_name},
                       {"versions", {"1"}},
                       {"platform", "tierscope_bert"},
                       {"inputs", inputs},
                       {"outputs", outputs}});
}

}  // namespace tierscope
