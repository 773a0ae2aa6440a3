// CpuBackend: accounting allocator, thread pool, launches, and the Kernels table that
// forwards each op family to its file.
#include "backend/cpu/cpu_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <system_error>

#include "backend/cpu/micro_kernel_bf16.h"
#include "core/allocator.h"
#include "core/cpu_info.h"

namespace tierscope {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;
// --threads may oversubscribe the cores (to study it), within reason.
constexpr int kMaxThreadsPerCpu = 16;
constexpr int kMaxThreadsFloor = 256;
// Under a sanitizer (ASan, TSan or MSan, GCC's or clang's: clang 14 defines no
// __SANITIZE_ADDRESS__), blocks are whole 64-byte lines (aligned_alloc's size must be a
// multiple of the alignment) and uncached, so its bounds and use-after-free checks see
// every buffer, up to its last line.
constexpr bool kSanitized = kSanitizedAllocator;

class CpuKernels : public Kernels {
 public:
  explicit CpuKernels(CpuBackend& be) : be_(be) {}
  bool SupportsPackedSequences() const override { return true; }
  bool QuantizesInProducer() const override { return true; }
  bool Int8RunsBf16Rows() const override { return GetBf16Kernels().dot(); }
  bool FusesAddLayerNorm() const override { return true; }
  int64_t LinearWorkspaceGrowth(int64_t rows, const PackedWeight& w) const override {
    return CpuLinearWorkspaceGrowth(be_, rows, w);
  }
  int64_t RowBlockRows(int64_t bytes_per_row, int64_t weight_bytes) const override {
    return CpuRowBlockRows(be_.num_workers(), bytes_per_row, weight_bytes);
  }

 protected:
  bool WidensHalfWeights(DType weights) const override {
    return (weights == DType::kF16 || weights == DType::kBF16) && !be_.props().HalfArithmetic(weights);
  }
  StatusOr<std::unique_ptr<PackedWeight>> DoPackWeight(const HostTensor& w, DType dtype) override {
    return CpuPackWeight(be_, w, dtype);
  }
  Status DoLinear(const Tensor& x, int64_t rows, int64_t x_row_stride, const PackedWeight& w,
                  const Tensor* bias, Epilogue epilogue, Tensor& y) override {
    return CpuLinear(be_, x, rows, x_row_stride, w, bias, epilogue, y);
  }
  Status DoEmbeddingSum(const Tensor& ids, const Tensor& type_ids, const Tensor& word,
                        const Tensor& pos, const Tensor& type, Tensor& out) override {
    return CpuEmbeddingSum(be_, ids, type_ids, word, pos, type, out);
  }
  Status DoLayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma,
                     const Tensor& beta, float eps, Tensor& out) override {
    return CpuLayerNorm(be_, x, residual, gamma, beta, eps, out);
  }
  Status DoAttention(const Tensor& qkv, const Tensor& mask, int heads, Tensor& out, AttentionMath math) override {
    return CpuAttention(be_, qkv, mask, heads, out, nullptr, math);
  }
  Status DoCopyInto(const Tensor& src, Tensor& dst, size_t dst_byte_offset) override {
    return CpuCopyInto(be_, src, dst, dst_byte_offset);
  }
  Status DoAttentionPacked(const Tensor& qkv, const Tensor& mask, const Tensor& offsets, int heads, Tensor& out,
                           AttentionMath math) override {
    return CpuAttention(be_, qkv, mask, heads, out, &offsets, math);
  }
  StatusOr<QuantizedRows> DoNewQuantizedRows(int64_t rows, int64_t k) override {
    return CpuNewQuantizedRows(be_, rows, k);
  }
  Status DoQuantizeRows(const Tensor& x, int64_t x_row_stride, QuantizedRows& q) override {
    return CpuQuantizeRows(be_, x, x_row_stride, q);
  }
  Status DoLinearInt8(const QuantizedRows& x, const PackedWeight& w, const Tensor* bias, Epilogue epilogue,
                      Tensor* y, QuantizedRows* y_codes) override {
    return CpuLinearInt8Codes(be_, x, w, bias, epilogue, y, y_codes);
  }
  Status DoLinearAddLayerNorm(const Tensor& x, int64_t rows, int64_t x_row_stride, const PackedWeight& w,
                              const Tensor* bias, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                              float eps, Tensor& out) override {
    return CpuLinearAddLayerNorm(be_, x, rows, x_row_stride, w, bias, {&residual, &gamma, &beta, eps}, out);
  }
  Status DoLinearInt8AddLayerNorm(const QuantizedRows& x, const PackedWeight& w, const Tensor* bias,
                                  const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
                                  Tensor& out, QuantizedRows* codes) override {
    return CpuLinearInt8AddLayerNorm(be_, x, w, bias, {&residual, &gamma, &beta, eps}, out, codes);
  }
  Status DoLayerNormQuantized(const Tensor& x, const Tensor* residual, const Tensor& gamma, const Tensor& beta,
                              float eps, Tensor& out, QuantizedRows& codes) override {
    return CpuLayerNorm(be_, x, residual, gamma, beta, eps, out, &codes);
  }
  Status DoAttentionQuantized(const Tensor& qkv, const Tensor& mask, const Tensor* offsets, int heads, Tensor& out,
                              AttentionMath math, QuantizedRows& codes) override {
    return CpuAttention(be_, qkv, mask, heads, out, offsets, math, &codes);
  }
  Status DoEmbeddingSumAt(const Tensor& ids, const Tensor& type_ids, const Tensor& positions, const Tensor& word,
                          const Tensor& pos, const Tensor& type, Tensor& out) override {
    return CpuEmbeddingSum(be_, ids, type_ids, word, pos, type, out, &positions);
  }

