// libFuzzer target: a safetensors file. It loads, or fails with a Status; a loaded
// tensor's every byte is readable and its float values convertible.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tierscope::fuzz::MemFile file(data, size);
  auto map = tierscope::LoadSafetensors(file.path());
  if (!map.ok()) return 0;
  for (const auto& [name, t] : map->tensors) {
    if (t.numel() * static_cast<int64_t>(tierscope::DTypeSize(t.dtype)) != static_cast<int64_t>(t.bytes)) {
      __builtin_trap();  // a tensor whose bytes disagree with its shape got through
    }
    if (t.dtype != tierscope::DType::kF32 && t.dtype != tierscope::DType::kF16 &&
        t.dtype != tierscope::DType::kBF16) {
      continue;
    }
    std::vector<float> f(static_cast<size_t>(t.numel()));
    tierscope::ToFloat(t.dtype, t.data, f.data(), f.size());
  }
  return 0;
}
