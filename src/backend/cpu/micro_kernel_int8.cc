// The INT8 micro-kernels (AMX, AVX512-VNNI, AVX-VNNI, AVX2 on 7-bit weights, scalar),
// chosen once at run time for the CPU at hand; every variant the CPU runs is listed for
// the tests.
#include "backend/cpu/micro_kernel_int8.h"

#include <immintrin.h>

#include <atomic>
#include <cstring>
#include <string>

#include "core/cpu_info.h"

namespace tierscope {
namespace {

// Four activation codes of row r at group k, as one 32-bit lane to broadcast.
inline int32_t Quad(const uint8_t* a, int64_t lda, int r, int64_t k) {
  int32_t v;
  std::memcpy(&v, a + r * lda + k * kQK, sizeof(v));
  return v;
}

template <int MR>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void Int8PairAvx512Vnni(
    int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b0, const int8_t* b1, int32_t* c,
    int64_t ldc) {
  __m512i x[MR], y[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) x[r] = y[r] = _mm512_setzero_si512();
  for (int64_t k = 0; k < kq; ++k) {
    const __m512i v0 = _mm512_loadu_si512(b0 + k * kQGroupBytes);
    const __m512i v1 = _mm512_loadu_si512(b1 + k * kQGroupBytes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(Quad(a, lda, r, k));
      x[r] = _mm512_dpbusd_epi32(x[r], av, v0);
      y[r] = _mm512_dpbusd_epi32(y[r], av, v1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_si512(c + r * ldc, x[r]);
    _mm512_storeu_si512(c + r * ldc + kNR, y[r]);
  }
}

template <int MR>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void Int8Avx512Vnni(
    int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b, int32_t* c, int64_t ldc) {
  __m512i x[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) x[r] = _mm512_setzero_si512();
  for (int64_t k = 0; k < kq; ++k) {
    const __m512i v = _mm512_loadu_si512(b + k * kQGroupBytes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) x[r] = _mm512_dpbusd_epi32(x[r], _mm512_set1_epi32(Quad(a, lda, r, k)), v);
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_si512(c + r * ldc, x[r]);
}

template <int MR>
__attribute__((target("avx2,avxvnni"))) void Int8AvxVnni(int64_t kq, const uint8_t* a, int64_t lda,
                                                         const int8_t* b, int32_t* c, int64_t ldc) {
  __m256i x[MR], y[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) x[r] = y[r] = _mm256_setzero_si256();
  for (int64_t k = 0; k < kq; ++k) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kQGroupBytes));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kQGroupBytes + 32));
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(Quad(a, lda, r, k));
      x[r] = _mm256_dpbusd_avx_epi32(x[r], av, v0);
      y[r] = _mm256_dpbusd_avx_epi32(y[r], av, v1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), x[r]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), y[r]);
  }
}

// AVX2 has no u8 x s8 dot into int32: vpmaddubsw multiplies u8 codes by s8 weights and
// adds each pair of products into int16 with saturation, then vpmaddwd by ones adds the
// two pairs of a column into int32. The pair sums are exact because this variant's weights
// are quantized to 7 bits (|w| <= 63: 2 x 255 x 63 = 32,130 < 32,767), as ONNX Runtime's
// reduce_range does on CPUs without VNNI. Three instructions per 32 products, against
// four for vpmaddwd on int16 operands (2 x 16 products): on Zen 3 the calibrated dot
// peak is 387 GOP/s on 2 threads against 252. NP panels (1 or 2) of 16 columns, two
// 8-column halves each: one panel takes up to 4 rows a pass (8 accumulators, 2 weight
// registers, the broadcast and ones); two take 3 (12 accumulators, so the compiler reads
// the 4 weight vectors as memory operands: L1 loads are spare on Zen 3, and 2 rows a pass
// with the weights in registers measured the same).
template <int MR, int NP>
__attribute__((target("avx2"))) void Int8Avx2Rows(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b0,
                                                  const int8_t* b1, int32_t* c, int64_t ldc) {
  constexpr int kHalves = 2 * NP;
  const int8_t* panel[2] = {b0, b1};
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i x[MR][kHalves];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int h = 0; h < kHalves; ++h) x[r][h] = _mm256_setzero_si256();
  }
  for (int64_t k = 0; k < kq; ++k) {
    __m256i v[kHalves];
#pragma GCC unroll 4
    for (int h = 0; h < kHalves; ++h) {
      v[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel[h / 2] + k * kQGroupBytes + 32 * (h % 2)));
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(Quad(a, lda, r, k));
#pragma GCC unroll 4
      for (int h = 0; h < kHalves; ++h) {
        x[r][h] = _mm256_add_epi32(x[r][h], _mm256_madd_epi16(_mm256_maddubs_epi16(av, v[h]), ones));
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int h = 0; h < kHalves; ++h) _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8 * h), x[r][h]);
  }
}