 private:
  CpuBackend& be_;
};

}  // namespace

int64_t CpuL2BytesPerCore() {
  static const int64_t l2 = [] {
    for (const CacheLevel& c : CpuDataCaches()) {
      if (c.level == 2) return c.bytes;  // the first level-2 cache CPU 0 lists
    }
    return int64_t{1} << 20;
  }();
  return l2;
}

int64_t CpuRowBlockRows(int workers, int64_t bytes_per_row, int64_t weight_bytes) {
  const int64_t w = std::max(1, workers), row = std::max<int64_t>(1, bytes_per_row);
  const int64_t fit = CpuL2BytesPerCore() * w * 3 / 4 / row;
  const int64_t weights = std::max<int64_t>(0, weight_bytes);
  return std::max({512 * w, fit, weights / row + (weights % row != 0 ? 1 : 0)});
}

const char* DTypeTag(DType t) {
  switch (t) {
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    default: return "f32";
  }
}

CpuBackend::CpuBackend(int threads)
    : pool_(threads <= 0 ? ThreadPool::HardwareThreads() : threads),
      kernels_(std::make_unique<CpuKernels>(*this)),
      cache_(kSanitized ? 0 : size_t{1} << 30) {
  props_.kind = "cpu";
  // FP16 weights are always widened to FP32; BF16 ones where the BF16 kernels in force
  // (GetBf16Kernels, when the backend is made) have no BF16 dot.
  props_.f16_arithmetic = false;
  props_.bf16_arithmetic = GetBf16Kernels().dot();
  props_.compute_units = pool_.num_threads();
  props_.name = "cpu: " + CpuModelName() + " (" + std::to_string(pool_.num_threads()) +
                " threads)";
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) props_.total_memory = int64_t{pages} * page_size;
  scratch_.resize(pool_.num_threads());
}

CpuBackend::~CpuBackend() {
  std::free(shared_scratch_);  // the backend's end: nothing left to count or tell
  cache_.ReleaseAll([](void* p) { std::free(p); });
}

namespace {
// Buffers whose size class is 2 MiB and more sit on transparent huge pages (as PyTorch's
// CPU allocator does under THP_MEM_ALLOC_ENABLE): the embedding gather and the GEMMs'
// panels then miss the TLB 512 times less (+2-6% on the tiny model's batch runs, where THP
// is "madvise"). Not under ASan, whose bounds checks would then stop at the 2 MiB multiple,
// not at the buffer's end. (Allocate refuses sizes past SIZE_MAX / 4 first.)
bool OnHugePages(size_t bytes) { return !kSanitized && bytes >= kHugePage; }

// The bytes a buffer of `bytes` takes (its block cache key): its size class (memory.h) in
// whole 64-byte lines, or, where that reaches 2 MiB, whole huge pages. Under ASan, whole
// lines only: its bounds checks then stop at the buffer's end (and nothing is cached).
size_t RoundedSize(size_t bytes) {
  if (kSanitized) return AlignUp(bytes, kAlignment);
  const size_t lines = SizeClass(bytes, kAlignment);
  return OnHugePages(lines) ? AlignUp(lines, kHugePage) : lines;
}
}  // namespace

StatusOr<void*> CpuBackend::Allocate(size_t bytes) {
  if (bytes > SIZE_MAX / 4) {
    return ResourceExhausted("cpu backend: cannot allocate " + std::to_string(bytes) + " bytes");
  }
  const size_t rounded = RoundedSize(bytes);
  void* p = cache_.Take(rounded);
  // Decided by the class, not the request: every class of 2 MiB and more is then a whole
  // number of huge pages on a 2 MiB boundary, whichever request made the cached block (a
  // 1.9 MiB request's class is 2 MiB too).
  if (p == nullptr && OnHugePages(rounded)) {
    p = std::aligned_alloc(kHugePage, rounded);
    // Only advice: a kernel without THP keeps small pages.
    if (p != nullptr) (void)madvise(p, rounded, MADV_HUGEPAGE);
  }
  if (p == nullptr) p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) {
    return ResourceExhausted("cpu backend: cannot allocate " + std::to_string(bytes) + " bytes");
  }
  const int64_t live = accounting_.OnAllocate(bytes);
  if (observer_ != nullptr) observer_->OnAllocate(reinterpret_cast<uintptr_t>(p), bytes, live);
  return p;
}

