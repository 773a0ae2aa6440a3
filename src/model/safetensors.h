// Reads the safetensors format: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and data offsets, then the data. The file is
// memory-mapped; every offset is validated against the file size before use.
#ifndef TIERSCOPE_MODEL_SAFETENSORS_H_
#define TIERSCOPE_MODEL_SAFETENSORS_H_

#include <string>

#include "model/tensor_map.h"
#include "tierscope/status.h"

namespace tierscope {

StatusOr<TensorMap> LoadSafetensors(const std::string& path);

// Writes `tensors` (name, dtype, shape, bytes) as a safetensors file.
struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
Status WriteSafetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors);

}  // namespace tierscope

#endif  // TIERSCOPE_MODEL_SAFETENSORS_H_
