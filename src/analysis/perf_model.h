// Performance models from shapes: the FLOPs and bytes of a PyTorch operator from the
// "Input Dims", "Input type" and "Concrete Inputs" its Kineto event records — GEMMs
// (mm, addmm, bmm, baddbmm, matmul, linear, _scaled_mm, grouped _grouped_mm), attention
// forward and backward (the SDPA family, flash_attn, causal, GQA, varlen where the lengths
// are determined), convolution forward and backward, Layer/RMS/Group/BatchNorm, softmax,
// embedding, and elementwise and reduction ops. One definition of each op's work, used by every report
// (op_roofline, roofline_sum); where it differs from AMD TraceLens's, README says how.
#ifndef TIERSCOPE_ANALYSIS_PERF_MODEL_H_
#define TIERSCOPE_ANALYSIS_PERF_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tierscope {

// An operator's recorded inputs; a non-tensor input has empty dims.
struct OpInputs {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> types;     // "c10::BFloat16", "float", "Scalar", ...
  std::vector<std::string> concrete;  // "Concrete Inputs": a scalar's value as text, else ""
};

// The inputs from an event's args; nullopt when it has no well-formed "Input Dims".
std::optional<OpInputs> ReadOpInputs(std::string_view args);

// Bytes of one element of a Kineto dtype name; 0 when unknown.
double ElementBytes(std::string_view dtype);

struct OpWork {
  std::string category;  // GEMM, SDPA_fwd/_bwd, CONV_fwd/_bwd, NORM_fwd, softmax, embedding, elementwise, reduce
  double flops = 0;
  double bytes = 0;
  std::string dtype;    // the compute dtype (its matrix peak for matrix work)
  bool matrix = false;  // GEMM and attention: the dtype's matrix peak; else the vector one
  std::string params;   // the model's parameters, one line ("M=141 N=512 K=512 bias")
};

// The work of operator `name` on `in`; nullopt when no model covers it (or its shapes do
// not fit the op: a malformed trace gets no number rather than a wrong one).
std::optional<OpWork> ModelOp(std::string_view name, const OpInputs& in);

// The category of operator `name` from its name alone, as TraceLens settles it: the
// family ModelOp would give it (GEMM, SDPA_fwd/_bwd, CONV_fwd/_bwd, NORM_fwd/_bwd,
// softmax, embedding, elementwise, reduce), for an op whose shapes were not recorded; ""
// when the name is of no family.
std::string_view OpCategory(std::string_view name);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_PERF_MODEL_H_
