// The pickle subset a PyTorch state dict needs (data.pkl inside a zip checkpoint): a
// bounded VM that accepts only the opcodes and allow-listed globals a state dict uses
// and yields the unpickled values plus the storages and tensor views they reference.
#ifndef TIERSCOPE_MODEL_PICKLE_H_
#define TIERSCOPE_MODEL_PICKLE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tierscope/dtype.h"
#include "tierscope/status.h"

namespace tierscope {
namespace pickle {

enum class Kind : uint8_t {
  kNone, kBool, kInt, kBigInt, kFloat, kStr, kTuple, kList, kDict, kGlobal, kStorage,
  kTensor,
};

// "None", "int", "dict", ... for error messages.
const char* KindName(Kind k);

// Values live in an arena and refer to each other by index, so cycles and deep
// nesting cost nothing to destroy.
struct Value {
  Kind kind = Kind::kNone;
  int64_t i = 0;  // kBool/kInt; kStorage/kTensor: index into storages/tensors
  double f = 0;
  std::string s;                // kStr text; kGlobal "module.name"
  std::vector<uint32_t> items;  // kTuple/kList elements; kDict keys/values interleaved
};

struct StorageRef {
  std::string key;
  DType dtype = DType::kF32;
  int64_t numel = 0;
};

struct TensorSpec {
  size_t storage = 0;
  int64_t offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  std::string error;  // set when the _rebuild_tensor_v2 arguments were malformed
};

// Quotes a string that came from the file, escaping control bytes and capping length.
std::string Quote(std::string_view s);

// What data.pkl unpickled to: the value arena, the root object's id in it, and the
// storages (BINPERSID) and tensor views (_rebuild_tensor_v2) that kStorage/kTensor
// values index.
struct Result {
  std::vector<Value> values;
  uint32_t root = 0;
  std::vector<StorageRef> storages;
  std::vector<TensorSpec> tensors;

  const Value& value(uint32_t id) const { return values[id]; }
};

// Runs `bytes` (the data.pkl of `path`, which errors name) to its STOP opcode, within
// fixed limits on size, stack depth, marks, memo and object count.
StatusOr<Result> Unpickle(const std::string& path, const std::vector<std::byte>& bytes);

}  // namespace pickle
}  // namespace tierscope

#endif  // TIERSCOPE_MODEL_PICKLE_H_
