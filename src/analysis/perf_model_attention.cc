// Attention models: the SDPA family forward and backward (flash, efficient, cuDNN, CPU
// flash, flash_attn), causal, GQA, and variable-length batches where their lengths are known.
#include <cmath>

#include "analysis/perf_model_internal.h"

namespace tierscope::perf_model_internal {
namespace {

enum class Layout {
  kBHND,  // [batch, heads, tokens, d]: the SDPA ops
  kBNHD,  // [batch, tokens, heads, d]: flash_attn and the _flash/_efficient_attention ops
  kTHD,   // [tokens of all sequences, heads, d]: variable-length batches
};

// Where each op records what its work depends on (native_functions.yaml's argument order;
// flash_attn's Python signatures). -1: the op has no such argument.
struct AttentionOp {
  std::string_view name;
  int q;          // the query (1 in backward: the output gradient comes first)
  Layout layout;  // the layout of a 4-d query; a 3-d one is kTHD
  int causal;     // a bool is_causal / causal
  int mask_type;  // xformers' custom_mask_type: 0 none, 1 and 2 causal
  int cu_q, cu_k, max_q, max_k;  // a variable-length batch's cumulative lengths and maxima
  bool backward;
  int window;  // a sliding window's (left) size: >= 0 is local attention, not modelled
};

constexpr AttentionOp kOps[] = {
    {"aten::scaled_dot_product_attention", 0, Layout::kBHND, 5, -1, -1, -1, -1, -1, false, -1},
    {"aten::_scaled_dot_product_flash_attention", 0, Layout::kBHND, 4, -1, -1, -1, -1, -1, false, -1},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", 0, Layout::kBHND, 4, -1, -1, -1, -1, -1, false, -1},
    {"aten::_scaled_dot_product_efficient_attention", 0, Layout::kBHND, 6, -1, -1, -1, -1, -1, false, -1},
    {"aten::_scaled_dot_product_cudnn_attention", 0, Layout::kBHND, 6, -1, -1, -1, -1, -1, false, -1},
    {"aten::_flash_attention_forward", 0, Layout::kBNHD, 8, -1, 3, 4, 5, 6, false, 11},
    {"aten::_efficient_attention_forward", 0, Layout::kBNHD, -1, 9, 4, 5, 6, 7, false, 13},
    {"flash_attn::_flash_attn_forward", 0, Layout::kBNHD, 5, -1, -1, -1, -1, -1, false, 6},
    {"flash_attn::_flash_attn_varlen_forward", 0, Layout::kTHD, 9, -1, 3, 4, 5, 6, false, 10},
    {"aten::_scaled_dot_product_flash_attention_backward", 1, Layout::kBHND, 11, -1, -1, -1, -1, -1, true, -1},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", 1, Layout::kBHND, 7, -1, -1, -1, -1, -1, true, -1},
    {"aten::_scaled_dot_product_efficient_attention_backward", 1, Layout::kBHND, 11, -1, -1, -1, -1, -1, true, -1},
    {"aten::_scaled_dot_product_cudnn_attention_backward", 1, Layout::kBHND, 14, -1, -1, -1, -1, -1, true, -1},
    {"aten::_flash_attention_backward", 1, Layout::kBNHD, 11, -1, 6, 7, 8, 9, true, 15},
    {"aten::_efficient_attention_backward", 1, Layout::kBNHD, -1, 14, 6, 7, 8, 9, true, 18},
    {"flash_attn::_flash_attn_backward", 1, Layout::kBNHD, 11, -1, -1, -1, -1, -1, true, 12},
    {"flash_attn::_flash_attn_varlen_backward", 1, Layout::kTHD, 15, -1, 9, 10, 11, 12, true, 16},
};

struct Shape {
  double batch = 0, heads = 0, tokens = 0, d = 0;  // tokens: of one sequence
};

// One of q, k, v as (batch, heads, tokens a sequence, d); nullopt if its rank does not fit.
std::optional<Shape> ReadShape(const Dims& t, Layout layout) {
  if (t.size() == 4 && layout != Layout::kTHD) {
    const bool bhnd = layout == Layout::kBHND;
    return Shape{static_cast<double>(t[0]), static_cast<double>(t[bhnd ? 1 : 2]),
                 static_cast<double>(t[bhnd ? 2 : 1]), static_cast<double>(t[3])};
  }
  if (t.size() == 3 && layout != Layout::kBHND) {
    return Shape{1, static_cast<double>(t[1]), static_cast<double>(t[0]), static_cast<double>(t[2])};
  }
  return std::nullopt;
}

// A variable-length batch (cumulative lengths recorded): the per-sequence lengths, when the
// shapes determine them — one sequence, or every sequence at the maximum; else nullopt
// (the lengths themselves are not in the trace, and a guess would be a wrong number).
bool SplitVarlen(const OpInputs& in, const AttentionOp& op, Shape& q, Shape& k, double& sequences) {
  sequences = 1;
  if (op.cu_q < 0 || !IsTensor(in, static_cast<size_t>(op.cu_q))) return true;  // not varlen
  const Dims& cu = in.dims[static_cast<size_t>(op.cu_q)];
  if (cu.size() != 1 || cu[0] < 2 || q.batch != 1 || k.batch != 1) return false;
  sequences = static_cast<double>(cu[0] - 1);
  if (sequences == 1) return true;
  const std::optional<int64_t> max_q = ConcreteInt(in, static_cast<size_t>(op.max_q));
  const std::optional<int64_t> max_k = ConcreteInt(in, static_cast<size_t>(op.max_k));
  if (!max_q || !max_k || *max_q < 1 || *max_k < 1) return false;
  const double mq = static_cast<double>(*max_q), mk = static_cast<double>(*max_k);
  if (q.tokens != sequences * mq || k.tokens != sequences * mk) return false;
  q.batch = k.batch = sequences;
  q.tokens = mq;
  k.tokens = mk;
  return true;
}

}  // namespace

std::string_view AttentionCategory(std::string_view name) {
  const AttentionOp* op = FindOp(kOps, name);
  if (op == nullptr) return "";
  return op->backward ? "SDPA_bwd" : "SDPA_fwd";
}

// Forward: Q·Kᵀ and P·V, 2·N_Q·N_KV·d each a head (half when causal, for square attention);
// bytes: Q, K, V read and O written once (the flash kernels' traffic). Backward:
// torch.utils.flop_counter's count, five products (the scores recomputed, dP, dV, dQ, dK:
// 2.5x the forward when d_qk = d_v); bytes: Q, K, V, O and dO read, dQ, dK, dV written.
std::optional<OpWork> ModelAttention(std::string_view name, const OpInputs& in) {
  const AttentionOp* op = FindOp(kOps, name);
  if (op == nullptr) return std::nullopt;
  const size_t qi = static_cast<size_t>(op->q);
  for (size_t i = qi; i < qi + 3; ++i) {
    if (!IsTensor(in, i)) return std::nullopt;
  }
  std::optional<Shape> q = ReadShape(in.dims[qi], op->layout), k = ReadShape(in.dims[qi + 1], op->layout),
                       v = ReadShape(in.dims[qi + 2], op->layout);
  if (!q || !k || !v || in.dims[qi].size() != in.dims[qi + 1].size() || in.dims[qi].size() != in.dims[qi + 2].size()) {
    return std::nullopt;
  }
  if (k->batch != q->batch || k->d != q->d || v->tokens != k->tokens || v->heads != k->heads || v->batch != k->batch ||
      k->heads == 0 || std::fmod(q->heads, k->heads) != 0) {  // GQA: query heads a multiple of the key heads
    return std::nullopt;
  }
  double sequences = 1;
  if (!SplitVarlen(in, *op, *q, *k, sequences)) return std::nullopt;
  // Causality and a sliding window change the work: unrecorded (no Concrete Inputs, an
  // older schema's order), they give no number rather than full attention's.
  bool causal = false;
  if (op->causal >= 0) {
    const std::optional<nlohmann::json> c = Concrete(in, static_cast<size_t>(op->causal));
    if (!c || !c->is_boolean()) return std::nullopt;
    causal = c->get<bool>();
  } else {
    const std::optional<int64_t> mask = ConcreteInt(in, static_cast<size_t>(op->mask_type));
    if (!mask) return std::nullopt;
    causal = *mask != 0;
  }
  if (op->window >= 0 && ConcreteInt(in, static_cast<size_t>(op->window)).value_or(-1) >= 0) return std::nullopt;
  if (causal && q->tokens != k->tokens) return std::nullopt;  // which triangle: not in the recorded shapes
  const double b = q->batch, hq = q->heads, nq = q->tokens, hkv = k->heads, nkv = k->tokens, dqk = q->d, dv = v->d;
  const double forward = b * hq * (2 * nq * nkv * dqk + 2 * nq * nkv * dv) / (causal ? 2 : 1);
  const double backward = b * hq * 2 * nq * nkv * (3 * dqk + 2 * dv) / (causal ? 2 : 1);
  const double q_elems = b * nq * hq * dqk, k_elems = b * nkv * hkv * dqk, v_elems = b * nkv * hkv * dv,
               o_elems = b * nq * hq * dv;
  OpWork w;
  w.category = op->backward ? "SDPA_bwd" : "SDPA_fwd";
  w.matrix = true;
  w.dtype = in.types[qi];
  w.flops = op->backward ? backward : forward;
  w.bytes = (op->backward ? 2 * (q_elems + k_elems + v_elems) + 2 * o_elems : q_elems + k_elems + v_elems + o_elems) *
            ElementBytes(in.types[qi]);
  w.params = Fmt("B", b) + " " + Fmt("N_Q", nq) + " " + Fmt("H_Q", hq) + " " + Fmt("N_KV", nkv) + " " +
             Fmt("H_KV", hkv) + " " + Fmt("d", dqk) + (causal ? " causal" : "") +
             (op->cu_q >= 0 && IsTensor(in, static_cast<size_t>(op->cu_q)) ? " varlen" : "");
  return w;
}

}  // namespace tierscope::perf_model_internal
