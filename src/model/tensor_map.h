// TensorMap: named host tensors read from a checkpoint file, viewing memory that the
// map keeps alive (an mmap of a safetensors file, or storages read from a zip archive).
#ifndef TIERSCOPE_MODEL_TENSOR_MAP_H_
#define TIERSCOPE_MODEL_TENSOR_MAP_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "tierscope/dtype.h"

namespace tierscope {

struct TensorMap {
  std::string source;  // the file the tensors came from, for error messages
  std::map<std::string, HostTensor> tensors;
  int realigned = 0;  // tensors copied because their data in the file was misaligned
  // Keeps the memory that `tensors` point into alive (type-erased owner).
  std::shared_ptr<const void> storage;
};

// "[2, 128]"
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace tierscope

#endif  // TIERSCOPE_MODEL_TENSOR_MAP_H_
