// libFuzzer target: a PyTorch zip checkpoint (pytorch_model.bin). It loads, or fails with
// a Status naming the file; a loaded tensor's bytes are all readable.
#include <cstddef>
#include <cstdint>
#include <numeric>

#include "fuzz_util.h"
#include "model/torch_bin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tierscope::fuzz::MemFile file(data, size);
  auto map = tierscope::LoadTorchBin(file.path());
  if (!map.ok()) return 0;
  unsigned sum = 0;
  for (const auto& [name, t] : map->tensors) {
    for (size_t i = 0; i < t.bytes; ++i) sum += static_cast<unsigned>(t.data[i]);
  }
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
