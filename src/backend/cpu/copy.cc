// CPU device-to-device copy into a slice of a larger tensor (the work of aten::cat).
#include <algorithm>
#include <cstring>
#include <string>

#include "backend/cpu/cpu_backend.h"

namespace tierscope {
namespace {
constexpr int64_t kChunkBytes = 64 * 1024;
}  // namespace

Status CpuCopyInto(CpuBackend& be, const Tensor& src, Tensor& dst, size_t dst_byte_offset) {
  const size_t n = src.bytes();  // range checked by the front; n > 0
  LaunchDesc desc;
  desc.kernel = "cpu_memcpy_dtod";
  desc.grid = Dim3{(static_cast<int64_t>(n) + kChunkBytes - 1) / kChunkBytes, 1, 1};
  desc.block = Dim3{kChunkBytes, 1, 1};
  CopyCost(n).Into(desc);
  const auto* s = static_cast<const std::byte*>(src.data());
  auto* d = static_cast<std::byte*>(dst.data()) + dst_byte_offset;
  desc.writes[0] = {d, n};
  return be.Launch(desc, [&](int64_t task, int) {
    const size_t begin = static_cast<size_t>(task * kChunkBytes);
    std::memcpy(d + begin, s + begin, std::min<size_t>(kChunkBytes, n - begin));
  });
}

}  // namespace tierscope
