// The op models' shared parts: reading an event's inputs, element sizes, and the dispatch
// to each family (perf_model_{gemm,attention,conv,pointwise}.cc).
#include "analysis/perf_model.h"

#include <cstdio>

#include "analysis/perf_model_internal.h"
#include "trace/args.h"

namespace tierscope {
namespace perf_model_internal {

double Numel(const Dims& d) {
  double n = 1;
  for (int64_t v : d) n *= static_cast<double>(v);
  return n;
}

bool IsTensor(const OpInputs& in, size_t i) {
  return i < in.dims.size() && !in.dims[i].empty() && i < in.types.size() && ElementBytes(in.types[i]) > 0;
}

std::string Fmt(const char* key, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s=%.0f", key, v);
  return buf;
}

std::optional<nlohmann::json> Concrete(const OpInputs& in, size_t i) {
  if (i >= in.concrete.size() || in.concrete[i].empty()) return std::nullopt;
  std::string text = in.concrete[i];
  if (text == "True" || text == "False") return nlohmann::json(text == "True");
  if (!text.empty() && text.back() == '.') text += "0";  // "0." is Python's float
  if (text.starts_with('[')) {  // a list of bools as Python writes it: "[True, False]"
    for (const auto& [py, js] : {std::pair<std::string_view, std::string_view>{"True", "true"}, {"False", "false"}}) {
      for (size_t p = text.find(py); p != std::string::npos; p = text.find(py, p)) text.replace(p, py.size(), js);
    }
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

bool ConcreteTrue(const OpInputs& in, size_t i) {
  const std::optional<nlohmann::json> v = Concrete(in, i);
  return v && v->is_boolean() && v->get<bool>();
}

std::optional<int64_t> ConcreteInt(const OpInputs& in, size_t i) {
  const std::optional<nlohmann::json> v = Concrete(in, i);
  if (!v || !v->is_number_integer()) return std::nullopt;
  return v->get<int64_t>();
}

}  // namespace perf_model_internal

using namespace perf_model_internal;  // NOLINT: this file's own helpers

double ElementBytes(std::string_view t) {
  if (t == "float" || t == "int" || t == "unsigned int" || t == "c10::complex<float>/2") return 4;
  if (t == "c10::BFloat16" || t == "c10::Half" || t == "short") return 2;
  if (t == "double" || t == "long int" || t == "long" || t == "int64_t" || t == "long long") return 8;
  if (t == "bool" || t == "unsigned char" || t == "signed char" || t == "char" || t == "c10::qint8" ||
      t == "c10::quint8" || t.starts_with("c10::Float8_")) {
    return 1;
  }
  return 0;
}

std::optional<OpInputs> ReadOpInputs(std::string_view args) {
  const std::string_view dims_text = ArgValue(args, "Input Dims");
  if (dims_text.empty()) return std::nullopt;
  const nlohmann::json dims = nlohmann::json::parse(dims_text, nullptr, false);
  if (!dims.is_array()) return std::nullopt;
  OpInputs in;
  for (const auto& d : dims) {
    Dims shape;
    if (!d.is_array()) return std::nullopt;
    for (const auto& v : d) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t{1} << 40)) return std::nullopt;
      shape.push_back(v.get<int64_t>());
    }
    in.dims.push_back(std::move(shape));
  }
  for (const char* key : {"Input type", "Concrete Inputs"}) {
    const nlohmann::json list = nlohmann::json::parse(ArgValue(args, key), nullptr, false);
    std::vector<std::string>& out = key[0] == 'I' ? in.types : in.concrete;
    if (list.is_array()) {
      for (const auto& v : list) out.push_back(v.is_string() ? v.get<std::string>() : "");
    }
    out.resize(in.dims.size());
  }
  return in;
}

std::optional<OpWork> ModelOp(std::string_view name, const OpInputs& in) {
  for (const auto& model : {ModelGemm, ModelGroupedGemm, ModelAttention, ModelNorm, ModelElementwise, ModelReduce,
                            ModelSoftmax, ModelEmbedding, ModelConvolution}) {
    if (std::optional<OpWork> w = model(name, in)) return w;
  }
  return std::nullopt;
}

std::string_view OpCategory(std::string_view name) {
  for (const auto& family : {GemmCategory, AttentionCategory, ConvCategory, PointwiseCategory}) {
    if (const std::string_view c = family(name); !c.empty()) return c;
  }
  return {};
}

}  // namespace tierscope
