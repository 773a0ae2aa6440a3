// Checkpoint discovery and key-layout normalisation.
#include "model/checkpoint.h"

#include <sys/stat.h>

#include "model/safetensors.h"
#include "model/torch_bin.h"

namespace tierscope {
namespace {

bool FileExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::string CanonicalBertKey(const std::string& key) {
  std::string k = key;
  if (StartsWith(k, "bert.")) k = k.substr(5);
  if (!StartsWith(k, "embeddings.") && !StartsWith(k, "encoder.") && !StartsWith(k, "pooler.")) {
    return "";
  }
  if (EndsWith(k, "position_ids") || EndsWith(k, "token_type_ids")) return "";  // buffers
  if (EndsWith(k, "LayerNorm.gamma")) k = k.substr(0, k.size() - 5) + "weight";
  if (EndsWith(k, "LayerNorm.beta")) k = k.substr(0, k.size() - 4) + "bias";
  return k;
}

StatusOr<Checkpoint> Checkpoint::Open(const std::string& dir) {
  const std::string st = dir + "/model.safetensors";
  const std::string bin = dir + "/pytorch_model.bin";
  if (FileExists(st)) {
    TS_ASSIGN_OR_RETURN(TensorMap m, LoadSafetensors(st));
    return FromTensorMap(std::move(m));
  }
  if (FileExists(bin)) {
    TS_ASSIGN_OR_RETURN(TensorMap m, LoadTorchBin(bin));
    return FromTensorMap(std::move(m));
  }
  if (FileExists(dir + "/model.safetensors.index.json") ||
      FileExists(dir + "/pytorch_model.bin.index.json")) {
    return Unimplemented(dir + ": sharded checkpoints are not supported");
  }
  return NotFound(dir + ": no model.safetensors or pytorch_model.bin");
}

StatusOr<Checkpoint> Checkpoint::FromTensorMap(TensorMap map) {
  Checkpoint c;
  for (const auto& [key, t] : map.tensors) {
    std::string canon = CanonicalBertKey(key);
    if (canon.empty()) {
      c.ignored_.push_back(key);
      continue;
    }
    auto [it, inserted] = c.names_.emplace(canon, key);
    if (!inserted) {
      return InvalidArgument(map.source + ": tensors '" + it->second + "' and '" + key +
                             "' both name the weight '" + canon + "'");
    }
  }
  c.map_ = std::move(map);
  return c;
}

StatusOr<const HostTensor*> Checkpoint::Get(const std::string& canonical,
                                            const std::vector<int64_t>& shape) const {
  auto it = names_.find(canonical);
  if (it == names_.end()) {
    return NotFound(map_.source + ": missing tensor '" + canonical + "'");
  }
  used_.insert(canonical);
  const HostTensor& t = map_.tensors.at(it->second);
  if (t.dtype != DType::kF32 && t.dtype != DType::kF16 && t.dtype != DType::kBF16) {
    return InvalidArgument(map_.source + ": tensor '" + it->second + "' has dtype " +
                           std::string(DTypeName(t.dtype)) +
                           " (expected float32, float16 or bfloat16)");
  }
  if (t.shape != shape) {
    return InvalidArgument(map_.source + ": tensor '" + it->second + "' has shape " +
                           ShapeToString(t.shape) + ", expected " + ShapeToString(shape));
  }
  return &t;
}

std::vector<std::string> Checkpoint::Unused() const {
  std::vector<std::string> out;
  for (const auto& [canonical, key] : names_) {
    if (used_.count(canonical) == 0) out.push_back(key);
  }
  return out;
}

}  // namespace tierscope