// MR rows in passes of at most 4 (one panel) or 3 (two).
template <int MR, int NP>
void Int8Avx2Passes(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b0, const int8_t* b1, int32_t* c,
                    int64_t ldc) {
  if constexpr (MR > (NP == 1 ? 4 : 3)) {
    Int8Avx2Rows<3, NP>(kq, a, lda, b0, b1, c, ldc);
    Int8Avx2Passes<MR - 3, NP>(kq, a + 3 * lda, lda, b0, b1, c + 3 * ldc, ldc);
  } else {
    Int8Avx2Rows<MR, NP>(kq, a, lda, b0, b1, c, ldc);
  }
}

template <int MR>
void Int8Avx2(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b, int32_t* c, int64_t ldc) {
  Int8Avx2Passes<MR, 1>(kq, a, lda, b, nullptr, c, ldc);
}

template <int MR>
void Int8PairAvx2(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b0, const int8_t* b1, int32_t* c,
                  int64_t ldc) {
  Int8Avx2Passes<MR, 2>(kq, a, lda, b0, b1, c, ldc);
}

// AMX: 16 x 64-byte tiles. C in tiles 0-3 (2 x 2 blocks of 16 x 16 int32), A in 4-5
// (16 rows x 64 codes), B in 6-7 (16 groups x 16 columns x 4: a panel slice as it lies).
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Once per thread (the configuration is per thread, and loading it costs about as much as
// a small tile's work). Anything else in the process that uses AMX (the calibration)
// loads this same layout and never releases the tiles, so a configured thread stays so.
__attribute__((target("amx-tile"))) void ConfigureAmxTilesOnce() {
  thread_local bool configured = false;
  if (configured) return;
  AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = kAmxRows;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  configured = true;
}

__attribute__((target("amx-tile,amx-int8"))) void Int8TileAmx(int64_t rows, int64_t kq, const uint8_t* a,
                                                              int64_t lda, const int8_t* b, int64_t panels,
                                                              int64_t panel_stride, int32_t* c, int64_t ldc) {
  ConfigureAmxTilesOnce();
  const int64_t ldc_bytes = ldc * static_cast<int64_t>(sizeof(int32_t));
  for (int64_t r0 = 0; r0 < rows; r0 += 2 * kAmxRows) {
    const bool two_rows = rows - r0 > kAmxRows;
    const uint8_t* a0 = a + r0 * lda;
    const uint8_t* a1 = a0 + kAmxRows * lda;
    for (int64_t p = 0; p < panels; p += 2) {
      const bool two_cols = p + 1 < panels;
      const int8_t* b0 = b + p * panel_stride;
      const int8_t* b1 = b0 + panel_stride;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t k = 0; k < kq; k += kAmxKq) {
        _tile_loadd(4, a0 + k * kQK, lda);
        _tile_loadd(6, b0 + k * kQGroupBytes, kQGroupBytes);
        _tile_dpbusd(0, 4, 6);
        if (two_cols) {
          _tile_loadd(7, b1 + k * kQGroupBytes, kQGroupBytes);
          _tile_dpbusd(1, 4, 7);
        }
        if (two_rows) {
          _tile_loadd(5, a1 + k * kQK, lda);
          _tile_dpbusd(2, 5, 6);
          if (two_cols) _tile_dpbusd(3, 5, 7);
        }
      }
      int32_t* c0 = c + r0 * ldc + p * kNR;
      _tile_stored(0, c0, ldc_bytes);
      if (two_cols) _tile_stored(1, c0 + kNR, ldc_bytes);
      if (two_rows) {
        _tile_stored(2, c0 + kAmxRows * ldc, ldc_bytes);
        if (two_cols) _tile_stored(3, c0 + kAmxRows * ldc + kNR, ldc_bytes);
      }
    }
  }
}

