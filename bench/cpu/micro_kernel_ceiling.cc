// The FP32 micro-kernels' ceiling on this CPU: each form the GEMM and attention use
// (6x16, 6x32 pair, 8x48 wide, where the ISA has them) on one thread with A, B and C in
// L1, against the calibrated one-thread FMA peak, beside a loop of one broadcast load per
// FMA (the least memory traffic any GEMM micro-kernel has). A GEMM cannot run closer to
// the peak than its micro-kernel does here, so this bounds `tierscope kernel`'s figures.
// Where the CPU has BF16 arithmetic, the BF16 dot kernels' forms (8 rows x 1-3 panels)
// against the calibrated one-thread BF16 dot peak; and the INT8 kernels' forms (6 rows x 1
// or 2 panels) against the calibrated one-thread INT8 dot peak. Beside the forms, a whole
// task tile at the GEMM's depths (48 rows x 6 panels, panel after panel as gemm.cc runs
// it; its B outgrows L1, so it bounds the GEMM more closely than the forms do), over FP32
// panels and over BF16/FP16 ones as MicroKernels::RunHalf widens them.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "backend/cpu/micro_kernel_int8.h"
#include "core/cpu_info.h"
#include "inspect/calibration.h"

namespace tierscope {
namespace {

using Clock = std::chrono::steady_clock;

// Best GFLOP/s over 5 trials of about 50 ms of `call` (which does `flops` each time).
template <typename Call>
double BestGflops(double flops, Call call) {
  double best = 0;
  int64_t iters = 1;
  for (;;) {  // size a trial to ~50 ms
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) call();
    if (std::chrono::duration<double>(Clock::now() - t0).count() > 0.05) break;
    iters *= 2;
  }
  for (int trial = 0; trial < 5; ++trial) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) call();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, flops * static_cast<double>(iters) / s / 1e9);
  }
  return best;
}

// 16 accumulators, each FMA fed by its own broadcast from L1: the loads-per-FMA floor.
__attribute__((target("avx512f"), noinline)) float BroadcastFmaLoop(int64_t n, const float* a) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 b = _mm512_set1_ps(1.0000001f);
  for (int64_t k = 0; k < n; ++k) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[(i & 7) + (k & 63)]), b, acc[i]);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

