// NumPy .npy / .npz writers for float32 arrays (what `tierscope run` emits).
#ifndef TIERSCOPE_CORE_NPY_H_
#define TIERSCOPE_CORE_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

struct NpyArray {
  std::string name;  // the member name inside an .npz (without ".npy")
  std::vector<int64_t> shape;
  const float* data = nullptr;
};

// The bytes of a version-1.0 .npy file holding a little-endian float32 C-order array.
std::string NpyBytes(const std::vector<int64_t>& shape, const float* data);
Status WriteNpy(const std::string& path, const std::vector<int64_t>& shape, const float* data);
// An uncompressed .npz (a zip of .npy members), as numpy.savez writes it.
Status WriteNpz(const std::string& path, const std::vector<NpyArray>& arrays);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_NPY_H_
