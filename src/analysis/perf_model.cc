// The op models: each family's FLOPs and bytes from its recorded shapes.
#include "analysis/perf_model.h"

#include <cmath>
#include <algorithm>
#include <functional>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "trace/args.h"

namespace tierscope {
namespace {

using Dims = std::vector<int64_t>;

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

// C[M, N] = A[M, K] B[K, N] (+ bias), batched B times: 2MNK FLOPs a batch, plus MN for
// the bias add; bytes: A, B and C once, and the bias (TraceLens's GEMM model).
OpWork Gemm(double b, double m, double n, double k, bool bias, double es_a, double es_b, double es_c,
            double es_bias, double bias_elems, const std::string& dtype) {
  OpWork w;
  w.category = "GEMM";
  w.matrix = true;
  w.dtype = dtype;
  w.flops = b * (2 * m * n * k + (bias ? m * n : 0));
  w.bytes = b * (m * k * es_a + k * n * es_b + m * n * es_c) + (bias ? bias_elems * es_bias : 0);
  w.params = Fmt("M", m) + " " + Fmt("N", n) + " " + Fmt("K", k) + (b != 1 ? " " + Fmt("B", b) : "") +
             (bias ? " bias" : "");
  return w;
}

std::optional<OpWork> ModelGemm(std::string_view name, const OpInputs& in) {
  const auto es = [&](size_t i) { return i < in.types.size() ? ElementBytes(in.types[i]) : 0.0; };
  if (name == "aten::mm" || name == "aten::_scaled_mm") {
    if (!IsTensor(in, 0) || !IsTensor(in, 1) || in.dims[0].size() != 2 || in.dims[1].size() != 2) return std::nullopt;
    const Dims &a = in.dims[0], &b = in.dims[1];
    if (a[1] != b[0]) return std::nullopt;
    // _scaled_mm's output is a wider type than its FP8 inputs; its bias (input 4) if any.
    const bool scaled = name == "aten::_scaled_mm";
    const double out_es = scaled ? 2 : es(0);
    const bool bias = scaled && IsTensor(in, 4);
    return Gemm(1, a[0], b[1], a[1], bias, es(0), es(1), out_es, bias ? es(4) : 0, bias ? Numel(in.dims[4]) : 0,
                in.types[0]);
  }
  if (name == "aten::addmm") {
    if (!IsTensor(in, 1) || !IsTensor(in, 2) || in.dims[1].size() != 2 || in.dims[2].size() != 2) return std::nullopt;
    const Dims &a = in.dims[1], &b = in.dims[2];
    if (a[1] != b[0]) return std::nullopt;
    const bool bias = IsTensor(in, 0);
    return Gemm(1, a[0], b[1], a[1], bias, es(1), es(2), es(1), es(0), bias ? Numel(in.dims[0]) : 0, in.types[1]);
  }
  if (name == "aten::bmm" || name == "aten::baddbmm") {
    const size_t o = name == "aten::baddbmm" ? 1 : 0;
    if (!IsTensor(in, o) || !IsTensor(in, o + 1) || in.dims[o].size() != 3 || in.dims[o + 1].size() != 3) {
      return std::nullopt;
    }
    const Dims &a = in.dims[o], &b = in.dims[o + 1];
    if (a[0] != b[0] || a[2] != b[1]) return std::nullopt;
    const bool bias = o == 1 && IsTensor(in, 0);
    return Gemm(a[0], a[1], b[2], a[2], bias, es(o), es(o + 1), es(o), es(0), bias ? Numel(in.dims[0]) : 0,
                in.types[o]);
  }
  if (name == "aten::linear" || name == "vllm::rocm_unquantized_gemm") {
    // input [..., K], weight [N, K], bias [N]: M is the product of the leading dims.
    if (!IsTensor(in, 0) || !IsTensor(in, 1) || in.dims[1].size() != 2) return std::nullopt;
    const Dims &x = in.dims[0], &w = in.dims[1];
    if (x.back() != w[1]) return std::nullopt;
    const bool bias = IsTensor(in, 2);
    return Gemm(1, Numel(x) / static_cast<double>(x.back()), w[0], w[1], bias, es(0), es(1), es(0), es(2),
                bias ? Numel(in.dims[2]) : 0, in.types[0]);
  }
  if (name == "aten::matmul") {
    // 2-d x 2-d, or batched [.., M, K] x [K, N] / [.., K, N] with equal batches.
    if (!IsTensor(in, 0) || !IsTensor(in, 1) || in.dims[0].size() < 2 || in.dims[1].size() < 2) return std::nullopt;
    const Dims &a = in.dims[0], &b = in.dims[1];
    const double m = static_cast<double>(a[a.size() - 2]), k = static_cast<double>(a.back());
    if (b[b.size() - 2] != a.back()) return std::nullopt;
    const double n = static_cast<double>(b.back());
    const double batch_a = Numel(a) / (m * k), batch_b = Numel(b) / (k * n);
    if (batch_b != 1 && batch_b != batch_a) return std::nullopt;
    if (batch_b == 1) return Gemm(1, batch_a * m, n, k, false, es(0), es(1), es(0), 0, 0, in.types[0]);
    return Gemm(batch_a, m, n, k, false, es(0), es(1), es(0), 0, 0, in.types[0]);
  }
  return std::nullopt;
}

// The value of a Concrete Input ("True", "0.", "[512]", "-1"), or nullopt.
std::optional<nlohmann::json> Concrete(const OpInputs& in, size_t i) {
  if (i >= in.concrete.size() || in.concrete[i].empty()) return std::nullopt;
  std::string text = in.concrete[i];
  if (text == "True" || text == "False") return nlohmann::json(text == "True");
  if (!text.empty() && text.back() == '.') text += "0";  // "0." is Python's float
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

bool ConcreteTrue(const OpInputs& in, size_t i) {
  const std::optional<nlohmann::json> v = Concrete(in, i);
  return v && v->is_boolean() && v->get<bool>();
}

// Attention forward: Q·Kᵀ and P·V, 2·N_Q·N_KV·d each a head (half of it when causal, for
// square attention); bytes: Q, K, V read and O written once (the flash kernels' traffic).
std::optional<OpWork> ModelSdpa(std::string_view name, const OpInputs& in) {
  const bool bhnd = name == "aten::_scaled_dot_product_flash_attention" ||
                    name == "aten::_scaled_dot_product_efficient_attention" ||
                    name == "aten::_scaled_dot_product_cudnn_attention" ||
                    name == "aten::scaled_dot_product_attention";
  const bool bnhd = name == "flash_attn::_flash_attn_forward";
  if (!bhnd && !bnhd) return std::nullopt;
  for (size_t i = 0; i < 3; ++i) {
    if (!IsTensor(in, i) || in.dims[i].size() != 4) return std::nullopt;
  }
  const Dims &q = in.dims[0], &k = in.dims[1], &v = in.dims[2];
  const size_t h = bhnd ? 1 : 2, n = bhnd ? 2 : 1;
  const double b = static_cast<double>(q[0]), hq = static_cast<double>(q[h]), nq = static_cast<double>(q[n]);
  const double hkv = static_cast<double>(k[h]), nkv = static_cast<double>(k[n]);
  const double dqk = static_cast<double>(q[3]), dv = static_cast<double>(v[3]);
  if (k[0] != q[0] || k[3] != q[3] || v[n] != k[n] || v[h] != k[h] || hkv == 0 ||
      std::fmod(hq, hkv) != 0) {  // GQA: query heads a multiple of the key heads
    return std::nullopt;
  }
  // is_causal's place: flash (q, k, v, dropout, is_causal, ...); efficient and cuDNN
  // (q, k, v, bias, log_sumexp, dropout, is_causal, ...); SDPA (q, k, v, mask, dropout,
  // is_causal, ...); flash_attn (q, k, v, dropout, scale, causal, ...).
  const size_t causal_at = name == "aten::_scaled_dot_product_flash_attention" ? 4
                           : name == "aten::scaled_dot_product_attention"      ? 5
                           : bnhd                                              ? 5
                                                                               : 6;
  const bool causal = ConcreteTrue(in, causal_at);
  if (causal && nq != nkv) return std::nullopt;  // which triangle: not in the recorded shapes
  OpWork w;
  w.category = "SDPA_fwd";
  w.matrix = true;
  w.dtype = in.types[0];
  w.flops = b * hq * (2 * nq * nkv * dqk + 2 * nq * nkv * dv) / (causal ? 2 : 1);
  w.bytes = (b * nq * hq * dqk + b * nkv * hkv * dqk + b * nkv * hkv * dv + b * nq * hq * dv) *
            ElementBytes(in.types[0]);
  w.params = Fmt("B", b) + " " + Fmt("N_Q", nq) + " " + Fmt("H_Q", hq) + " " + Fmt("N_KV", nkv) + " " +
             Fmt("H_KV", hkv) + " " + Fmt("d", dqk) + (causal ? " causal" : "");
  return w;
}

// Normalization over the last C elements (LayerNorm, RMSNorm) or per channel (GroupNorm,
// BatchNorm), TraceLens's counts: LayerNorm 5 FLOPs an element + 6 a channel, bytes the
// input and output once and six channel vectors (weight, bias, and the training-mode
// statistics its model assumes); RMSNorm 2C + 2 a row plus 1 or 2 an element.
std::optional<OpWork> ModelNorm(std::string_view name, const OpInputs& in) {
  const bool layer = name == "aten::layer_norm" || name == "aten::native_layer_norm";
  const bool rms = name == "aten::rms_norm" || name == "aten::_fused_rms_norm";
  const bool group = name == "aten::group_norm" || name == "aten::native_group_norm";
  const bool batch = name == "aten::batch_norm" || name == "aten::native_batch_norm";
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

bool OneOf(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (name == n) return true;
  }
  return false;
}

// Elementwise: a FLOP an output element (TraceLens's count, a copy included); bytes each
// tensor input read and the output written once. A scalar operand is no traffic.
std::optional<OpWork> ModelElementwise(std::string_view name, const OpInputs& in) {
  const bool binary = OneOf(name, {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_",
                                   "aten::div", "aten::div_", "aten::maximum", "aten::minimum", "aten::rsub"});
  const bool unary = OneOf(name, {"aten::copy_", "aten::neg", "aten::abs", "aten::exp", "aten::log", "aten::sqrt",
                                  "aten::rsqrt", "aten::sigmoid", "aten::tanh", "aten::relu", "aten::relu_",
                                  "aten::gelu", "aten::silu", "aten::silu_", "aten::clone"});
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
  const bool scan = OneOf(name, {"aten::cumsum", "aten::cumprod"});
  if (!scan && !OneOf(name, {"aten::sum", "aten::mean", "aten::max", "aten::min", "aten::amax", "aten::amin",
                             "aten::prod", "aten::argmax", "aten::argmin"})) {
    return std::nullopt;
  }
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
  if (!OneOf(name, {"aten::_softmax", "aten::softmax", "aten::_log_softmax", "aten::log_softmax"}) ||
      !IsTensor(in, 0)) {
    return std::nullopt;
  }
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

// Convolution forward, 1-3 spatial dims, not transposed: 2 FLOPs a multiply-add of each
// output element over its C/groups x kernel window (+1 for the bias); bytes input,
// weight, bias and output once. Each op records its arguments in its own order; a stride or
// padding the trace does not record (no Concrete Inputs) gives no number.
struct ConvArgs {
  std::string_view name;
  int bias, stride, padding, dilation, transposed, groups;  // -1: the op has none
};
constexpr ConvArgs kConvOps[] = {
    {"aten::convolution", 2, 3, 4, 5, 6, 8},   {"aten::_convolution", 2, 3, 4, 5, 6, 8},
    {"aten::conv1d", 2, 3, 4, 5, -1, 6},       {"aten::conv2d", 2, 3, 4, 5, -1, 6},
    {"aten::conv3d", 2, 3, 4, 5, -1, 6},       {"aten::cudnn_convolution", -1, 3, 2, 4, -1, 5},
    {"aten::miopen_convolution", 2, 4, 3, 5, -1, 6},
};

std::optional<OpWork> ModelConvolution(std::string_view name, const OpInputs& in) {
  const ConvArgs* op = nullptr;
  for (const ConvArgs& c : kConvOps) {
    if (c.name == name) op = &c;
  }
  if (op == nullptr || !IsTensor(in, 0) || !IsTensor(in, 1)) return std::nullopt;
  const Dims &x = in.dims[0], &wt = in.dims[1];
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
  const auto stride = list(op->stride), padding = list(op->padding), dilation = list(op->dilation);
  if (!stride || !padding || !dilation) return std::nullopt;
  if (op->transposed >= 0 && ConcreteTrue(in, static_cast<size_t>(op->transposed))) return std::nullopt;
  const std::optional<nlohmann::json> g = Concrete(in, static_cast<size_t>(op->groups));
  if (!g || !g->is_number_integer() || g->get<int64_t>() < 1) return std::nullopt;
  const double groups = static_cast<double>(g->get<int64_t>());
  double out_spatial = 1, window = 1;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t k = wt[d + 2], st = (*stride)[d], p = (*padding)[d], dl = (*dilation)[d];
    if (st < 1 || dl < 1 || p < 0) return std::nullopt;
    const int64_t o = (x[d + 2] + 2 * p - dl * (k - 1) - 1) / st + 1;
    if (o < 1) return std::nullopt;
    out_spatial *= static_cast<double>(o);
    window *= static_cast<double>(k);
  }
  const double batch = static_cast<double>(x[0]), out_ch = static_cast<double>(wt[0]);
  const double in_per_group = static_cast<double>(wt[1]);
  if (std::fabs(in_per_group * groups - static_cast<double>(x[1])) > 0.5) return std::nullopt;
  const bool bias = op->bias >= 0 && IsTensor(in, static_cast<size_t>(op->bias));
  const double outputs = batch * out_ch * out_spatial, es = ElementBytes(in.types[0]);
  OpWork w;
  w.category = "CONV_fwd";
  w.matrix = true;
  w.dtype = in.types[0];
  w.flops = outputs * (2 * in_per_group * window + (bias ? 1 : 0));
  w.bytes = (Numel(x) + Numel(wt) + (bias ? out_ch : 0) + outputs) * es;
  w.params = Fmt("N", batch) + " " + Fmt("C", static_cast<double>(x[1])) + " " + Fmt("K", out_ch) + " " +
             Fmt("window", window) + " " + Fmt("out", out_spatial) + (groups != 1 ? " " + Fmt("groups", groups) : "");
  return w;
}

}  // namespace

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
  for (const auto& model : {ModelGemm, ModelSdpa, ModelNorm, ModelElementwise, ModelReduce, ModelSoftmax,
                            ModelEmbedding, ModelConvolution}) {
    if (std::optional<OpWork> w = model(name, in)) return w;
  }
  return std::nullopt;
}

}  // namespace tierscope
