// Every instruction-set variant of the FP32 micro-kernel this CPU can run (AVX-512,
// AVX2+FMA, scalar), not only the one picked at run time, against a double-precision
// reference: each row count, accumulate and overwrite, odd depths and row strides; the
// pair and wide (8x48) forms too where the ISA has them, and the forms over BF16/FP16 panels.
#include "backend/cpu/micro_kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "core/splitmix.h"
#include "tierscope/dtype.h"

namespace tierscope {
namespace {

float Uniform(SplitMix64& rng) {
  return static_cast<float>(static_cast<double>(rng.Next() >> 11) * 0x1.0p-53 * 2 - 1);
}

TEST(MicroKernels, EveryVariantMatchesADoubleReference) {
  const std::vector<MicroKernelVariant> variants = AvailableMicroKernels();
  ASSERT_FALSE(variants.empty());
  EXPECT_EQ(std::string(variants.back().isa), "scalar");  // always there, always tested
  std::string tested;
  for (const MicroKernelVariant& v : variants) tested += (tested.empty() ? "" : ", ") + std::string(v.isa);
  RecordProperty("variants", tested);  // which ran on this host (AVX-512 only where it exists)
  std::cout << "micro-kernel variants tested on this CPU: " << tested << "\n";
  SplitMix64 rng(2026);
  for (const MicroKernelVariant& v : variants) {
    for (int64_t kc : {1, 7, 64, 129}) {
      const int64_t lda = kc + 3, ldc = kNR + 5;  // strides wider than the data
      for (int mr = 1; mr <= kMR; ++mr) {
        for (bool accumulate : {true, false}) {
          std::vector<float> a(static_cast<size_t>(mr * lda)), b(static_cast<size_t>(kc * kNR));
          std::vector<float> c(static_cast<size_t>(mr * ldc));
          for (float& x : a) x = Uniform(rng);
          for (float& x : b) x = Uniform(rng);
          for (float& x : c) x = Uniform(rng);
          std::vector<double> want(c.size());
          for (int r = 0; r < mr; ++r) {
            for (int j = 0; j < ldc; ++j) {
              double acc = accumulate || j >= kNR ? c[r * ldc + j] : 0.0;
              if (j < kNR) {
                for (int64_t k = 0; k < kc; ++k) acc += double{a[r * lda + k]} * b[k * kNR + j];
              }
              want[r * ldc + j] = acc;
            }
          }
          const MicroKernelFn fn = accumulate ? v.kernels.by_rows[mr] : v.kernels.overwrite[mr];
          ASSERT_NE(fn, nullptr);
          fn(kc, a.data(), lda, b.data(), c.data(), ldc);
          for (int r = 0; r < mr; ++r) {
            for (int j = 0; j < ldc; ++j) {
              // FP32 accumulation of kc products of magnitude <= 1.
              ASSERT_NEAR(c[r * ldc + j], want[r * ldc + j], 1e-6 * (kc + 1))
                  << v.isa << " kc " << kc << " rows " << mr << (accumulate ? " +=" : " =")
                  << " at [" << r << "][" << j << "]" << (j >= kNR ? " (past the panel: untouched)" : "");
            }
          }
        }
      }
    }
  }
}

TEST(MicroKernels, PairKernelsMatchTwoSinglePanelsAndADoubleReference) {
  SplitMix64 rng(7);
  int with_pairs = 0;
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    if (!v.kernels.has_pairs()) continue;
    ++with_pairs;
    for (int64_t kc : {1, 7, 64, 129}) {
      const int64_t lda = kc + 1, ldc = 2 * kNR + 3;
      for (int mr = 1; mr <= kMR; ++mr) {
        for (bool accumulate : {true, false}) {
          std::vector<float> a(static_cast<size_t>(mr * lda)), b0(static_cast<size_t>(kc * kNR)),
              b1(static_cast<size_t>(kc * kNR)), c(static_cast<size_t>(mr * ldc));
          for (auto* v2 : {&a, &b0, &b1, &c}) {
            for (float& x : *v2) x = Uniform(rng);
          }
          std::vector<double> want(c.size());
          for (int r = 0; r < mr; ++r) {
            for (int j = 0; j < ldc; ++j) {
              double acc = accumulate || j >= 2 * kNR ? c[r * ldc + j] : 0.0;
              if (j < 2 * kNR) {
                const std::vector<float>& b = j < kNR ? b0 : b1;
                for (int64_t k = 0; k < kc; ++k) acc += double{a[r * lda + k]} * b[k * kNR + j % kNR];
              }
              want[r * ldc + j] = acc;
            }
          }
          const MicroKernelPairFn fn = accumulate ? v.kernels.pair_by_rows[mr] : v.kernels.pair_overwrite[mr];
          ASSERT_NE(fn, nullptr);
          fn(kc, a.data(), lda, b0.data(), b1.data(), c.data(), ldc);
          for (int r = 0; r < mr; ++r) {
            for (int j = 0; j < ldc; ++j) {
              ASSERT_NEAR(c[r * ldc + j], want[r * ldc + j], 1e-6 * (kc + 1))
                  << v.isa << " pair kc " << kc << " rows " << mr << " at [" << r << "][" << j << "]";
            }
          }
        }
      }
    }
  }
  RecordProperty("variants_with_pairs", with_pairs);
  // Where the CPU has AVX-512, its pair kernels ran here.
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    if (std::string(v.isa) == "avx512f") {
      EXPECT_TRUE(v.kernels.has_pairs());
    }
  }
}

