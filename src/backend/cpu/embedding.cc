// CPU embedding lookup: word + position + token-type rows summed per token (the tables in
// the output's dtype, or F16/BF16 under an FP32 output: a 16-bit run on the CPU).
#include <algorithm>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/vec_math.h"

namespace tierscope {
namespace {
constexpr int64_t kTokensPerTask = 32;
// Word rows are fetched this many tokens ahead: each is a random row of a table far larger
// than the caches, and the loop would otherwise wait on every one in turn.
constexpr int64_t kPrefetchTokens = 8;

// out = (w + p) + t over n floats: the sum the 16-bit tables' way makes, in that order.
void SumRows(const float* w, const float* p, const float* t, int64_t n, float* out) {
  int64_t h = 0;
#ifdef TIERSCOPE_VEC_AVX2
  for (; h + 8 <= n; h += 8) {
    const __m256 wp = _mm256_add_ps(_mm256_loadu_ps(w + h), _mm256_loadu_ps(p + h));
    _mm256_storeu_ps(out + h, _mm256_add_ps(wp, _mm256_loadu_ps(t + h)));
  }
#endif
  for (; h < n; ++h) out[h] = (w[h] + p[h]) + t[h];
}

// SumRows over BF16 rows, each widened exactly (its bits on top of a 32-bit lane) as
// ToFloat widens them: FP32 sums, the same.
void SumRows(const uint16_t* w, const uint16_t* p, const uint16_t* t, int64_t n, float* out) {
  int64_t h = 0;
#ifdef TIERSCOPE_VEC_AVX2
  const auto widen = [](const uint16_t* x) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  };
  for (; h + 8 <= n; h += 8) {
    _mm256_storeu_ps(out + h, _mm256_add_ps(_mm256_add_ps(widen(w + h), widen(p + h)), widen(t + h)));
  }
#endif
  for (; h < n; ++h) out[h] = (BF16ToFloat(w[h]) + BF16ToFloat(p[h])) + BF16ToFloat(t[h]);
}
}  // namespace

Status CpuEmbeddingSum(CpuBackend& be, const Tensor& ids, const Tensor& type_ids,
                       const Tensor& word, const Tensor& pos, const Tensor& type, Tensor& out,
                       const Tensor* positions) {
  const int64_t B = ids.dim(0), S = ids.dim(1), H = out.dim(2);  // shapes checked by the front
  const DType t = out.dtype();
  const DType tw = word.dtype();  // the tables': t, or F16/BF16 under FP32 output
  const int32_t* id = ids.data_as<int32_t>();
  const int32_t* tt = type_ids.data_as<int32_t>();
  const int32_t* at = positions != nullptr ? positions->data_as<int32_t>() : nullptr;
  const int64_t tokens = B * S;
  // The kernel checks its own indices: a row outside a table is never read, whatever the
  // caller validated.
  for (int64_t i = 0; i < tokens; ++i) {
    if (id[i] < 0 || id[i] >= word.dim(0)) {
      return OutOfRange("EmbeddingSum: input id " + std::to_string(id[i]) + " at position " +
                        std::to_string(i) + " is outside the vocabulary [0, " +
                        std::to_string(word.dim(0)) + ")");
    }
    if (tt[i] < 0 || tt[i] >= type.dim(0)) {
      return OutOfRange("EmbeddingSum: token type " + std::to_string(tt[i]) + " at position " +
                        std::to_string(i) + " is outside [0, " + std::to_string(type.dim(0)) + ")");
    }
    const int64_t p = at != nullptr ? at[i] : i % S;
    if (p < 0 || p >= pos.dim(0)) {
      return OutOfRange("EmbeddingSum: position " + std::to_string(p) + " of token " + std::to_string(i) +
                        " is outside the position table [0, " + std::to_string(pos.dim(0)) + ")");
    }
  }
  const size_t es = DTypeSize(t), ew = DTypeSize(tw);
  LaunchDesc desc;
  static const char* kNames[5] = {"cpu_embedding_sum_f32", "cpu_embedding_sum_f16", "cpu_embedding_sum_bf16",
                                  "cpu_embedding_sum_f32_wf16", "cpu_embedding_sum_f32_wbf16"};
  int name = t == DType::kF16 ? 1 : t == DType::kBF16 ? 2 : 0;
  if (tw != t) name = tw == DType::kF16 ? 3 : 4;
  desc.kernel = kNames[name];
  desc.grid = Dim3{(tokens + kTokensPerTask - 1) / kTokensPerTask, 1, 1};
  desc.block = Dim3{kTokensPerTask, H, 1};
  OpCost cost = EmbeddingCost(tokens, H, t, tw);
  if (at != nullptr) cost.bytes_read += 4.0 * static_cast<double>(tokens);  // the position ids
  cost.Into(desc);
  desc.writes[0] = {out.data(), out.bytes()};
  be.EnsureScratch(static_cast<size_t>(4 * H));
  // FP32 tables into FP32 rows, or BF16 tables into either: summed in one pass (SumRows).
  const bool f32 = tw == DType::kF32 && t == DType::kF32, bf16_tables = tw == DType::kBF16;
  return be.Launch(desc, [&](int64_t task, int worker) {
    float* acc = be.scratch(worker);
    float* tmp = acc + H;
    const int64_t begin = task * kTokensPerTask, end = std::min(tokens, (task + 1) * kTokensPerTask);
    const auto prefetch_word = [&](int64_t i) {
      const auto* row = static_cast<const char*>(word.data()) + id[i] * H * ew;
      for (int64_t off = 0; off < H * static_cast<int64_t>(ew); off += 64) __builtin_prefetch(row + off, 0, 1);
    };
    for (int64_t i = begin; i < std::min(end, begin + kPrefetchTokens); ++i) prefetch_word(i);
    for (int64_t i = begin; i < end; ++i) {
      if (i + kPrefetchTokens < end) prefetch_word(i + kPrefetchTokens);
      const int64_t s = at != nullptr ? at[i] : i % S;
      if (f32) {  // one pass, no copies into scratch
        SumRows(static_cast<const float*>(word.data()) + id[i] * H, static_cast<const float*>(pos.data()) + s * H,
                static_cast<const float*>(type.data()) + tt[i] * H, H, static_cast<float*>(out.data()) + i * H);
        continue;
      }
      if (bf16_tables) {  // the sums in one pass, into FP32 out or rounded from scratch
        float* sum = t == DType::kF32 ? static_cast<float*>(out.data()) + i * H : acc;
        SumRows(static_cast<const uint16_t*>(word.data()) + id[i] * H, static_cast<const uint16_t*>(pos.data()) + s * H,
                static_cast<const uint16_t*>(type.data()) + tt[i] * H, H, sum);
        if (sum == acc) FromFloat(acc, t, static_cast<std::byte*>(out.data()) + i * H * es, H);
        continue;
      }
      ToFloat(tw, static_cast<const std::byte*>(word.data()) + id[i] * H * ew, acc, H);
      ToFloat(tw, static_cast<const std::byte*>(pos.data()) + s * H * ew, tmp, H);
      for (int64_t h = 0; h < H; ++h) acc[h] += tmp[h];
      ToFloat(tw, static_cast<const std::byte*>(type.data()) + tt[i] * H * ew, tmp, H);
      for (int64_t h = 0; h < H; ++h) acc[h] += tmp[h];
      FromFloat(acc, t, static_cast<std::byte*>(out.data()) + i * H * es, H);
    }
  });
}

}  // namespace tierscope
