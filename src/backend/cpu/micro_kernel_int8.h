// The INT8 micro-kernels of the dynamically quantized GEMM: u8 activation codes [0, 255]
// times s8 weights, summed exactly in int32. B is packed in 16-column panels of 4-deep
// groups, [K/4][16][4] bytes (64 bytes a group), the layout the dot instructions read:
// one zmm (AVX512-VNNI vpdpbusd), two ymm (AVX-VNNI vpdpbusd, AVX2 vpmaddubsw) a group.
// AVX2 has no exact u8 x s8 dot: vpmaddubsw adds each pair of products into int16 with
// saturation, exact only while 2 x 255 x |w| <= 32,767, so its weights are quantized to 7
// bits (|w| <= 63, as ONNX Runtime's reduce_range does for CPUs without VNNI): a variant's
// weight_max says which codes it sums exactly, and the weights are quantized for it.
// c[r][0..16) = sum_k a[r*lda + k] * b[k] over kq groups; c is overwritten.
#ifndef TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_INT8_H_
#define TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_INT8_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/kernel_variant.h"
#include "backend/cpu/micro_kernel.h"

namespace tierscope {

constexpr int kQK = 4;                  // k values per 32-bit group
constexpr int kQGroupBytes = kNR * kQK;  // one group of a panel: 16 columns x 4 k
constexpr int kQActMax = 255;            // the largest activation code, on every variant

// lda, ldc and panel strides below: a's row stride in bytes, c's in int32s.
using Int8MicroKernelFn = void (*)(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b,
                                   int32_t* c, int64_t ldc);
// A whole tile at once (AMX): c[rows][16 x panels] = a . panels, for kq a multiple of 16.
// It reads a and writes c for RoundUp(rows, 16) rows (tiles are 16 rows high).
using Int8TileFn = void (*)(int64_t rows, int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b,
                            int64_t panels, int64_t panel_stride, int32_t* c, int64_t ldc);
// Two adjacent panels: c[r][0..16) from b0, c[r][16..32) from b1.
using Int8MicroKernelPairFn = void (*)(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b0,
                                       const int8_t* b1, int32_t* c, int64_t ldc);

constexpr int64_t kAmxRows = 16;  // rows of an AMX tile
constexpr int64_t kAmxKq = 16;    // 4-deep groups of an AMX tile (64 bytes a row)

struct Int8MicroKernels {
  const char* isa = "scalar";  // "amx-int8", "avx512vnni", "avxvnni", "avx2", "scalar"
  // The largest |weight code| it sums exactly: 127, or 63 for AVX2's vpmaddubsw. Weights
  // are quantized to the variant's range when they are packed.
  int weight_max = 127;
  // Whether this variant runs beside 16-lane row code (AVX512-VNNI, AMX): the
  // dequantization and the row quantization that go with it use 16 lanes, else 8.
  bool avx512() const {
    const std::string_view v = isa;
    return v == "avx512vnni" || v == "amx-int8";
  }
  Int8MicroKernelFn single[kMR + 1] = {};
  Int8MicroKernelPairFn pair[kMR + 1] = {};  // null where the ISA has no pair kernel
  Int8TileFn tile = nullptr;                  // AMX only; used when kq % kAmxKq == 0

  // c[rows][16 x panels] = a[rows][4 kq] . panels (each kq x 64 bytes, `panel_stride`
  // bytes apart); c has row stride ldc. With a tile kernel and kq a multiple of 16, a is
  // read and c written for RoundUp(rows, 16) rows: callers pad both.
  void Run(int64_t rows, int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b,
           int64_t panels, int64_t panel_stride, int32_t* c, int64_t ldc) const {
    if (tile != nullptr && kq % kAmxKq == 0) return tile(rows, kq, a, lda, b, panels, panel_stride, c, ldc);
    for (int64_t p = 0; p < panels;) {
      const bool two = pair[1] != nullptr && p + 1 < panels;
      for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
        const int64_t mr = rows - r0 < kMR ? rows - r0 : kMR;
        if (two) {
          pair[mr](kq, a + r0 * lda, lda, b + p * panel_stride, b + (p + 1) * panel_stride,
                   c + r0 * ldc + p * kNR, ldc);
        } else {
          single[mr](kq, a + r0 * lda, lda, b + p * panel_stride, c + r0 * ldc + p * kNR, ldc);
        }
      }
      p += two ? 2 : 1;
    }
  }
};

// The INT8 micro-kernels every INT8 Linear uses: the fastest this CPU supports, the one
// TIERSCOPE_INT8_KERNELS names (one of CpuInt8DotIsas()), or the variant a
// ScopedInt8MicroKernels in force names.
const Int8MicroKernels& GetInt8MicroKernels();
// Empty, or why TIERSCOPE_INT8_KERNELS cannot be honoured (it names no variant this CPU
// runs); the INT8 weight packing returns it as an error, before any INT8 GEMM runs.
const std::string& Int8MicroKernelsEnvError();

// Tests: runs the INT8 Linear on `variant` (one of AvailableInt8MicroKernels()) while in
// scope, so the variants this host does not pick — AVX2's 7-bit weights, the 8-lane
// dequantization — are tested end to end too; weights are packed for the variant in force
// (a Linear refuses weights whose codes it cannot sum exactly). Not for concurrent use. A whole
// process (the CLI, the Python suites) is forced by TIERSCOPE_INT8_KERNELS=<isa>.
class ScopedInt8MicroKernels : public ScopedKernelVariant<Int8MicroKernels> {
 public:
  explicit ScopedInt8MicroKernels(const Int8MicroKernels& variant);
};
// Every variant this CPU can run, fastest first (the first is GetInt8MicroKernels'); the
// tests check each against exact integer sums.
std::vector<Int8MicroKernels> AvailableInt8MicroKernels();

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_INT8_H_
