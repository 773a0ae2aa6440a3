// CPU multi-head self-attention: one task per (head, sample), or per (32-query block,
// head, sample) when there are too few of those for the workers. Samples are the rows of
// a padded [B, S] batch, or packed sequences of their own lengths (no padding). Per task, K and V of
// the head are packed once into 16-column panels and both products (Q.K^T and P.V) run
// on the shared FP32 micro-kernel, 32 queries at a time; the key mask and the softmax
// stay in FP32 scratch, so the S x S score matrix never reaches memory. Keys after the
// last unmasked one (right padding) are skipped: they add exactly nothing. BF16 where the
// CPU has BF16 arithmetic: both products on the BF16 dot kernels, Q read in place, K and
// V packed in their 2-deep groups, the probabilities rounded to BF16 for P.V; so too FP32
// rows asked for BF16 arithmetic (AttentionMath), rounded to BF16 as they are packed.
// For an INT8 Linear that follows, FP32 output rows are also quantized (u8 codes), a
// query block's rows by the task that finishes the block's last head.
#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "backend/cpu/micro_kernel_int8.h"
#include "backend/cpu/quantize_rows.h"
#include "backend/cpu/vec_math.h"
#include "core/int_math.h"

namespace tierscope {
namespace {

constexpr int64_t kQueryBlock = 32;

struct AttnParams {
  const void* qkv;
  const int32_t* mask;
  void* out;
  DType dtype;      // qkv's
  DType out_dtype;  // out's: qkv's, or FP32 for BF16 rows on the dot kernels (AttentionMath)
  int64_t batch, seq, heads, head_dim, hidden;  // seq: the longest sequence
  const int32_t* offsets;  // packed: sequence b is tokens [offsets[b], offsets[b + 1]); else null
  int64_t rows_per_task;  // query rows of one task: kQueryBlock, or all of S
  int64_t q_blocks;       // tasks per (head, sample)
  const Bf16Kernels* dot = nullptr;  // BF16 on these dot kernels; null: the FP32 micro-kernels
};

// K^T panels from F32 rows: keys j0..j0+8 x dims d0..d0+8 of K (row stride lds) into
// kp[panel][d][j % 16], eight keys and eight dims at a time (an 8x8 register transpose).
void TransposeKeys8x8(const float* src, int64_t lds, float* dst) {
#ifdef TIERSCOPE_VEC_AVX2
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  const __m256 s0 = _mm256_shuffle_ps(t[0], t[2], 0x44), s1 = _mm256_shuffle_ps(t[0], t[2], 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t[1], t[3], 0x44), s3 = _mm256_shuffle_ps(t[1], t[3], 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t[4], t[6], 0x44), s5 = _mm256_shuffle_ps(t[4], t[6], 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t[5], t[7], 0x44), s7 = _mm256_shuffle_ps(t[5], t[7], 0xEE);
  const __m256 out[8] = {_mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
                         _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
                         _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
                         _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
  for (int d = 0; d < 8; ++d) _mm256_storeu_ps(dst + d * kNR, out[d]);
#else
  for (int j = 0; j < 8; ++j) {
    for (int d = 0; d < 8; ++d) dst[d * kNR + j] = src[j * lds + d];
  }
#endif
}

// Key j's row of V into the V panels [Dp/16][keys][16] (the caller zeroes past D).
inline void PackValueRow(const AttnParams& p, const std::byte* v0, int64_t j, int64_t keys, float* vp) {
  const size_t es = DTypeSize(p.dtype);
  const std::byte* v = v0 + j * 3 * p.hidden * es;
  const int64_t D = p.head_dim;
  int64_t d = 0;
  if (p.dtype == DType::kF32) {  // 16 floats a panel row, copied inline (a memcpy call each cost more)
#ifdef TIERSCOPE_VEC_AVX2
    const auto* vf = reinterpret_cast<const float*>(v);
    for (; d + kNR <= D; d += kNR) {
      float* dst = vp + (d / kNR) * keys * kNR + j * kNR;
      _mm256_storeu_ps(dst, _mm256_loadu_ps(vf + d));
      _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(vf + d + 8));
    }
#endif
  } else {
    for (; d + kNR <= D; d += kNR) ToFloat(p.dtype, v + d * es, vp + (d / kNR) * keys * kNR + j * kNR, kNR);
  }
  for (; d < D; ++d) vp[(d / kNR) * keys * kNR + j * kNR + (d % kNR)] = LoadF(p.dtype, v, d);
}

// The cache lines of token j's Q, K and V slices of the head (`slice` bytes each, from
// q0's), fetched ahead of their use: the rows lie 3H apart, too far for the hardware's
// prefetcher to keep up, and each first read otherwise stalls the packing.
inline void PrefetchToken(const std::byte* q0, int64_t j, int64_t row_bytes, int64_t part_bytes, int64_t slice) {
  for (int64_t part = 0; part < 3; ++part) {
    const auto begin = reinterpret_cast<uintptr_t>(q0 + j * row_bytes + part * part_bytes);
    for (uintptr_t line = begin & ~uintptr_t{63}; line < begin + slice; line += 64) {
      __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 3);
    }
  }
}

// Packs K^T [Kp/16][D][16] and V [Dp/16][keys][16] of one head (both zero-padded), eight
// keys at a time, tokens 16 ahead prefetched (their Q slices too: the task reads them
// next); `rows` is scratch for 8 rows of D floats.
void PackKeysAndValues(const AttnParams& p, const std::byte* k0, const std::byte* v0, int64_t keys,
                       float* kp, float* vp, float* rows) {
  const int64_t D = p.head_dim, Kp = RoundUp(keys, kNR), Dp = RoundUp(D, kNR);
  const int64_t stride = 3 * p.hidden;  // elements from one token's row to the next
  const size_t es = DTypeSize(p.dtype);
  const auto part = static_cast<int64_t>(p.hidden * es);  // bytes from Q's slice to K's
  const std::byte* q0 = k0 - part;
  const auto row_bytes = static_cast<int64_t>(stride * es), slice = static_cast<int64_t>(D * es);
  constexpr int64_t kAhead = 16;
  for (int64_t j = 0; j < std::min(kAhead, keys); ++j) PrefetchToken(q0, j, row_bytes, part, slice);
  // Zeros only where nothing is written below: the last K^T panel's columns past the
  // keys, the last V panel's past D (a whole memset was a tenth of the kernel's time).
  if (keys < Kp) std::memset(kp + (Kp / kNR - 1) * D * kNR, 0, sizeof(float) * D * kNR);
  if (D < Dp) std::memset(vp + (Dp / kNR - 1) * keys * kNR, 0, sizeof(float) * keys * kNR);
  int64_t j = 0;
  if (D % 8 == 0) {
    for (; j + 8 <= keys; j += 8) {
      for (int64_t a = j + kAhead; a < std::min(j + kAhead + 8, keys); ++a) {
        PrefetchToken(q0, a, row_bytes, part, slice);
      }
      // FP32 rows are transposed in place; 16-bit ones converted first, 8 rows into `rows`.
      const float* k = rows;
      int64_t lds = D;
      if (p.dtype == DType::kF32) {
        k = reinterpret_cast<const float*>(k0) + j * stride;
        lds = stride;
      } else {
        for (int64_t r = 0; r < 8; ++r) ToFloat(p.dtype, k0 + (j + r) * stride * es, rows + r * D, D);
      }
      for (int64_t d = 0; d < D; d += 8) {
        TransposeKeys8x8(k + d, lds, kp + (j / kNR) * D * kNR + d * kNR + j % kNR);
      }
      for (int64_t r = 0; r < 8; ++r) PackValueRow(p, v0, j + r, keys, vp);
    }
  }
  for (; j < keys; ++j) {
    if (j + kAhead < keys) PrefetchToken(q0, j + kAhead, row_bytes, part, slice);
    const float* k = AsFloat(p.dtype, k0 + j * stride * es, rows, D);
    float* kcol = kp + (j / kNR) * D * kNR + (j % kNR);
    for (int64_t d = 0; d < D; ++d) kcol[d * kNR] = k[d];
    PackValueRow(p, v0, j, keys, vp);
  }
}

// Scratch floats one task needs (the BF16 dot path's probabilities in BF16 after them).
size_t ScratchFloats(int64_t S, int64_t D) {
  const int64_t Sp = RoundUp(S, kNR), Dp = RoundUp(D, kNR);
  // The BF16 dot path over FP32 rows: the head's K and V, and a block of Q, in BF16 last.
  return static_cast<size_t>(Sp * D + Dp * S + kQueryBlock * (D + Sp + Dp) + 8 * D + kQueryBlock * (S + 2) / 2 +
                             (2 * S * D + kQueryBlock * D) / 2 + 8);
}

// One task's queries [first, last) of head h of the sequence at token `start`, against
// its first `keys` keys.
struct AttnTask {
  int64_t start, h, first, last, keys;
  const int32_t* mask;
  bool any_masked;
};

// exp(scale * s - max) in place for `rows` rows of scores (row stride ld), the key mask
// added first, and 1 / each row's sum: the softmax, less its division.
void ExpRows(float* scores, int64_t ld, int64_t rows, const AttnTask& t, float scale, float* inv) {
  for (int64_t i = 0; i < rows; ++i) {
    float* s = scores + i * ld;
    if (scale != 1.0f) ScaleInPlace(s, t.keys, scale);
    if (t.any_masked) {
      for (int64_t j = 0; j < t.keys; ++j) {
        if (t.mask[j] == 0) s[j] += -FLT_MAX;  // as Hugging Face's additive mask
      }
    }
    const float max_score = MaxOf(s, t.keys);
    inv[i] = 1.0f / ExpShiftSum(s, t.keys, max_score);
  }
}

// K^T and V of one head in the BF16 dot kernels' groups (see AttendBf16Dot): a key's
// dims in pairs are 32-bit words of its row, moved whole; two keys' values interleaved
// 16 dims at a time (the second key's on top of each 32-bit lane). Zero past the keys
// and D.
// `prefetch`: k0 and v0 are the K and V slices of qkv's rows (Q's lies H before K's), whose
// tokens 16 ahead are fetched; else BF16 copies already in cache.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void PackHeadBf16(
    const uint16_t* k0, const uint16_t* v0, int64_t stride, int64_t keys, int64_t D, uint16_t* kp, uint16_t* vp,
    bool prefetch) {
  const int64_t Kp = RoundUp(keys, kNR), Dg = Bf16Groups(D), Kg = Bf16Groups(keys);
  // Zeros only in the last K^T panel, where keys stop short of it (V's are stored whole).
  if (keys < Kp) std::memset(kp + (Kp / kNR - 1) * Dg * kBGroupElems, 0, sizeof(uint16_t) * Dg * kBGroupElems);
  // Q's slice lies H before K's in qkv's rows (only then is `prefetch` set).
  const auto* q0 = prefetch ? reinterpret_cast<const std::byte*>(k0 - stride / 3) : nullptr;
  const auto row_bytes = static_cast<int64_t>(stride * 2), part = row_bytes / 3, slice = D * 2;
  constexpr int64_t kAhead = 16;
  for (int64_t j = 0; prefetch && j < std::min(kAhead, keys); ++j) PrefetchToken(q0, j, row_bytes, part, slice);
  for (int64_t j = 0; j < keys; ++j) {
    if (prefetch && j + kAhead < keys) PrefetchToken(q0, j + kAhead, row_bytes, part, slice);
    auto* kcol = reinterpret_cast<uint32_t*>(kp) + (j / kNR) * Dg * kNR + j % kNR;
    const uint16_t* kr = k0 + j * stride;
    int64_t g = 0;
    for (; g < D / kBK; ++g) std::memcpy(kcol + g * kNR, kr + g * kBK, sizeof(uint32_t));
    if (g < Dg) kcol[g * kNR] = kr[D - 1];  // an odd D's last dim, its pair's other half zero
  }
  for (int64_t g = 0; g < Kg; ++g) {
    const uint16_t* a = v0 + 2 * g * stride;
    const bool pair = 2 * g + 1 < keys;
    for (int64_t d0 = 0; d0 < D; d0 += kNR) {
      const __mmask16 m = TailMask16(D - d0);
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, a + d0));
      const __m512i hi = pair ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, a + stride + d0)) : _mm512_setzero_si512();
      _mm512_storeu_si512(vp + (d0 / kNR) * Kg * kBGroupElems + g * kBGroupElems,
                          _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
}