TEST(MicroKernels, WideKernelsMatchADoubleReferenceOverThreeStridedPanels) {
  SplitMix64 rng(11);
  int with_wide = 0;
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    if (!v.kernels.has_wide()) continue;
    ++with_wide;
    for (int64_t kc : {1, 7, 64, 129}) {
      const int64_t lda = kc + 2, ldc = kWidePanels * kNR + 5;
      const int64_t panel_stride = kc * kNR + 16;  // panels apart, with a gap between them
      for (int mr = 1; mr <= kMRWide; ++mr) {
        for (bool accumulate : {true, false}) {
          std::vector<float> a(static_cast<size_t>(mr * lda)), b(static_cast<size_t>(kWidePanels * panel_stride)),
              c(static_cast<size_t>(mr * ldc));
          for (auto* v2 : {&a, &b, &c}) {
            for (float& x : *v2) x = Uniform(rng);
          }
          std::vector<double> want(c.size());
          for (int r = 0; r < mr; ++r) {
            for (int j = 0; j < ldc; ++j) {
              const bool inside = j < kWidePanels * kNR;
              double acc = accumulate || !inside ? c[r * ldc + j] : 0.0;
              if (inside) {
                const float* panel = b.data() + (j / kNR) * panel_stride;
                for (int64_t k = 0; k < kc; ++k) acc += double{a[r * lda + k]} * panel[k * kNR + j % kNR];
              }
              want[r * ldc + j] = acc;
            }
          }
          const MicroKernelWideFn fn = accumulate ? v.kernels.wide_by_rows[mr] : v.kernels.wide_overwrite[mr];
          ASSERT_NE(fn, nullptr);
          fn(kc, a.data(), lda, b.data(), panel_stride, c.data(), ldc);
          for (int r = 0; r < mr; ++r) {
            for (int j = 0; j < ldc; ++j) {
              ASSERT_NEAR(c[r * ldc + j], want[r * ldc + j], 1e-6 * (kc + 1))
                  << v.isa << " wide kc " << kc << " rows " << mr << (accumulate ? " +=" : " =") << " at [" << r
                  << "][" << j << "]";
            }
          }
        }
      }
    }
  }
  RecordProperty("variants_with_wide", with_wide);
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    if (std::string(v.isa) == "avx512f") {
      EXPECT_TRUE(v.kernels.has_wide());
    }
  }
}

TEST(MicroKernels, RunCoversEveryMixOfWidePairAndSinglePanels) {
  // 1..7 panels: wide calls, then pairs, then a single one, over row counts that leave
  // tails of the 8-row and the 6-row steps alike; every variant, not only the chosen one.
  SplitMix64 rng(13);
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    for (int64_t panels = 1; panels <= 7; ++panels) {
      for (int64_t rows : {1, 5, 8, 13, 21}) {
        for (bool accumulate : {true, false}) {
          const int64_t kc = 37, lda = kc + 3, ldc = panels * kNR + 2, stride = kc * kNR + 16;
          std::vector<float> a(static_cast<size_t>(rows * lda)), b(static_cast<size_t>(panels * stride)),
              c(static_cast<size_t>(rows * ldc));
          for (auto* v2 : {&a, &b, &c}) {
            for (float& x : *v2) x = Uniform(rng);
          }
          std::vector<double> want(c.begin(), c.end());
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t j = 0; j < panels * kNR; ++j) {
              double acc = accumulate ? c[r * ldc + j] : 0.0;
              const float* panel = b.data() + (j / kNR) * stride;
              for (int64_t k = 0; k < kc; ++k) acc += double{a[r * lda + k]} * panel[k * kNR + j % kNR];
              want[r * ldc + j] = acc;
            }
          }
          v.kernels.Run(rows, kc, a.data(), lda, b.data(), panels, stride, c.data(), ldc, accumulate);
          for (size_t i = 0; i < c.size(); ++i) {
            ASSERT_NEAR(c[i], want[i], 1e-6 * (kc + 1))
                << v.isa << " panels " << panels << " rows " << rows << (accumulate ? " +=" : " =") << " at " << i;
          }
        }
      }
    }
  }
}

