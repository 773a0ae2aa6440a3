// CpuBackend: host memory with live/peak accounting and a block cache (freed blocks are
// kept by size class and handed out again, so a steady stream of same-shaped forwards neither
// calls the allocator nor faults fresh pages in), a backend-owned thread pool, and
// Launch, which runs a kernel as a parallel-for over its grid of tasks.
#ifndef TIERSCOPE_BACKEND_CPU_CPU_BACKEND_H_
#define TIERSCOPE_BACKEND_CPU_CPU_BACKEND_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/kernels.h"
#include "core/function_ref.h"
#include "core/thread_pool.h"

namespace tierscope {

// The body of one task: (task index in [0, grid.count()), worker index).
using TaskFn = FunctionRef<void(int64_t, int)>;

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int threads);
  ~CpuBackend() override;

  // Allocator.
  StatusOr<void*> Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  MemoryStats memory_stats() const override;
  int64_t AvailableMemory() const override;
  void ResetPeakMemory() override;

  // Backend.
  const DeviceProps& props() const override { return props_; }
  Status CopyHostToDevice(void* dst, const void* src, size_t bytes) override;
  Status CopyDeviceToHost(void* dst, const void* src, size_t bytes) override;
  Status Synchronize() override { return OkStatus(); }  // launches are synchronous
  Kernels& kernels() override { return *kernels_; }
  void SetObserver(BackendObserver* observer) override { observer_ = observer; }
  void SetLaunchHook(LaunchHook* hook) override { hook_ = hook; }
  Status FlushCaches() override;

  // Runs `fn` once per task of desc.grid on the pool. Returns when all tasks are done.
  Status Launch(const LaunchDesc& desc, TaskFn fn);
  // The same, calling `each_run` before every run of the tasks, so state they share starts
  // afresh each time (a LaunchHook may run them more than once: the kernel replays).
  Status Launch(const LaunchDesc& desc, TaskFn fn, FunctionRef<void()> each_run);

  int num_workers() const { return pool_.num_threads(); }
  // Per-worker FP32 scratch of at least `floats` elements. Call EnsureScratch before
  // the launch whose tasks use it, so no task allocates.
  void EnsureScratch(size_t floats);
  float* scratch(int worker) { return scratch_[worker].data(); }
  // One FP32 buffer of at least `floats` elements that the tasks of the next launch share
  // (16-bit weight panels widened once a launch: widened_panels.h). Call before the launch.
  // It is kept, an Allocate like a tensor's (counted in the live and peak bytes, told to
  // the observer); growing it Deallocates the old buffer first: its contents are not kept.
  StatusOr<float*> EnsureSharedScratch(size_t floats);
  size_t shared_scratch_floats() const { return shared_scratch_floats_; }

 private:
  DeviceProps props_;
  ThreadPool pool_;
  std::unique_ptr<Kernels> kernels_;
  // Runs every task of `desc`, timing each, into one span per worker.
  KernelRun RunTimed(const LaunchDesc& desc, TaskFn fn);

  BackendObserver* observer_ = nullptr;
  LaunchHook* hook_ = nullptr;
  std::vector<std::vector<float>> scratch_;
  size_t scratch_floats_ = 0;
  float* shared_scratch_ = nullptr;  // from Allocate (EnsureSharedScratch)
  size_t shared_scratch_floats_ = 0;
  std::vector<std::byte> flush_;  // FlushCaches' buffer, twice the last-level cache
  int64_t flushes_ = 0;
  MemoryAccounting accounting_;
  // Freed blocks by size class, at most 1 GiB in all (none under AddressSanitizer,
  // so use-after-free is caught).
  BlockCache cache_;
};

// The CPU implementations of each op family (one file each).
Status CpuLinear(CpuBackend& be, const Tensor& x, int64_t rows, int64_t x_row_stride,
                 const PackedWeight& w, const Tensor* bias, Epilogue epilogue, Tensor& y);
// Whether CpuLinear over `rows` rows of float weight w has each worker take whole column
// blocks (few row blocks, weights past a core's L2), not rows.
bool CpuLinearByColumns(CpuBackend& be, int64_t rows, const PackedWeight& w);
// Whether CpuLinear over `rows` rows of 16-bit weight w widens its panels to FP32 once for
// the launch (widened_panels.h), not once a task: on variants without in-register
// widening (AVX2, scalar), where 4 row blocks or more, of more than 6 rows, read each
// column block.
bool CpuLinearWidensPanelsOnce(CpuBackend& be, int64_t rows, const PackedWeight& w);
// The bytes a Linear (or LinearAddLayerNorm) over `rows` rows of w may still grow be's
// shared scratch by (its panels widened to FP32, beyond what the scratch holds), or 0.
int64_t CpuLinearWorkspaceGrowth(const CpuBackend& be, int64_t rows, const PackedWeight& w);
StatusOr<std::unique_ptr<PackedWeight>> CpuPackWeight(CpuBackend& be, const HostTensor& w,
                                                      DType dtype);
// The INT8 pair (gemm_int8.cc): weights quantized per output channel; x and y FP32.
StatusOr<std::unique_ptr<PackedWeight>> CpuPackWeightInt8(CpuBackend& be, const HostTensor& w);
Status CpuLinearInt8(CpuBackend& be, const Tensor& x, int64_t rows, int64_t x_row_stride,
                     const PackedWeight& w, const Tensor* bias, Epilogue epilogue, Tensor& y);