// The head's K and V slices of `keys` FP32 token rows (q0: the head's Q slice of the
// first; rows `stride` floats apart, K H after Q, V 2H) rounded to BF16 into kt and vt
// ([keys][D] each), tokens 16 ahead prefetched.
void RoundHeadRows(const AttnParams& p, const float* q0, int64_t keys, uint16_t* kt, uint16_t* vt) {
  const int64_t D = p.head_dim, H = p.hidden, stride = 3 * H;
  const auto* bytes = reinterpret_cast<const std::byte*>(q0);
  constexpr int64_t kAhead = 16, kF = sizeof(float);
  for (int64_t j = 0; j < std::min(kAhead, keys); ++j) PrefetchToken(bytes, j, stride * kF, H * kF, D * kF);
  for (int64_t j = 0; j < keys; ++j) {
    if (j + kAhead < keys) PrefetchToken(bytes, j + kAhead, stride * kF, H * kF, D * kF);
    RoundRowToBf16(q0 + j * stride + H, D, kt + j * D);
    RoundRowToBf16(q0 + j * stride + 2 * H, D, vt + j * D);
  }
}

// BF16 arithmetic: K^T and V of the head packed in the dot kernels' 2-deep groups (K^T:
// panels of 16 keys over pairs of dims, each pair one 32-bit word of a key's row; V:
// panels of 16 dims over pairs of keys), zero-padded; Q.K^T from Q's rows in place; the
// probabilities rounded to BF16 for P.V (each row's sum, taken before the rounding, is
// then off by the rounding's ~2^-9 relative: torch's BF16 attention rounds them too).
// FP32 rows (an INT8 run's attention, AttentionMath::kBf16WhereNative): Q, K and V
// rounded to BF16 first (K and V once per head, Q a block at a time), the output FP32.
void AttendBf16Dot(const AttnParams& p, const Bf16Kernels& bk, const AttnTask& t, float* scratch) {
  const int64_t D = p.head_dim, H = p.hidden, keys = t.keys;
  const int64_t Kp = RoundUp(keys, kNR), Dp = RoundUp(D, kNR), Dg = Bf16Groups(D), Kg = Bf16Groups(keys);
  const int64_t stride = 3 * H;
  const bool f32 = p.dtype == DType::kF32, out_f32 = p.out_dtype == DType::kF32;
  auto* kp = reinterpret_cast<uint16_t*>(scratch);  // [Kp/16][Dg][16][2]
  uint16_t* vp = kp + Kp * Dg * kBK;                 // [Dp/16][Kg][16][2]
  auto* scores = reinterpret_cast<float*>(vp + Dp * Kg * kBK);  // [32][Kp]
  float* o = scores + kQueryBlock * Kp;                         // [32][Dp]
  auto* probs = reinterpret_cast<uint16_t*>(o + kQueryBlock * Dp);  // [32][2 Kg]
  uint16_t* kt = probs + kQueryBlock * Kg * kBK;  // FP32 rows: K, V [keys][D] and Q [32][D] in BF16
  uint16_t* vt = kt + keys * D;
  uint16_t* qt = vt + keys * D;
  const auto* qkv = static_cast<const uint16_t*>(p.qkv);
  const auto* qkv32 = static_cast<const float*>(p.qkv);
  if (f32) {
    RoundHeadRows(p, qkv32 + t.start * stride + t.h * D, keys, kt, vt);
    PackHeadBf16(kt, vt, D, keys, D, kp, vp, /*prefetch=*/false);
  } else {
    const uint16_t* k0 = qkv + t.start * stride + H + t.h * D;
    PackHeadBf16(k0, k0 + H, stride, keys, D, kp, vp, /*prefetch=*/true);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const size_t es = DTypeSize(p.out_dtype);
  for (int64_t i0 = t.first; i0 < t.last; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, t.last - i0);
    const uint16_t* q = qkv + (t.start + i0) * stride + t.h * D;
    int64_t lda = stride;
    if (f32) {
      for (int64_t i = 0; i < rows; ++i) RoundRowToBf16(qkv32 + (t.start + i0 + i) * stride + t.h * D, D, qt + i * D);
      q = qt;
      lda = D;
    }
    bk.Run(rows, D, q, lda, kp, Kp / kNR, Dg * kBGroupElems, scores, Kp, /*from_c=*/false);
    float inv[kQueryBlock];
    for (int64_t i = 0; i < rows; ++i) {
      inv[i] = SoftmaxRowBf16(scores + i * Kp, keys, scale, t.any_masked ? t.mask : nullptr, probs + i * Kg * kBK);
    }
    bk.Run(rows, keys, probs, Kg * kBK, vp, Dp / kNR, Kg * kBGroupElems, o, Dp, /*from_c=*/false);
    for (int64_t i = 0; i < rows; ++i) {
      std::byte* out = static_cast<std::byte*>(p.out) + ((t.start + i0 + i) * H + t.h * D) * es;
      if (out_f32) {  // ScaleInPlace and FromFloat's copy, in one pass
        auto* y = reinterpret_cast<float*>(out);
        for (int64_t d = 0; d < D; ++d) y[d] = o[i * Dp + d] * inv[i];
        continue;
      }
      ScaleInPlace(o + i * Dp, D, inv[i]);
      FromFloat(o + i * Dp, p.out_dtype, out, D);
    }
  }
}

