// Memory-bound op models: Layer/RMS/Group/BatchNorm, elementwise, reductions, softmax and
// embedding lookups (bytes first; their FLOPs are TraceLens's counts).
#include <algorithm>
#include <cmath>

#include "analysis/perf_model_internal.h"

namespace tierscope::perf_model_internal {
namespace {

// The ops each model covers, by name (also their category without shapes).
constexpr std::string_view kLayerNorms[] = {"aten::layer_norm", "aten::native_layer_norm"};
constexpr std::string_view kRmsNorms[] = {"aten::rms_norm", "aten::_fused_rms_norm"};
constexpr std::string_view kGroupNorms[] = {"aten::group_norm", "aten::native_group_norm"};
// batch_norm(input, weight, bias, running_mean, running_var, training, ...): cuDNN's and
// MIOpen's record the same arguments in the same order.
constexpr std::string_view kBatchNorms[] = {"aten::batch_norm", "aten::native_batch_norm", "aten::cudnn_batch_norm",
                                            "aten::miopen_batch_norm"};
constexpr std::string_view kBinary[] = {"aten::add", "aten::add_", "aten::sub",     "aten::sub_",    "aten::mul",
                                        "aten::mul_", "aten::div", "aten::div_",     "aten::maximum", "aten::minimum",
                                        "aten::rsub"};
constexpr std::string_view kUnary[] = {"aten::copy_", "aten::neg",     "aten::abs",   "aten::exp",   "aten::log",
                                       "aten::sqrt",  "aten::rsqrt",   "aten::sigmoid", "aten::tanh", "aten::relu",
                                       "aten::relu_", "aten::gelu",    "aten::silu",  "aten::silu_", "aten::clone"};
constexpr std::string_view kReductions[] = {"aten::sum",  "aten::mean",   "aten::max",    "aten::min",   "aten::amax",
                                            "aten::amin", "aten::prod",   "aten::argmax", "aten::argmin"};
constexpr std::string_view kScans[] = {"aten::cumsum", "aten::cumprod"};
constexpr std::string_view kSoftmaxes[] = {"aten::_softmax", "aten::softmax", "aten::_log_softmax",
                                           "aten::log_softmax"};
// Relatives no model covers (backward passes, in-place and masked variants): a category only.
constexpr std::string_view kNormBackward[] = {
    "aten::native_layer_norm_backward", "aten::native_batch_norm_backward", "aten::cudnn_batch_norm_backward",
    "aten::miopen_batch_norm_backward", "aten::native_group_norm_backward", "aten::_fused_rms_norm_backward"};
constexpr std::string_view kOtherElementwise[] = {
    "aten::threshold_backward", "aten::gelu_backward", "aten::silu_backward", "aten::sigmoid_backward",
    "aten::tanh_backward",      "aten::clamp",         "aten::clamp_",        "aten::clamp_min",
    "aten::clamp_min_",         "aten::fill_",         "aten::zero_",         "aten::where",
    "aten::masked_fill",        "aten::masked_fill_",  "aten::pow",           "aten::addcmul_",
    "aten::addcdiv_",           "aten::lerp_"};
constexpr std::string_view kOtherSoftmax[] = {"aten::_softmax_backward_data", "aten::_log_softmax_backward_data"};

template <size_t N>
bool In(const std::string_view (&names)[N], std::string_view name) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace

std::string_view PointwiseCategory(std::string_view name) {
  if (In(kLayerNorms, name) || In(kRmsNorms, name) || In(kGroupNorms, name) || In(kBatchNorms, name)) {
    return "NORM_fwd";
  }
  if (In(kNormBackward, name)) return "NORM_bwd";
  if (In(kBinary, name) || In(kUnary, name) || In(kOtherElementwise, name)) return "elementwise";
  if (In(kReductions, name) || In(kScans, name)) return "reduce";
  if (In(kSoftmaxes, name) || In(kOtherSoftmax, name)) return "softmax";
  if (name == "aten::embedding" || name == "aten::index_select" || name == "aten::embedding_dense_backward") {
    return "embedding";
  }
  return "";
}

// Normalization over the last C elements (LayerNorm, RMSNorm) or per channel (GroupNorm,
// BatchNorm), TraceLens's counts: LayerNorm 5 FLOPs an element + 6 a channel, bytes the
// input and output once and six channel vectors (weight, bias, and the training-mode
// statistics its model assumes); RMSNorm 2C + 2 a row plus 1 or 2 an element.
std::optional<OpWork> ModelNorm(std::string_view name, const OpInputs& in) {
  const bool layer = In(kLayerNorms, name), rms = In(kRmsNorms, name), group = In(kGroupNorms, name);
  const bool batch = In(kBatchNorms, name);
  if (!(layer || rms || group || batch) || !IsTensor(in, 0)) return std::nullopt;
  const double es = ElementBytes(in.types[0]), n = Numel(in.dims[0]);
  double c = 0;
  if (layer || rms) {
    const std::optional<nlohmann::json> shape = Concrete(in, 1);
    if (!shape || !shape->is_array() || shape->empty()) return std::nullopt;
    c = 1;
    for (const auto& v : *shape) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) return std::nullopt;
      c *= static_cast<double>(v.get<int64_t>());
    }
  } else {
    if (in.dims[0].size() < 2) return std::nullopt;
    c = static_cast<double>(in.dims[0][1]);
  }
  if (c <= 0 || std::fmod(n, c) != 0) return std::nullopt;
  const bool affine = IsTensor(in, 2);
  OpWork w;
  w.category = "NORM_fwd";
  w.dtype = in.types[0];
  if (rms) {
    w.flops = n / c * (2 * c + 2) + n * (affine ? 2 : 1);
    w.bytes = 2 * n * es + (affine ? c * es : 0);
  } else {
    const bool training = !batch || ConcreteTrue(in, 5);
    w.flops = 6 * c + 2 * n + (training ? 3 * n : 0);
    const double vectors = 2 + (affine ? 1 : 0) + (affine && (IsTensor(in, 3) || layer) ? 1 : 0) + (training ? 2 : 0);
    w.bytes = 2 * n * es + vectors * c * es;
  }
  w.params = Fmt("elements", n) + " " + Fmt("C", c) + (affine ? " affine" : "");
  return w;
}

