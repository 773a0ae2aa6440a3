// GEMM models: the mm/addmm/bmm/baddbmm/matmul/linear family, FP8 _scaled_mm, and
// grouped GEMMs (aten::_grouped_mm, _scaled_grouped_mm: MoE experts).
#include "analysis/perf_model_internal.h"

namespace tierscope::perf_model_internal {
namespace {

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

}  // namespace

std::string_view GemmCategory(std::string_view name) {
  return OneOf(name, {"aten::mm", "aten::_scaled_mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear",
                      "vllm::rocm_unquantized_gemm", "aten::matmul", "aten::_grouped_mm", "aten::_scaled_grouped_mm"})
             ? "GEMM"
             : "";
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

// Grouped GEMMs (MoE experts), _grouped_mm(a, b, offs, ...) and _scaled_grouped_mm(a, b,
// scale_a, scale_b, offs, ...): a [M_total, K] x b [G, K, N] (tokens split among G experts by
// offs), a [G, M, K] x b [G, K, N], or a [M, K_total] x b [K_total, N] (K split, G outputs).
// FLOPs 2·M·N·K over the whole problem; bytes: a, every group's b and the output once.
std::optional<OpWork> ModelGroupedGemm(std::string_view name, const OpInputs& in) {
  const bool scaled = name == "aten::_scaled_grouped_mm";
  if (!scaled && name != "aten::_grouped_mm") return std::nullopt;
  if (!IsTensor(in, 0) || !IsTensor(in, 1)) return std::nullopt;
  const Dims &a = in.dims[0], &b = in.dims[1];
  const size_t offs_at = scaled ? 4 : 2;
  const double es_a = ElementBytes(in.types[0]), es_b = ElementBytes(in.types[1]), es_out = scaled ? 2 : es_a;
  double groups = 0, m = 0, n = 0, k = 0, out = 0;
  if (a.size() == 2 && b.size() == 3 && a[1] == b[1]) {
    groups = static_cast<double>(b[0]), m = static_cast<double>(a[0]), k = static_cast<double>(a[1]);
    n = static_cast<double>(b[2]), out = m * n;
  } else if (a.size() == 3 && b.size() == 3 && a[0] == b[0] && a[2] == b[1]) {
    groups = static_cast<double>(a[0]), m = static_cast<double>(a[1]), k = static_cast<double>(a[2]);
    n = static_cast<double>(b[2]), out = groups * m * n;
    m *= groups;  // the whole problem's rows
  } else if (a.size() == 2 && b.size() == 2 && a[1] == b[0] && IsTensor(in, offs_at) &&
             in.dims[offs_at].size() == 1) {
    groups = static_cast<double>(in.dims[offs_at][0]), m = static_cast<double>(a[0]);
    k = static_cast<double>(a[1]), n = static_cast<double>(b[1]), out = groups * m * n;
  } else {
    return std::nullopt;  // 3-d x 2-d, or shapes that do not fit
  }
  if (groups < 1) return std::nullopt;
  OpWork w;
  w.category = "GEMM";
  w.matrix = true;
  w.dtype = in.types[0];
  w.flops = 2 * m * n * k;
  w.bytes = Numel(a) * es_a + Numel(b) * es_b + out * es_out;
  w.params = "grouped " + Fmt("G", groups) + " " + Fmt("M", m) + " " + Fmt("N", n) + " " + Fmt("K", k);
  return w;
}

}  // namespace tierscope::perf_model_internal