// Task `task`'s query block qb, head h and sample b (the grid is {q_blocks, heads, B}),
// and the sample's first token and length: packed, from the offsets; else row b of S.
struct TaskAt {
  int64_t qb, h, b, start, S;
  TaskAt(const AttnParams& p, int64_t task)
      : qb(task % p.q_blocks),
        h((task / p.q_blocks) % p.heads),
        b(task / (p.q_blocks * p.heads)),
        start(p.offsets != nullptr ? p.offsets[b] : b * p.seq),
        S(p.offsets != nullptr ? p.offsets[b + 1] - start : p.seq) {}
};

void AttentionTask(const AttnParams& p, const TaskAt& at, float* scratch) {
  // Named copies: clang 14's lambdas cannot capture structured bindings.
  const int64_t qb = at.qb, h = at.h, start = at.start, S = at.S;
  const int64_t D = p.head_dim, H = p.hidden;
  if (qb * p.rows_per_task >= S) return;  // a shorter sequence of a packed batch
  const int32_t* mask = p.mask + start;
  // Keys past the last unmasked one add exactly 0 to every softmax (exp of -FLT_MAX
  // below a finite max): padding-aware, they are not computed at all.
  int64_t keys = S;
  while (keys > 0 && mask[keys - 1] == 0) --keys;
  if (keys == 0) keys = S;  // all masked: Hugging Face averages V uniformly; so do we
  bool any_masked = false;
  for (int64_t j = 0; j < keys; ++j) any_masked |= mask[j] == 0;
  const int64_t first = qb * p.rows_per_task;
  const int64_t last = std::min(S, first + p.rows_per_task);
  const AttnTask t{start, h, first, last, keys, mask, any_masked};
  if (p.dot != nullptr) return AttendBf16Dot(p, *p.dot, t, scratch);
  const int64_t Kp = RoundUp(keys, kNR), Dp = RoundUp(D, kNR);
  float* kp = scratch;                  // K^T panels [Kp/16][D][16]
  float* vp = kp + Kp * D;              // V panels [Dp/16][keys][16]
  float* q = vp + Dp * keys;            // [32][D], pre-scaled
  float* scores = q + kQueryBlock * D;  // [32][Kp]
  float* o = scores + kQueryBlock * Kp; // [32][Dp]
  float* row = o + kQueryBlock * Dp;    // [8][D]
  const size_t es = DTypeSize(p.dtype);
  const auto* base = static_cast<const std::byte*>(p.qkv);
  auto head_row = [&](int64_t s, int64_t which) {  // which: 0 = Q, 1 = K, 2 = V
    return base + ((start + s) * 3 * H + which * H + h * D) * es;
  };

  // Pack K^T and V once per task (zero-padded past the keys and D).
  PackKeysAndValues(p, head_row(0, 1), head_row(0, 2), keys, kp, vp, row);
  const MicroKernels& mk = GetMicroKernels();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  for (int64_t i0 = first; i0 < last; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, last - i0);
    for (int64_t i = 0; i < rows; ++i) {
      const float* qi = AsFloat(p.dtype, head_row(i0 + i, 0), row, D);
      for (int64_t d = 0; d < D; ++d) q[i * D + d] = qi[d] * scale;
    }
    mk.Run(rows, D, q, D, kp, Kp / kNR, D * kNR, scores, Kp, /*accumulate=*/false);
    // exp(s - max) per row; the division by the row's sum is left to the D outputs of
    // P.V instead of the keys' probabilities (fewer wherever keys > D, as at seq 128).
    float inv[kQueryBlock];
    ExpRows(scores, Kp, rows, t, 1.0f, inv);
    // FP32 with whole panels (D a multiple of 16): P.V lands straight in the output rows.
    if (p.out_dtype == DType::kF32 && D == Dp) {
      float* out = static_cast<float*>(p.out) + (start + i0) * H + h * D;
      mk.Run(rows, keys, scores, Kp, vp, Dp / kNR, keys * kNR, out, H, /*accumulate=*/false);
      for (int64_t i = 0; i < rows; ++i) ScaleInPlace(out + i * H, D, inv[i]);
      continue;
    }
    mk.Run(rows, keys, scores, Kp, vp, Dp / kNR, keys * kNR, o, Dp, /*accumulate=*/false);
    for (int64_t i = 0; i < rows; ++i) {
      ScaleInPlace(o + i * Dp, D, inv[i]);
      FromFloat(o + i * Dp, p.out_dtype,
                static_cast<std::byte*>(p.out) + ((start + i0 + i) * H + h * D) * DTypeSize(p.out_dtype), D);
    }
  }
}

