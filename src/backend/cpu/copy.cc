// CPU device-to-device copy into a slice of a larger tensor (the work of aten::cat).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "backend/cpu/cpu_backend.h"

namespace tierscope {
namespace {
constexpr int64_t kChunkBytes = 64 * 1024;
// Below this, a copy is one task: splitting it would cost more than it saves.
constexpr int64_t kMinSplitBytes = 8 * 1024;
}  // namespace

Status CpuCopyInto(CpuBackend& be, const Tensor& src, Tensor& dst, size_t dst_byte_offset) {
  const int64_t n = static_cast<int64_t>(src.bytes());  // range checked by the front; n > 0
  // At least one chunk a worker: the source was just written by the op before, its rows
  // split among the workers in order, so each worker copies about the rows it wrote, from
  // its own cache, where one task would read the other workers' rows across cores.
  int64_t tasks = (n + kChunkBytes - 1) / kChunkBytes;
  if (n >= kMinSplitBytes) tasks = std::max<int64_t>(tasks, be.num_workers());
  LaunchDesc desc;
  desc.kernel = "cpu_memcpy_dtod";
  desc.grid = Dim3{tasks, 1, 1};
  desc.block = Dim3{(n + tasks - 1) / tasks, 1, 1};
  CopyCost(static_cast<size_t>(n)).Into(desc);
  const auto* s = static_cast<const std::byte*>(src.data());
  auto* d = static_cast<std::byte*>(dst.data()) + dst_byte_offset;
  desc.writes[0] = {d, static_cast<size_t>(n)};
  // Chunk t is bytes [edge(t), edge(t + 1)): equal shares, cut where the destination's
  // 64-byte lines begin, so no two workers write one line.
  const auto base = static_cast<int64_t>(reinterpret_cast<uintptr_t>(d) % 64);
  const auto edge = [&](int64_t t) {
    return t == tasks ? n : std::clamp<int64_t>((base + n * t / tasks) / 64 * 64 - base, 0, n);
  };
  return be.Launch(desc, [&](int64_t task, int) {
    const int64_t begin = edge(task), end = edge(task + 1);
    if (end > begin) std::memcpy(d + begin, s + begin, static_cast<size_t>(end - begin));
  });
}

}  // namespace tierscope