template <int MR>
void Int8Scalar(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b, int32_t* c, int64_t ldc) {
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < kNR; ++j) {
      int32_t s = 0;
      for (int64_t k = 0; k < kq; ++k) {
        for (int q = 0; q < kQK; ++q) {
          s += static_cast<int32_t>(a[r * lda + k * kQK + q]) *
               static_cast<int32_t>(b[k * kQGroupBytes + j * kQK + q]);
        }
      }
      c[r * ldc + j] = s;
    }
  }
}

#define TS_INT8_KERNELS(K) {nullptr, K<1>, K<2>, K<3>, K<4>, K<5>, K<6>}

}  // namespace

std::vector<Int8MicroKernels> AvailableInt8MicroKernels() {
  std::vector<Int8MicroKernels> v;
  for (const std::string& isa : CpuInt8DotIsas()) {
    if (isa == "amx-int8") {  // K not a multiple of 64: its VNNI kernels
      v.push_back({"amx-int8", 127, TS_INT8_KERNELS(Int8Avx512Vnni), TS_INT8_KERNELS(Int8PairAvx512Vnni), Int8TileAmx});
    } else if (isa == "avx512vnni") {
      v.push_back({"avx512vnni", 127, TS_INT8_KERNELS(Int8Avx512Vnni), TS_INT8_KERNELS(Int8PairAvx512Vnni)});
    } else if (isa == "avxvnni") {
      v.push_back({"avxvnni", 127, TS_INT8_KERNELS(Int8AvxVnni), {}});
    } else if (isa == "avx2") {
      v.push_back({"avx2", 63, TS_INT8_KERNELS(Int8Avx2), TS_INT8_KERNELS(Int8PairAvx2)});
    } else {
      v.push_back({"scalar", 127, TS_INT8_KERNELS(Int8Scalar), {}});
    }
  }
  return v;
}

#undef TS_INT8_KERNELS

namespace {
std::atomic<const Int8MicroKernels*> g_forced{nullptr};

struct PickedInt8MicroKernels {
  Int8MicroKernels kernels;
  std::string env_error;
};

// The variant CpuInt8DotIsa names (its peak is calibrated), unless TIERSCOPE_INT8_KERNELS
// names another this CPU runs.
const PickedInt8MicroKernels& Picked() {
  static const PickedInt8MicroKernels picked = [] {
    PickedInt8MicroKernels p;
    p.kernels = PickKernelVariant(AvailableInt8MicroKernels(), CpuInt8DotIsa(), "TIERSCOPE_INT8_KERNELS", "INT8",
                                  &p.env_error);
    return p;
  }();
  return picked;
}
}  // namespace

const Int8MicroKernels& GetInt8MicroKernels() {
  const Int8MicroKernels* forced = g_forced.load(std::memory_order_acquire);
  return forced != nullptr ? *forced : Picked().kernels;
}

const std::string& Int8MicroKernelsEnvError() { return Picked().env_error; }

ScopedInt8MicroKernels::ScopedInt8MicroKernels(const Int8MicroKernels& variant)
    : ScopedKernelVariant(g_forced, variant) {}

}  // namespace tierscope
