// Formatting helpers for the tensors that checkpoint loaders return.
#include "model/tensor_map.h"

#include <string>

namespace tierscope {

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  out += "]";
  return out;
}

}  // namespace tierscope
