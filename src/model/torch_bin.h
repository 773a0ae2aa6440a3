// Reads PyTorch's zip checkpoint format (torch.save since 1.6, what save_pretrained
// writes as pytorch_model.bin): data.pkl parsed with the pickle subset a state dict
// needs, tensor storages read from data/<key>. No Python at run time.
#ifndef TIERSCOPE_MODEL_TORCH_BIN_H_
#define TIERSCOPE_MODEL_TORCH_BIN_H_

#include <string>

#include "model/tensor_map.h"
#include "tierscope/status.h"

namespace tierscope {

// Loads every tensor of the state dict in `path`. Errors name the file and, where one
// is involved, the tensor (its state-dict key) or the storage key.
StatusOr<TensorMap> LoadTorchBin(const std::string& path);

}  // namespace tierscope

#endif  // TIERSCOPE_MODEL_TORCH_BIN_H_
