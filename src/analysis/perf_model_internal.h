// Shared by the op-family models of perf_model (one family a file): shape helpers and
// each family's entry point. Not part of the library's interface.
#ifndef TIERSCOPE_ANALYSIS_PERF_MODEL_INTERNAL_H_
#define TIERSCOPE_ANALYSIS_PERF_MODEL_INTERNAL_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/perf_model.h"
#include "core/text.h"  // OneOf

namespace tierscope::perf_model_internal {

using Dims = std::vector<int64_t>;

double Numel(const Dims& d);
// Input i is a tensor of a known dtype.
bool IsTensor(const OpInputs& in, size_t i);
// "M=141": a parameter for OpWork::params.
std::string Fmt(const char* key, double v);
// The value of a Concrete Input ("True", "0.", "[512]", "-1"), or nullopt.
std::optional<nlohmann::json> Concrete(const OpInputs& in, size_t i);
bool ConcreteTrue(const OpInputs& in, size_t i);
// A Concrete Input that is an integer, or nullopt.
std::optional<int64_t> ConcreteInt(const OpInputs& in, size_t i);

// The entry of an op table (entries with a `name`) for `name`, or nullptr.
template <typename Entry, size_t N>
const Entry* FindOp(const Entry (&table)[N], std::string_view name) {
  for (const Entry& e : table) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

// Each family: its work, or nullopt when `name` is not one of its ops or the shapes do not fit.
std::optional<OpWork> ModelGemm(std::string_view name, const OpInputs& in);         // perf_model_gemm.cc
std::optional<OpWork> ModelGroupedGemm(std::string_view name, const OpInputs& in);  // perf_model_gemm.cc
std::optional<OpWork> ModelAttention(std::string_view name, const OpInputs& in);    // perf_model_attention.cc
std::optional<OpWork> ModelConvolution(std::string_view name, const OpInputs& in);  // perf_model_conv.cc
std::optional<OpWork> ModelNorm(std::string_view name, const OpInputs& in);         // perf_model_pointwise.cc
std::optional<OpWork> ModelElementwise(std::string_view name, const OpInputs& in);  // perf_model_pointwise.cc
std::optional<OpWork> ModelReduce(std::string_view name, const OpInputs& in);       // perf_model_pointwise.cc
std::optional<OpWork> ModelSoftmax(std::string_view name, const OpInputs& in);      // perf_model_pointwise.cc
std::optional<OpWork> ModelEmbedding(std::string_view name, const OpInputs& in);    // perf_model_pointwise.cc

// Each family's category of an op from its name alone (the ops its model covers, and
// their relatives it does not model, such as a norm's backward); "" when not its op.
std::string_view GemmCategory(std::string_view name);       // perf_model_gemm.cc
std::string_view AttentionCategory(std::string_view name);  // perf_model_attention.cc
std::string_view ConvCategory(std::string_view name);       // perf_model_conv.cc
std::string_view PointwiseCategory(std::string_view name);  // perf_model_pointwise.cc

}  // namespace tierscope::perf_model_internal

#endif  // TIERSCOPE_ANALYSIS_PERF_MODEL_INTERNAL_H_