// Activations quantized where they are produced (gemm_int8.cc; see Kernels::LinearInt8).
StatusOr<QuantizedRows> CpuNewQuantizedRows(CpuBackend& be, int64_t rows, int64_t k);
Status CpuQuantizeRows(CpuBackend& be, const Tensor& x, int64_t x_row_stride, QuantizedRows& q);
Status CpuLinearInt8Codes(CpuBackend& be, const QuantizedRows& x, const PackedWeight& w, const Tensor* bias,
                          Epilogue epilogue, Tensor* y, QuantizedRows* y_codes);
// LinearInt8AddLayerNorm's LayerNorm: out = LayerNorm(y + residual) * gamma + beta, FP32.
struct AddLayerNormArgs {
  const Tensor* residual;
  const Tensor* gamma;
  const Tensor* beta;
  float eps;
};
Status CpuLinearInt8AddLayerNorm(CpuBackend& be, const QuantizedRows& x, const PackedWeight& w, const Tensor* bias,
                                 const AddLayerNormArgs& ln, Tensor& out, QuantizedRows* codes);
// Kernels::LinearAddLayerNorm (gemm.cc): float activations, or FP32 over INT8 weights.
// Where CpuLinearByColumns, it runs the Linear's launch and then LayerNorm's in place.
Status CpuLinearAddLayerNorm(CpuBackend& be, const Tensor& x, int64_t rows, int64_t x_row_stride,
                             const PackedWeight& w, const Tensor* bias, const AddLayerNormArgs& ln, Tensor& out);
// The rows of one FP32 micro-kernel call on the variant in force (8 on AVX-512's wide
// kernels, else 6): the granule of a float GEMM's row blocks.
int64_t CpuGemmRowGranule();
// The L2 cache of one core: the first level-2 cache CPU 0 lists, 1 MiB where sysfs says nothing.
int64_t CpuL2BytesPerCore();
// An INT8 Linear's FP32 output above this many bytes (the L2 caches of `workers` cores
// together) is written with non-temporal stores.
double CpuInt8StreamingThresholdBytes(int workers);
// Kernels::RowBlockRows on `workers` cores: rows whose largest activation fills 3/4 of their
// L2 caches together, but at least 512 rows a worker (below that, re-reading the weights
// and the launches cost more than the cache saves: measured, a block of 4 samples of 128
// tokens runs the tiny model's INT8 slower than one of 8 on 2 cores), and at least as many
// rows as make the weights, which every block reads again from beyond L2, no more bytes a
// row than its largest activation, rounded up (all-MiniLM-L6-v2, 11-43 MB of weights:
// 1,024-row blocks read them 8 times a batch of 64 and ran 5-9% slower in every precision
// on a Zen 4 with 1 MiB of L2 a core than one block; the tiny model, 0.4-1.6 MB, keeps
// 1,024).
int64_t CpuRowBlockRows(int workers, int64_t bytes_per_row, int64_t weight_bytes = 0);
// `positions`: each token's position id (packed sequences), or null: its index in its row.
Status CpuEmbeddingSum(CpuBackend& be, const Tensor& ids, const Tensor& type_ids,
                       const Tensor& word, const Tensor& pos, const Tensor& type,
                       Tensor& out, const Tensor* positions = nullptr);
// `codes`: FP32 output rows also quantized into these (Kernels::LayerNormQuantized), or null.
// `out` may be `x` (each row is read whole before it is written).
Status CpuLayerNorm(CpuBackend& be, const Tensor& x, const Tensor* residual,
                    const Tensor& gamma, const Tensor& beta, float eps, Tensor& out,
                    QuantizedRows* codes = nullptr);
// `offsets`: where each of B packed sequences starts in qkv [1, T, 3H] (I32 [B + 1]), or
// null: qkv is [B, S, 3H].
// `math`: kBf16WhereNative computes FP32 activations' attention on the BF16 dot kernels
// where they run (Q, K, V and the probabilities rounded to BF16 as they are packed).
// `codes`: FP32 out's rows also quantized, each by the task that finishes its last head.
Status CpuAttention(CpuBackend& be, const Tensor& qkv, const Tensor& mask, int heads,
                    Tensor& out, const Tensor* offsets = nullptr,
                    AttentionMath math = AttentionMath::kInputDtype, QuantizedRows* codes = nullptr);
Status CpuCopyInto(CpuBackend& be, const Tensor& src, Tensor& dst, size_t dst_byte_offset);

// Loads element i of a float tensor (F32/F16/BF16) as float, and stores one.
inline float LoadF(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::kF16: return HalfToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16: return BF16ToFloat(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
inline void StoreF(DType t, void* p, int64_t i, float v) {
  switch (t) {
    case DType::kF16: static_cast<uint16_t*>(p)[i] = FloatToHalf(v); break;
    case DType::kBF16: static_cast<uint16_t*>(p)[i] = FloatToBF16(v); break;
    default: static_cast<float*>(p)[i] = v;
  }
}

// n elements at `src` as floats: `src` itself for F32, else converted into `tmp`.
inline const float* AsFloat(DType t, const void* src, float* tmp, int64_t n) {
  if (t == DType::kF32) return static_cast<const float*>(src);
  ToFloat(t, src, tmp, static_cast<size_t>(n));
  return tmp;
}

// "f32", "f16", "bf16" — the dtype tag used in kernel names.
const char* DTypeTag(DType t);

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_CPU_BACKEND_H_