void CpuBackend::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const int64_t live = accounting_.OnFree(bytes);
  if (observer_ != nullptr) observer_->OnFree(reinterpret_cast<uintptr_t>(ptr), bytes, live);
  if (cache_.Put(ptr, RoundedSize(bytes))) return;
  std::free(ptr);
}

MemoryStats CpuBackend::memory_stats() const { return accounting_.stats(); }

int64_t CpuBackend::AvailableMemory() const {
  const int64_t host = AvailableMemoryBytes();
  return host < 0 ? -1 : host + static_cast<int64_t>(cache_.cached_bytes());
}

void CpuBackend::ResetPeakMemory() { accounting_.ResetPeak(); }

Status CpuBackend::CopyHostToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return OkStatus();
}

Status CpuBackend::CopyDeviceToHost(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return OkStatus();
}

Status CpuBackend::FlushCaches() {
  if (flush_.empty()) {
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = 32L << 20;
    flush_.resize(static_cast<size_t>(std::max<long>(llc * 2, 16L << 20)));
  }
  // Writing every line evicts what the kernel touched from every level.
  std::memset(flush_.data(), static_cast<int>(++flushes_ & 0xff), flush_.size());
  return OkStatus();
}

KernelRun CpuBackend::RunTimed(const LaunchDesc& desc, TaskFn fn) {
  KernelRun run;
  run.device_timed = true;
  run.workers.assign(static_cast<size_t>(pool_.num_threads()), WorkerSpan{});
  pool_.ParallelFor(desc.grid.count(), [&](int64_t task, int worker) {
    const int64_t s = MonotonicNs();
    fn(task, worker);
    const int64_t e = MonotonicNs();
    WorkerSpan& w = run.workers[static_cast<size_t>(worker)];
    if (w.tasks == 0) w.begin_ns = s;
    w.end_ns = e;
    w.busy_ns += e - s;
    ++w.tasks;
  });
  run.begin_ns = INT64_MAX;
  for (const WorkerSpan& w : run.workers) {
    if (w.tasks == 0) continue;
    run.begin_ns = std::min(run.begin_ns, w.begin_ns);
    run.end_ns = std::max(run.end_ns, w.end_ns);
  }
  return run;
}

Status CpuBackend::Launch(const LaunchDesc& desc, TaskFn fn) {
  return Launch(desc, fn, [] {});
}

Status CpuBackend::Launch(const LaunchDesc& desc, TaskFn fn, FunctionRef<void()> each_run) {
  int64_t tasks = desc.grid.count();
  if (tasks <= 0) {
    return InvalidArgument("launch of " + std::string(desc.kernel) + " with an empty grid");
  }
  if (hook_ != nullptr) {
    return hook_->OnLaunch(*this, desc, [&]() -> StatusOr<KernelRun> {
      each_run();
      return RunTimed(desc, fn);
    });
  }
  each_run();
  if (observer_ == nullptr) {
    pool_.ParallelFor(tasks, fn);
    return OkStatus();
  }
  // Observed: time every task and fold the times into one span per worker.
  const int64_t launch_begin = MonotonicNs();
  const KernelRun run = RunTimed(desc, fn);
  observer_->OnLaunch(desc, launch_begin, run.begin_ns, run.begin_ns, run.end_ns, run.workers);
  return OkStatus();
}

void CpuBackend::EnsureScratch(size_t floats) {
  if (floats <= scratch_floats_) return;
  for (auto& s : scratch_) s.resize(floats);
  scratch_floats_ = floats;
}

StatusOr<float*> CpuBackend::EnsureSharedScratch(size_t floats) {
  if (floats <= shared_scratch_floats_) return shared_scratch_;
  Deallocate(shared_scratch_, shared_scratch_floats_ * sizeof(float));  // first: old and new never live together
  shared_scratch_ = nullptr;
  shared_scratch_floats_ = 0;
  StatusOr<void*> p = Allocate(floats * sizeof(float));
  if (!p.ok()) {
    return ResourceExhausted("cpu backend: cannot allocate a " + std::to_string(floats * sizeof(float)) +
                             "-byte workspace (16-bit weights widened to FP32)");
  }
  shared_scratch_ = static_cast<float*>(*p);
  shared_scratch_floats_ = floats;
  return shared_scratch_;
}

StatusOr<std::unique_ptr<Backend>> CreateCpuBackend(int threads) {
  if (threads < 0) return InvalidArgument("--threads must be >= 0, got " + std::to_string(threads));
  const int hardware = ThreadPool::HardwareThreads();
  const int most = std::max(kMaxThreadsFloor, kMaxThreadsPerCpu * hardware);
  if (threads > most) {
    return InvalidArgument("--threads " + std::to_string(threads) + " is more than " +
                           std::to_string(kMaxThreadsPerCpu) + "x this machine's " +
                           std::to_string(hardware) + " hardware threads (at most " +
                           std::to_string(most) + ")");
  }
  try {
    return std::unique_ptr<Backend>(new CpuBackend(threads));
  } catch (const std::system_error& e) {
    return ResourceExhausted("cannot start " + std::to_string(threads) + " worker threads: " + e.what());
  }
}

}  // namespace tierscope
