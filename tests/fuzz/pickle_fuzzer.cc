// libFuzzer target: data.pkl of a torch checkpoint, straight into the pickle VM (the
// zip around it rarely survives mutation, so the VM gets a target of its own).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data),
                                     reinterpret_cast<const std::byte*>(data) + size);
  auto r = tierscope::pickle::Unpickle("fuzz/data.pkl", bytes);
  if (!r.ok()) return 0;
  if (r->root >= r->values.size()) __builtin_trap();  // the root must be a real value
  return 0;
}
