// Checkpoint: the weights of a Hugging Face model directory under canonical BertModel
// names, whatever layout the file used (BertModel keys, BertForPreTraining's `bert.`
// prefix with `cls.*` heads, legacy LayerNorm gamma/beta, position_ids buffers).
#ifndef TIERSCOPE_MODEL_CHECKPOINT_H_
#define TIERSCOPE_MODEL_CHECKPOINT_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/tensor_map.h"
#include "tierscope/status.h"

namespace tierscope {

class Checkpoint {
 public:
  // Opens model.safetensors, else pytorch_model.bin, in `model_dir`.
  static StatusOr<Checkpoint> Open(const std::string& model_dir);
  // Builds from an already loaded map (used by tests).
  static StatusOr<Checkpoint> FromTensorMap(TensorMap map);

  const std::string& source() const { return map_.source; }
  bool Has(const std::string& canonical) const { return names_.count(canonical) != 0; }
  // The tensor `canonical`, checked to be a float tensor of `shape`. Errors name the
  // file and the tensor's key as stored.
  StatusOr<const HostTensor*> Get(const std::string& canonical,
                                  const std::vector<int64_t>& shape) const;
  // Keys in the file that the encoder does not use (heads, buffers, unknown).
  const std::vector<std::string>& ignored() const { return ignored_; }
  // Keys in the file that name encoder or pooler weights no Get asked for (a config with
  // fewer layers than its checkpoint), in the file's order of names.
  std::vector<std::string> Unused() const;

 private:
  TensorMap map_;
  std::map<std::string, std::string> names_;  // canonical -> key in the file
  std::vector<std::string> ignored_;
  mutable std::set<std::string> used_;  // canonical names Get was asked for
};

// The canonical name for a stored key, or "" when the key is not part of BertModel's
// encoder/pooler weights (e.g. cls.* heads, position_ids).
std::string CanonicalBertKey(const std::string& key);

}  // namespace tierscope

#endif  // TIERSCOPE_MODEL_CHECKPOINT_H_
