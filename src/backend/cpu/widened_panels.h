// A launch's 16-bit weight panels widened to FP32 once, column block by column block, for
// CPUs whose FP32 kernels cannot widen them in the registers for free (AVX2, scalar:
// HalfPanelKernels::widen). Widening a panel once a task (MicroKernels::RunHalf) costs a
// conversion for every 48 rows; once a launch, one for all of them (1,024 rows in a
// batch-bf16 row block). The first task to reach a column block widens it into the
// backend's shared scratch; the others read it there, as the FP32 GEMM reads its panels.
#ifndef TIERSCOPE_BACKEND_CPU_WIDENED_PANELS_H_
#define TIERSCOPE_BACKEND_CPU_WIDENED_PANELS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "backend/cpu/micro_kernel.h"

namespace tierscope {

class WidenedPanels {
 public:
  WidenedPanels() = default;  // off: every Claim is null
  // `blocks` column blocks of `block_elems` elements each (the last may be short), `total`
  // elements in all, from `src` into `dst` (the same layout in FP32).
  WidenedPanels(WidenFn widen, const uint16_t* src, float* dst, int64_t block_elems, int64_t total, int64_t blocks)
      : widen_(widen), src_(src), dst_(dst), block_elems_(block_elems), total_(total), blocks_(blocks),
        state_(new std::atomic<uint8_t>[static_cast<size_t>(blocks)]) {
    Reset();
  }
  bool on() const { return widen_ != nullptr; }
  // No block widened: before each run of a launch's tasks (CpuBackend::Launch's each_run;
  // a kernel replay runs them again, and must widen again as the workload does).
  void Reset() {
    for (int64_t b = 0; b < blocks_; ++b) state_[b].store(kNone, std::memory_order_relaxed);
  }
  // Column block b's FP32 panels, widened by this call if no task has claimed them; null
  // while another task widens them (the caller then widens its own tile's, as RunHalf
  // does: the same values, so the result does not depend on which task won).
  const float* Claim(int64_t b) {
    if (widen_ == nullptr) return nullptr;
    float* out = dst_ + b * block_elems_;
    uint8_t s = state_[b].load(std::memory_order_acquire);
    if (s == kNone && state_[b].compare_exchange_strong(s, kBusy, std::memory_order_acq_rel)) {
      widen_(src_ + b * block_elems_, out, std::min(block_elems_, total_ - b * block_elems_));
      state_[b].store(kReady, std::memory_order_release);
      return out;
    }
    return s == kReady ? out : nullptr;
  }

 private:
  static constexpr uint8_t kNone = 0, kBusy = 1, kReady = 2;
  WidenFn widen_ = nullptr;
  const uint16_t* src_ = nullptr;
  float* dst_ = nullptr;
  int64_t block_elems_ = 0, total_ = 0, blocks_ = 0;
  std::unique_ptr<std::atomic<uint8_t>[]> state_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_WIDENED_PANELS_H_
