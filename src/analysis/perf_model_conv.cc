// Convolution models: forward and backward (data and weight gradients), 1-3 spatial dims.
#include <cmath>

#include "analysis/perf_model_internal.h"

namespace tierscope::perf_model_internal {
namespace {

// Each op records its arguments in its own order; a stride or padding the trace does not
// record (no Concrete Inputs) gives no number. Indices: -1 when the op has none.
struct ConvArgs {
  std::string_view name;
  int input, weight, bias, stride, padding, dilation, transposed, groups, output_mask;
};
constexpr ConvArgs kConvOps[] = {
    {"aten::convolution", 0, 1, 2, 3, 4, 5, 6, 8, -1},
    {"aten::_convolution", 0, 1, 2, 3, 4, 5, 6, 8, -1},
    {"aten::conv1d", 0, 1, 2, 3, 4, 5, -1, 6, -1},
    {"aten::conv2d", 0, 1, 2, 3, 4, 5, -1, 6, -1},
    {"aten::conv3d", 0, 1, 2, 3, 4, 5, -1, 6, -1},
    {"aten::cudnn_convolution", 0, 1, -1, 3, 2, 4, -1, 5, -1},
    {"aten::miopen_convolution", 0, 1, 2, 4, 3, 5, -1, 6, -1},
    // convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    // transposed, output_padding, groups, output_mask)
    {"aten::convolution_backward", 1, 2, -1, 4, 5, 6, 7, 9, 10},
};

// A convolution's geometry from its input, weight and arguments (not transposed).
struct ConvGeometry {
  double batch = 0, in_ch = 0, out_ch = 0, in_per_group = 0, groups = 1, window = 1, out_spatial = 1;
};

std::optional<ConvGeometry> Geometry(const ConvArgs& op, const OpInputs& in) {
  const size_t xi = static_cast<size_t>(op.input), wi = static_cast<size_t>(op.weight);
  if (!IsTensor(in, xi) || !IsTensor(in, wi)) return std::nullopt;
  const Dims &x = in.dims[xi], &wt = in.dims[wi];
  if (x.size() < 3 || x.size() > 5 || wt.size() != x.size()) return std::nullopt;
  const size_t spatial = x.size() - 2;
  const auto list = [&](int i) -> std::optional<std::vector<int64_t>> {
    std::optional<nlohmann::json> v = Concrete(in, static_cast<size_t>(i));
    if (!v) return std::nullopt;  // not recorded: no guess
    if (v->is_number_integer()) return std::vector<int64_t>(spatial, v->get<int64_t>());
    if (!v->is_array() || (v->size() != spatial && v->size() != 1)) return std::nullopt;  // "same", ...
    std::vector<int64_t> out(spatial);
    for (size_t d = 0; d < spatial; ++d) {
      const auto& e = (*v)[v->size() == 1 ? 0 : d];
      if (!e.is_number_integer()) return std::nullopt;
      out[d] = e.get<int64_t>();
    }
    return out;
  };
  const auto stride = list(op.stride), padding = list(op.padding), dilation = list(op.dilation);
  if (!stride || !padding || !dilation) return std::nullopt;
  if (op.transposed >= 0 && ConcreteTrue(in, static_cast<size_t>(op.transposed))) return std::nullopt;
  const std::optional<int64_t> g = ConcreteInt(in, static_cast<size_t>(op.groups));
  if (!g || *g < 1) return std::nullopt;
  ConvGeometry c;
  c.groups = static_cast<double>(*g);
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t k = wt[d + 2], st = (*stride)[d], p = (*padding)[d], dl = (*dilation)[d];
    if (st < 1 || dl < 1 || p < 0) return std::nullopt;
    const int64_t o = (x[d + 2] + 2 * p - dl * (k - 1) - 1) / st + 1;
    if (o < 1) return std::nullopt;
    c.out_spatial *= static_cast<double>(o);
    c.window *= static_cast<double>(k);
  }
  c.batch = static_cast<double>(x[0]), c.in_ch = static_cast<double>(x[1]);
  c.out_ch = static_cast<double>(wt[0]), c.in_per_group = static_cast<double>(wt[1]);
  if (std::fabs(c.in_per_group * c.groups - c.in_ch) > 0.5) return std::nullopt;
  return c;
}

std::string Params(const ConvGeometry& c) {
  return Fmt("N", c.batch) + " " + Fmt("C", c.in_ch) + " " + Fmt("K", c.out_ch) + " " + Fmt("window", c.window) +
         " " + Fmt("out", c.out_spatial) + (c.groups != 1 ? " " + Fmt("groups", c.groups) : "");
}

}  // namespace

std::string_view ConvCategory(std::string_view name) {
  const ConvArgs* op = FindOp(kConvOps, name);
  if (op == nullptr) return "";
  return op->output_mask >= 0 ? "CONV_bwd" : "CONV_fwd";
}

// Forward: 2 FLOPs a multiply-add of each output element over its C/groups x kernel window
// (+1 for the bias); bytes input, weight, bias and output once. Backward: each gradient
// output_mask asks for costs the forward's multiply-adds again (the input's from the output
// gradient and the weight; the weight's from the output gradient and the input), the
// bias's one add an output element; bytes: the output gradient, and what each gradient reads
// and writes, once.
std::optional<OpWork> ModelConvolution(std::string_view name, const OpInputs& in) {
  const ConvArgs* op = FindOp(kConvOps, name);
  if (op == nullptr) return std::nullopt;
  const std::optional<ConvGeometry> c = Geometry(*op, in);
  if (!c) return std::nullopt;
  const size_t xi = static_cast<size_t>(op->input), wi = static_cast<size_t>(op->weight);
  const double es = ElementBytes(in.types[xi]), x_elems = Numel(in.dims[xi]), w_elems = Numel(in.dims[wi]);
  const double outputs = c->batch * c->out_ch * c->out_spatial, macs = outputs * c->in_per_group * c->window;
  OpWork w;
  w.matrix = true;
  w.dtype = in.types[xi];
  w.params = Params(*c);
  if (op->output_mask < 0) {
    const bool bias = op->bias >= 0 && IsTensor(in, static_cast<size_t>(op->bias));
    w.category = "CONV_fwd";
    w.flops = 2 * macs + (bias ? outputs : 0);
    w.bytes = (x_elems + w_elems + (bias ? c->out_ch : 0) + outputs) * es;
    return w;
  }
  const std::optional<nlohmann::json> mask = Concrete(in, static_cast<size_t>(op->output_mask));
  if (!mask || !mask->is_array() || mask->size() != 3) return std::nullopt;
  bool want[3];
  for (size_t i = 0; i < 3; ++i) {
    if (!(*mask)[i].is_boolean()) return std::nullopt;
    want[i] = (*mask)[i].get<bool>();
  }
  if (!want[0] && !want[1] && !want[2]) return std::nullopt;
  w.category = "CONV_bwd";
  w.flops = (want[0] ? 2 * macs : 0) + (want[1] ? 2 * macs : 0) + (want[2] ? outputs : 0);
  w.bytes = (outputs + (want[0] ? w_elems + x_elems : 0) + (want[1] ? x_elems + w_elems : 0) +
             (want[2] ? c->out_ch : 0)) * es;
  w.params += std::string(" grad") + (want[0] ? " input" : "") + (want[1] ? " weight" : "") + (want[2] ? " bias" : "");
  return w;
}

}  // namespace tierscope::perf_model_internal