// Elementwise: a FLOP an output element (TraceLens's count, a copy included); bytes each
// tensor input read and the output written once. A scalar operand is no traffic.
std::optional<OpWork> ModelElementwise(std::string_view name, const OpInputs& in) {
  const bool binary = In(kBinary, name), unary = In(kUnary, name);
  if (!(binary || unary) || !IsTensor(in, 0)) return std::nullopt;
  OpWork w;
  w.dtype = in.types[0];
  const double n0 = Numel(in.dims[0]), es0 = ElementBytes(in.types[0]);
  if (unary) {
    // copy_(dst, src): the source's elements read in its dtype, written in the destination's.
    const double es_in = name == "aten::copy_" && IsTensor(in, 1) ? ElementBytes(in.types[1]) : es0;
    w.category = "elementwise";
    w.flops = n0;
    w.bytes = n0 * es_in + n0 * es0;
    w.params = Fmt("elements", n0);
    return w;
  }
  Dims a = in.dims[0], b = IsTensor(in, 1) ? in.dims[1] : Dims{};
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  Dims bb = b;
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (a[i] != bb[i] && a[i] != 1 && bb[i] != 1) return std::nullopt;
    out[i] = std::max(a[i], bb[i]);
  }
  const double n_out = Numel(out), es1 = b.empty() ? 0 : ElementBytes(in.types[1]);
  w.category = "elementwise";
  w.flops = n_out;
  w.bytes = n0 * es0 + (b.empty() ? 0 : Numel(b) * es1) + n_out * std::max(es0, es1);
  w.params = Fmt("elements", n_out);
  return w;
}