// `t`: qkv's dtype; `out`: the output's; `codes`: FP32 rows also quantized (u8 out).
const char* AttentionKernelName(DType t, DType out, bool dot, bool codes) {
  switch (t) {
    case DType::kF16: return "cpu_attn_softmax_f16_q32";
    case DType::kBF16:
      if (out == DType::kF32 && codes) {
        return dot ? "cpu_attn_softmax_bf16dot_f32out_u8out_q32" : "cpu_attn_softmax_bf16_f32out_u8out_q32";
      }
      if (out == DType::kF32) return dot ? "cpu_attn_softmax_bf16dot_f32out_q32" : "cpu_attn_softmax_bf16_f32out_q32";
      return dot ? "cpu_attn_softmax_bf16dot_q32" : "cpu_attn_softmax_bf16_q32";
    default:
      if (codes) return dot ? "cpu_attn_softmax_f32_bf16dot_u8out_q32" : "cpu_attn_softmax_f32_u8out_q32";
      return dot ? "cpu_attn_softmax_f32_bf16dot_q32" : "cpu_attn_softmax_f32_q32";
  }
}

// Quantization of the output rows in the producing op: a row holds every head, so it is
// quantized by the task that finishes its query block's last head (a counter a block of
// each sample; the tasks before it released their rows with their increments).
struct RowCodes {
  QuantizeRowFn quantize_row;
  std::unique_ptr<std::atomic<int64_t>[]> heads_done;  // [B * q_blocks]
};