TEST(MicroKernels, HalfPanelKernelsOfEveryVariantMatchADoubleReferenceOverWidenedPanels) {
  // BF16 and FP16 panels, widened in registers, or (AVX2, scalar: rows past one call)
  // widened once into the scratch (poisoned first) for the FP32 kernels: the same sums as
  // FP32 panels holding the widened values, within FP32 accumulation; single panels and,
  // where the ISA has them, wide calls, through Run's mix of both (1..7 panels, row tails
  // of 6 and of 8).
  SplitMix64 rng(17);
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    for (const bool bf16 : {true, false}) {
      const HalfPanelKernels& hk = bf16 ? v.kernels.bf16 : v.kernels.f16;
      ASSERT_NE(hk.by_rows[kMR], nullptr) << v.isa;
      EXPECT_EQ(hk.has_wide(), v.kernels.has_wide()) << v.isa;  // the FP32 forms' shapes
      EXPECT_EQ(hk.widen != nullptr, !hk.has_wide()) << v.isa;
      for (int64_t panels = 1; panels <= 7; ++panels) {
        for (int64_t rows : {1, 5, 8, 13}) {
          for (bool accumulate : {true, false}) {
            const int64_t kc = 37, lda = kc + 3, ldc = panels * kNR + 2, stride = kc * kNR + 16;
            std::vector<float> a(static_cast<size_t>(rows * lda)), c(static_cast<size_t>(rows * ldc));
            for (auto* v2 : {&a, &c}) {
              for (float& x : *v2) x = Uniform(rng);
            }
            std::vector<uint16_t> b(static_cast<size_t>(panels * stride));
            std::vector<float> wide(b.size());
            for (size_t i = 0; i < b.size(); ++i) {
              const float x = Uniform(rng);
              b[i] = bf16 ? FloatToBF16(x) : FloatToHalf(x);
              wide[i] = bf16 ? BF16ToFloat(b[i]) : HalfToFloat(b[i]);
            }
            std::vector<double> want(c.begin(), c.end());
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t j = 0; j < panels * kNR; ++j) {
                double acc = accumulate ? c[r * ldc + j] : 0.0;
                const float* panel = wide.data() + (j / kNR) * stride;
                for (int64_t k = 0; k < kc; ++k) acc += double{a[r * lda + k]} * panel[k * kNR + j % kNR];
                want[r * ldc + j] = acc;
              }
            }
            std::vector<float> scratch(static_cast<size_t>(kc * kNR), std::nanf(""));
            v.kernels.RunHalf(hk, rows, kc, a.data(), lda, b.data(), panels, stride, c.data(), ldc, accumulate,
                              scratch.data());
            for (size_t i = 0; i < c.size(); ++i) {
              ASSERT_NEAR(c[i], want[i], 1e-6 * (kc + 1))
                  << v.isa << (bf16 ? " bf16" : " f16") << " panels " << panels << " rows " << rows
                  << (accumulate ? " +=" : " =") << " at " << i;
            }
          }
        }
      }
    }
  }
}

TEST(MicroKernels, TheRunTimeChoiceIsTheFastestVariantOrTheOneTheEnvironmentNames) {
  const std::vector<MicroKernelVariant> all = AvailableMicroKernels();
  const char* env = std::getenv("TIERSCOPE_FP32_KERNELS");
  const MicroKernels* want = &all.front().kernels;
  for (const MicroKernelVariant& v : all) {
    if (env != nullptr && std::string(env) == v.isa) want = &v.kernels;
  }
  EXPECT_EQ(GetMicroKernels().by_rows[kMR], want->by_rows[kMR]);
  // The list tierscope device prints (and the golden tests force) is this one.
  std::vector<std::string> isas;
  for (const MicroKernelVariant& v : all) isas.emplace_back(v.isa);
  EXPECT_EQ(isas, CpuFp32KernelIsas());
}

}  // namespace
}  // namespace tierscope