// Reductions: a FLOP an input element; bytes the input read and the output written, the
// output's size from the reduced dims in the Concrete Inputs (all of them when none).
std::optional<OpWork> ModelReduce(std::string_view name, const OpInputs& in) {
  const bool scan = In(kScans, name);
  if (!scan && !In(kReductions, name)) return std::nullopt;
  if (in.dims.empty() || in.types.empty() || ElementBytes(in.types[0]) == 0) return std::nullopt;
  const Dims& shape = in.dims[0];
  const double n = Numel(shape), es = ElementBytes(in.types[0]);
  double n_out = 1;
  if (scan) {
    n_out = n;
  } else if (const std::optional<nlohmann::json> dim = Concrete(in, 1); dim && (dim->is_array() || dim->is_number_integer())) {
    const bool keep = ConcreteTrue(in, 2);
    std::vector<bool> reduced(shape.size(), false);
    const auto mark = [&](int64_t d) {
      if (d < 0) d += static_cast<int64_t>(shape.size());
      if (d < 0 || d >= static_cast<int64_t>(shape.size())) return false;
      reduced[static_cast<size_t>(d)] = true;
      return true;
    };
    if (dim->is_number_integer()) {
      if (!mark(dim->get<int64_t>())) return std::nullopt;
    } else {
      for (const auto& d : *dim) {
        if (!d.is_number_integer() || !mark(d.get<int64_t>())) return std::nullopt;
      }
      if (dim->empty()) std::fill(reduced.begin(), reduced.end(), true);
    }
    for (size_t i = 0; i < shape.size(); ++i) n_out *= reduced[i] ? 1.0 : static_cast<double>(shape[i]);
    (void)keep;  // keepdim changes the shape, not the element count
  }
  OpWork w;
  w.category = "reduce";
  w.dtype = in.types[0];
  w.flops = n;
  w.bytes = n * es + n_out * es;
  w.params = Fmt("elements", n) + " " + Fmt("out", n_out);
  return w;
}

// Softmax: max, subtract, exp, sum and divide, 5 FLOPs an element; the input read and
// the output written once.
std::optional<OpWork> ModelSoftmax(std::string_view name, const OpInputs& in) {
  if (!In(kSoftmaxes, name) || !IsTensor(in, 0)) return std::nullopt;
  const double n = Numel(in.dims[0]), es = ElementBytes(in.types[0]);
  // _softmax(x, dim, half_to_float): a half input may come out in float.
  const double es_out = name.starts_with("aten::_") && ConcreteTrue(in, 2) ? 4 : es;
  OpWork w;
  w.category = "softmax";
  w.dtype = in.types[0];
  w.flops = 5 * n;
  w.bytes = n * es + n * es_out;
  w.params = Fmt("elements", n);
  return w;
}

// Embedding lookups: the rows gathered and written, and the indices read; no FLOPs.
std::optional<OpWork> ModelEmbedding(std::string_view name, const OpInputs& in) {
  size_t table = 0, index = 1;
  if (name == "aten::index_select") index = 2;
  else if (name != "aten::embedding") return std::nullopt;
  if (!IsTensor(in, table) || in.dims[table].size() != 2 || !IsTensor(in, index)) return std::nullopt;
  const double rows = Numel(in.dims[index]), width = static_cast<double>(in.dims[table][1]);
  const double es = ElementBytes(in.types[table]);
  OpWork w;
  w.category = "embedding";
  w.dtype = in.types[table];
  w.flops = 0;
  w.bytes = 2 * rows * width * es + rows * ElementBytes(in.types[index]);
  w.params = Fmt("rows", rows) + " " + Fmt("width", width);
  return w;
}

}  // namespace tierscope::perf_model_internal
