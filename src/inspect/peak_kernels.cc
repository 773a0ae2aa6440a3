// The calibration's CPU peak kernels: register-resident chains of FMA, BF16 and INT8 dot
// instructions (AMX tiles for INT8 where the GEMM uses them), each counting its work.
#include "inspect/peak_kernels.h"

#include <immintrin.h>

#include <cstring>

#include "core/cpu_info.h"

namespace tierscope {
namespace {

// Each FMA or dot kernel runs kChains independent accumulator chains, enough to cover
// the instruction's latency on two pipes.
constexpr int kChains = 12;

// The operand values: the calibration's keep every accumulator small and finite; a
// count's are 1 (each multiply-add then adds exactly 1 to its accumulator, below 2^24).
// The asm hides them from the compiler, so no run is specialised for either.
struct FloatOperands {
  float a, b, init;  // acc = acc * a + b, chain i starting at i * init
};
FloatOperands Fp32Operands(const double* macs) {
  FloatOperands o = macs != nullptr ? FloatOperands{1.0f, 1.0f, 0.0f}
                                    : FloatOperands{0.999999f, 1e-7f, 1e-3f};
  __asm__ volatile("" : "+x"(o.a), "+x"(o.b), "+x"(o.init));
  return o;
}

// Sums every lane of every accumulator (`n` values stored at `v`): a count's gain, and
// what the calibration keeps live, so that no chain and no lane is dead code.
template <typename T>
void Keep(const T* v, int n, double* macs) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<double>(v[i]);
  if (macs != nullptr) *macs = s;
  volatile double sink = s;
  (void)sink;
}

__attribute__((target("avx512f"))) double FmaAvx512(int64_t iters, double* macs) {
  const FloatOperands o = Fp32Operands(macs);
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * o.init);
  const __m512 a = _mm512_set1_ps(o.a), b = _mm512_set1_ps(o.b);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  float out[16 * kChains];
  for (int i = 0; i < kChains; ++i) _mm512_storeu_ps(out + 16 * i, acc[i]);
  Keep(out, 16 * kChains, macs);
  return 2.0 * 16 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx2,fma"))) double FmaAvx2(int64_t iters, double* macs) {
  const FloatOperands o = Fp32Operands(macs);
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * o.init);
  const __m256 a = _mm256_set1_ps(o.a), b = _mm256_set1_ps(o.b);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  float out[8 * kChains];
  for (int i = 0; i < kChains; ++i) _mm256_storeu_ps(out + 8 * i, acc[i]);
  Keep(out, 8 * kChains, macs);
  return 2.0 * 8 * kChains * static_cast<double>(iters);
}

double FmaScalar(int64_t iters, double* macs) {
  const FloatOperands o = Fp32Operands(macs);
  float acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = static_cast<float>(i) * o.init;
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * o.a + o.b;
  }
  Keep(acc, kChains, macs);
  return 2.0 * kChains * static_cast<double>(iters);
}

// 32 products an instruction (16 lanes x 2 BF16 pairs) summed into FP32.
__attribute__((target("avx512f,avx512bf16"))) double DotBf16(int64_t iters, double* macs) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_ps();
  __m512i a_bits = _mm512_set1_epi16(0x3f80);                                 // 1.0
  __m512i b_bits = _mm512_set1_epi16(macs != nullptr ? 0x3f80 : 0x3380);  // 1.0 or ~6e-8
  __asm__ volatile("" : "+v"(a_bits), "+v"(b_bits));
  const __m512bh a = (__m512bh)a_bits, b = (__m512bh)b_bits;
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  float out[16 * kChains];
  for (int i = 0; i < kChains; ++i) _mm512_storeu_ps(out + 16 * i, acc[i]);
  Keep(out, 16 * kChains, macs);
  return 2.0 * 32 * kChains * static_cast<double>(iters);
}

// INT8 dot throughput: u8 x s8 multiply-adds summed into int32, on the instruction the
// INT8 GEMM's micro-kernels use on this CPU. The calibration's operands (1 x -1) count
// down from each chain's start; a count's (1 x 1) up from 0.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double DotInt8Avx512Vnni(int64_t iters,
                                                                                 double* macs) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(macs != nullptr ? 0 : i);
  __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(macs != nullptr ? 1 : -1);
  __asm__ volatile("" : "+v"(a), "+v"(b));
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  int32_t out[16 * kChains];
  for (int i = 0; i < kChains; ++i) _mm512_storeu_si512(out + 16 * i, acc[i]);
  Keep(out, 16 * kChains, macs);
  return 2.0 * 64 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx2,avxvnni"))) double DotInt8AvxVnni(int64_t iters, double* macs) {
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi32(macs != nullptr ? 0 : i);
  __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(macs != nullptr ? 1 : -1);
  __asm__ volatile("" : "+x"(a), "+x"(b));
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], a, b);
  }
  int32_t out[8 * kChains];
  for (int i = 0; i < kChains; ++i) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * i), acc[i]);
  Keep(out, 8 * kChains, macs);
  return 2.0 * 32 * kChains * static_cast<double>(iters);
}

