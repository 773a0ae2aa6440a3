// HostTensor: a view of a contiguous, row-major tensor in host memory — what a checkpoint
// loader hands to a backend to pack or upload. Below both the model (which loads them)
// and the backends (which consume them).
#ifndef TIERSCOPE_CORE_HOST_TENSOR_H_
#define TIERSCOPE_CORE_HOST_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tierscope/dtype.h"

namespace tierscope {

// A contiguous, row-major tensor in host memory owned by whoever holds it (a TensorMap).
struct HostTensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t bytes = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_HOST_TENSOR_H_