// After task `t`: quantizes its query block's rows if every head of them is written. The
// counters only grow, a multiple of `heads` after each whole run of the launch, so a
// replayed launch (tier 3) quantizes again.
void QuantizeFinishedRows(const AttnParams& p, const TaskAt& t, QuantizedRows& codes, RowCodes& rc) {
  if ((rc.heads_done[t.b * p.q_blocks + t.qb].fetch_add(1, std::memory_order_acq_rel) + 1) % p.heads != 0) return;
  const int64_t H = p.hidden, kp = PaddedCodeBytes(H);
  auto* q = static_cast<uint8_t*>(codes.codes.data());
  auto* params = static_cast<float*>(codes.params.data());
  const auto* out = static_cast<const float*>(p.out);
  for (int64_t i = t.qb * p.rows_per_task; i < std::min(t.S, (t.qb + 1) * p.rows_per_task); ++i) {
    const int64_t r = t.start + i;
    rc.quantize_row(out + r * H, H, kp, q + r * kp, params + 2 * r);
  }
}

}  // namespace

Status CpuAttention(CpuBackend& be, const Tensor& qkv, const Tensor& mask, int heads,
                    Tensor& out, const Tensor* offsets, AttentionMath math, QuantizedRows* codes) {
  int64_t B = qkv.dim(0), S = qkv.dim(1);  // shapes checked by the front
  const int64_t H = out.dim(2);
  const int32_t* off = offsets != nullptr ? offsets->data_as<int32_t>() : nullptr;
  if (off != nullptr) {  // packed: B sequences in qkv's S = T tokens; S becomes the longest
    const int64_t T = S;
    B = offsets->numel() - 1;
    if (off[0] != 0 || off[B] != T) {
      return InvalidArgument("AttentionPacked: the offsets run from " + std::to_string(off[0]) + " to " +
                             std::to_string(off[B]) + ", not over the " + std::to_string(T) + " tokens");
    }
    S = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = int64_t{off[b + 1]} - off[b];
      if (len <= 0) {
        return InvalidArgument("AttentionPacked: sequence " + std::to_string(b) +
                               " is empty or the offsets decrease (" + std::to_string(off[b]) + " then " +
                               std::to_string(off[b + 1]) + ")");
      }
      S = std::max(S, len);
    }
  }
  // One task per (head, sample) when that alone gives every worker a few tasks, or the
  // same number each (K and V are then packed once per head, where 32-query tasks pack
  // them once per block: as much work again at S=128, D=64); else one per 32-query block.
  const int64_t pairs = B * heads, workers = be.num_workers();
  const int64_t rows_per_task = pairs >= 4 * workers || (pairs >= workers && pairs % workers == 0) ? S : kQueryBlock;
  AttnParams p{qkv.data(), mask.data_as<int32_t>(), out.data(), qkv.dtype(), out.dtype(), B, S, heads,
               H / heads, H, off, rows_per_task, CeilDiv(S, rows_per_task)};
  // BF16 on the dot kernels: BF16 activations, or FP32 ones asked to (an INT8 run's).
  const bool bf16_math = p.dtype == DType::kBF16 ||
                         (p.dtype == DType::kF32 && math == AttentionMath::kBf16WhereNative);
  if (const Bf16Kernels& bk = GetBf16Kernels(); bf16_math && bk.dot()) p.dot = &bk;
  const int64_t D = p.head_dim;
  LaunchDesc desc;
  desc.kernel = AttentionKernelName(p.dtype, p.out_dtype, p.dot != nullptr, codes != nullptr);
  desc.grid = Dim3{p.q_blocks, heads, B};
  desc.block = Dim3{rows_per_task, D, 1};
  OpCost cost = AttentionCost(B, S, heads, D, p.dtype);
  if (off != nullptr) {  // each sequence at its own length
    cost = {};
    for (int64_t b = 0; b < B; ++b) {
      const OpCost one = AttentionCost(1, off[b + 1] - off[b], heads, D, p.dtype);
      cost.flops += one.flops;
      cost.bytes_read += one.bytes_read;
      cost.bytes_written += one.bytes_written;
    }
  }
  // The output written in its own dtype (FP32 from BF16 rows: twice the bytes).
  cost.bytes_written *= static_cast<double>(DTypeSize(p.out_dtype)) / static_cast<double>(DTypeSize(p.dtype));
  if (p.dot != nullptr) desc.pipe = "bf16_dot";
  desc.writes[0] = {out.data(), out.bytes()};
  RowCodes rc{nullptr, nullptr};
  if (codes != nullptr) {  // FP32 out (the front checked it)
    TS_RETURN_IF_ERROR(CheckCodeLayout(*codes, "AttentionQuantized"));
    const int64_t rows = out.numel() / H;
    cost = WithQuantizedOutput(cost, rows, H, PaddedCodeBytes(H), /*keep_fp32=*/true);
    desc.writes[1] = {codes->codes.data(), codes->codes.bytes()};
    desc.writes[2] = {codes->params.data(), codes->params.bytes()};
    rc.quantize_row = PickQuantizeRow(GetInt8MicroKernels());
    rc.heads_done = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(B * p.q_blocks));
  }
  cost.Into(desc);
  be.EnsureScratch(ScratchFloats(S, D));
  return be.Launch(desc, [&](int64_t task, int worker) {
    const TaskAt at(p, task);  // decoded once, for the task and its row quantization
    AttentionTask(p, at, be.scratch(worker));
    if (codes != nullptr) QuantizeFinishedRows(p, at, *codes, rc);
  });
}

}  // namespace tierscope