int Main() {
  auto peaks = LoadOrMeasurePeaks(0, /*recalibrate=*/false);
  if (!peaks.ok()) {
    std::fprintf(stderr, "micro_kernel_ceiling: %s\n", peaks.status().ToString().c_str());
    return 1;
  }
  const double peak = peaks->fp32_flops_1t / 1e9;
  const MicroKernels& mk = GetMicroKernels();
  std::printf("calibrated FP32 FMA peak, 1 thread: %.1f GFLOP/s (%s)\n", peak, peaks->isa.c_str());
  std::printf("%-28s %6s %10s %8s\n", "form", "depth", "GFLOP/s", "of peak");
  volatile float sink = 0;
  for (int64_t kc : {64, 128, 256, 512}) {
    constexpr int kTileRows = 48, kTilePanels = 6;  // a GEMM task's tile (gemm.cc)
    std::vector<float> a(static_cast<size_t>(kTileRows * kc), 0.5f),
        b(static_cast<size_t>(kTilePanels * kc * kNR), 0.25f),
        c(static_cast<size_t>(kTileRows * kTilePanels * kNR), 0.0f), scratch(static_cast<size_t>(kc * kNR));
    const int64_t stride = kc * kNR;
    auto row = [&](const char* form, int rows, int panels, auto call) {
      const double g = BestGflops(2.0 * rows * panels * kNR * kc, call);
      std::printf("%-28s %6lld %10.1f %7.0f%%\n", form, static_cast<long long>(kc), g, 100 * g / peak);
    };
    row("single 6x16", kMR, 1, [&] { mk.by_rows[kMR](kc, a.data(), kc, b.data(), c.data(), kNR); });
    if (mk.has_pairs()) {
      row("pair 6x32", kMR, 2, [&] {
        mk.pair_by_rows[kMR](kc, a.data(), kc, b.data(), b.data() + stride, c.data(), 2 * kNR);
      });
    }
    if (mk.has_wide()) {
      row("wide 8x48", kMRWide, kWidePanels, [&] {
        mk.wide_by_rows[kMRWide](kc, a.data(), kc, b.data(), stride, c.data(), kWidePanels * kNR);
      });
    }
    // A whole task tile (48 rows x 96 columns) as GemmTile runs it on a variant without
    // wide kernels: panel after panel, the rows streaming past each (depths up to kKC).
    const bool tile = kc <= 128;
    if (tile && !mk.has_wide()) {
      row("tile 48x96", kTileRows, kTilePanels, [&] {
        for (int p = 0; p < kTilePanels; ++p) {
          for (int r0 = 0; r0 < kTileRows; r0 += kMR) {
            float* ct = c.data() + r0 * kTilePanels * kNR + p * kNR;
            mk.by_rows[kMR](kc, a.data() + r0 * kc, kc, b.data() + p * stride, ct, kTilePanels * kNR);
          }
        }
      });
    }
    // The same forms over BF16 / FP16 panels, widened in registers (batch-bf16/fp16 on
    // CPUs without BF16/FP16 arithmetic), and the tile, where a variant widens each panel
    // once for its rows.
    const std::vector<uint16_t> h(b.size(), 0x3e80);  // 0.25 in BF16 (FP16 reads it as ~1.6)
    for (const auto& form : {std::pair<const char*, const HalfPanelKernels*>{"bf16", &mk.bf16},
                             std::pair<const char*, const HalfPanelKernels*>{"f16", &mk.f16}}) {
      const char* name = form.first;  // (clang: lambdas cannot capture structured bindings)
      const HalfPanelKernels* hk = form.second;
      const std::string single = std::string("single 6x16, ") + name + " B";
      row(single.c_str(), kMR, 1, [&] { hk->by_rows[kMR](kc, a.data(), kc, h.data(), c.data(), kNR); });
      const std::string tile_form = std::string("tile 48x96, ") + name + " B";
      if (tile) {
        row(tile_form.c_str(), kTileRows, kTilePanels, [&] {
          mk.RunHalf(*hk, kTileRows, kc, a.data(), kc, h.data(), kTilePanels, stride, c.data(), kTilePanels * kNR,
                     true, scratch.data());
        });
      }
      if (hk->has_wide()) {
        const std::string wide = std::string("wide 8x48, ") + name + " B";
        row(wide.c_str(), kMRWide, kWidePanels, [&] {
          hk->wide_by_rows[kMRWide](kc, a.data(), kc, h.data(), stride, c.data(), kWidePanels * kNR);
        });
      }
    }
    sink = sink + c[0];
  }
  const Bf16Kernels& bk = GetBf16Kernels();
  if (bk.dot() && peaks->bf16_dot) {
    const double bpeak = peaks->bf16_flops_1t / 1e9;
    std::printf("calibrated BF16 dot peak, 1 thread: %.1f GFLOP/s (%s)\n", bpeak, bk.isa);
    for (int64_t kc : {64, 128, 256, 512}) {
      const std::vector<uint16_t> a(static_cast<size_t>(8 * kc), 0x3f00), b(static_cast<size_t>(3 * kc * kNR), 0x3e80);
      std::vector<float> c(static_cast<size_t>(8 * 3 * kNR), 0.0f);
      for (int panels = 1; panels <= kBMaxPanels; ++panels) {
        const double g = BestGflops(2.0 * kMRWide * panels * kNR * kc, [&] {
          bk.fn[panels][kMRWide](kc, a.data(), kc, b.data(), kc * kNR, c.data(), kBMaxPanels * kNR, true, nullptr);
        });
        std::printf("%-28s %6lld %10.1f %7.0f%%\n", ("bf16 dot 8x" + std::to_string(16 * panels)).c_str(),
                    static_cast<long long>(kc), g, 100 * g / bpeak);
      }
      sink = sink + c[0];
    }
  }
  const Int8MicroKernels& ik = GetInt8MicroKernels();
  if (!peaks->int8_dot.empty()) {
    const double ipeak = peaks->int8_ops_1t / 1e9;
    std::printf("calibrated INT8 dot peak, 1 thread: %.1f GOP/s (%s; kernels %s)\n", ipeak, peaks->int8_dot.c_str(),
                ik.isa);
    if (ik.tile != nullptr) {  // AMX: whole tiles in the GEMM; these are its VNNI forms (K not a multiple of 64)
      std::printf("(the GEMM runs AMX tiles where K is a multiple of 64; below, its VNNI forms, against the same peak)\n");
    }
    for (int64_t kq : {32, 96, 128}) {  // K = 128, 384, 512
      const std::vector<uint8_t> a(static_cast<size_t>(kMR * kq * kQK), 3);
      const std::vector<int8_t> b(static_cast<size_t>(2 * kq * kQGroupBytes), 5);
      std::vector<int32_t> c(static_cast<size_t>(kMR * 2 * kNR), 0);
      auto row = [&](const char* form, int panels, auto call) {
        const double g = BestGflops(2.0 * kMR * panels * kNR * kq * kQK, call);
        std::printf("%-28s %6lld %10.1f %7.0f%%\n", form, static_cast<long long>(kq * kQK), g, 100 * g / ipeak);
      };
      row("int8 single 6x16", 1, [&] { ik.single[kMR](kq, a.data(), kq * kQK, b.data(), c.data(), kNR); });
      if (ik.pair[kMR] != nullptr) {
        row("int8 pair 6x32", 2, [&] {
          ik.pair[kMR](kq, a.data(), kq * kQK, b.data(), b.data() + kq * kQGroupBytes, c.data(), 2 * kNR);
        });
      }
      sink = sink + static_cast<float>(c[0]);
    }
  }
  if (CpuRunsIsa("avx512f")) {
    std::vector<float> a(128, 1.0f);
    const int64_t n = 1 << 16;
    const double g = BestGflops(2.0 * 16 * 16 * n, [&] { sink = sink + BroadcastFmaLoop(n, a.data()); });
    std::printf("%-28s %6s %10.1f %7.0f%%\n", "one broadcast per FMA", "-", g, 100 * g / peak);
  }
  return 0;
}

}  // namespace
}  // namespace tierscope

int main() { return tierscope::Main(); }