// AVX2 without VNNI, as its GEMM runs (micro_kernel_int8.cc): vpmaddubsw multiplies u8
// by s8 and adds each pair into int16 (exact for its 7-bit weights), vpmaddwd by ones adds
// the two pairs of a lane into int32, then vpaddd: 32 multiply-adds in three instructions.
// The products do not depend on the sums, so each pass hides `a` from the compiler and
// each chain multiplies its own b (hidden too, equal or not): nothing can be computed
// once and reused.
constexpr int kInt8Avx2Chains = 6;  // 6 sums + 6 b + a + ones fit the 16 ymm registers
__attribute__((target("avx2"))) double DotInt8Avx2(int64_t iters, double* macs) {
  __m256i acc[kInt8Avx2Chains], b[kInt8Avx2Chains];
  for (int i = 0; i < kInt8Avx2Chains; ++i) {
    acc[i] = _mm256_set1_epi32(macs != nullptr ? 0 : i);
    b[i] = _mm256_set1_epi8(static_cast<int8_t>(macs != nullptr ? 1 : -1 - i));
    __asm__ volatile("" : "+x"(b[i]));
  }
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i a = _mm256_set1_epi8(1);
  for (int64_t it = 0; it < iters; ++it) {
    __asm__ volatile("" : "+x"(a));  // a is new to the compiler each pass
    for (int i = 0; i < kInt8Avx2Chains; ++i) {
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b[i]), ones));
    }
  }
  int32_t out[8 * kInt8Avx2Chains];
  for (int i = 0; i < kInt8Avx2Chains; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * i), acc[i]);
  }
  Keep(out, 8 * kInt8Avx2Chains, macs);
  return 2.0 * 32 * kInt8Avx2Chains * static_cast<double>(iters);
}

// AMX: TDPBUSD on 16 x 64 u8 by 64 x 16 s8 tiles into 16 x 16 int32, 16,384 multiply-adds
// an instruction, over four independent C tiles (as the GEMM's 2 x 2 blocking), with the
// INT8 GEMM's own tile configuration (micro_kernel_int8.cc).
struct alignas(64) AmxPeakConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-int8"))) double DotInt8Amx(int64_t iters, double* macs) {
  AmxPeakConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  alignas(64) uint8_t a[16 * 64];
  alignas(64) int8_t b[16 * 64];
  std::memset(a, 1, sizeof(a));
  std::memset(b, macs != nullptr ? 1 : -1, sizeof(b));
  alignas(64) int32_t out[4 * 16 * 16];
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a, 64);
  _tile_loadd(6, b, 64);
  _tile_loadd(7, b, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  _tile_stored(1, out + 256, 64);
  _tile_stored(2, out + 512, 64);
  _tile_stored(3, out + 768, 64);
  // No _tile_release: the INT8 GEMM configures each thread once with this same layout
  // (8 tiles of 16 x 64 bytes) and would find its tiles gone.
  Keep(out, 4 * 16 * 16, macs);
  return 2.0 * 16 * 16 * 64 * 4 * static_cast<double>(iters);
}

bool Runs(const PeakKernel& k) {
  if (k.isa == "avx512_bf16") return CpuRunsIsa("avx512f") && CpuHasFlag("avx512_bf16");
  if (k.pipe == PeakPipe::kInt8Dot && k.isa == "avx2") return CpuRunsIsa("avx2+fma");
  return CpuRunsIsa(k.isa);
}

}  // namespace

std::vector<PeakKernel> AllPeakKernels() {
  return {{PeakPipe::kFp32Fma, "avx512f", FmaAvx512},
          {PeakPipe::kFp32Fma, "avx2+fma", FmaAvx2},
          {PeakPipe::kFp32Fma, "scalar", FmaScalar},
          {PeakPipe::kBf16Dot, "avx512_bf16", DotBf16},
          {PeakPipe::kInt8Dot, "amx-int8", DotInt8Amx},
          {PeakPipe::kInt8Dot, "avx512vnni", DotInt8Avx512Vnni},
          {PeakPipe::kInt8Dot, "avxvnni", DotInt8AvxVnni},
          {PeakPipe::kInt8Dot, "avx2", DotInt8Avx2}};
}

StatusOr<PeakKernel> FindPeakKernel(PeakPipe pipe, std::string_view isa) {
  for (const PeakKernel& k : AllPeakKernels()) {
    if (k.pipe != pipe || k.isa != isa) continue;
    if (!Runs(k)) return FailedPrecondition("this CPU does not run " + k.isa);
    return k;
  }
  return NotFound("no peak kernel for " + std::string(isa));
}

}  // namespace tierscope
