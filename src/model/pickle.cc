// The bounded pickle VM behind LoadTorchBin: interprets data.pkl with only the opcodes
// and allow-listed globals (torch storages, _rebuild_tensor_v2/_rebuild_parameter,
// collections.OrderedDict) a state dict needs, under fixed resource limits.
#include "model/pickle.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tierscope {
namespace pickle {
namespace {

constexpr size_t kMaxPickleBytes = size_t{256} << 20;
constexpr size_t kMaxStackDepth = size_t{1} << 20;
constexpr size_t kMaxMarks = size_t{1} << 16;
constexpr size_t kMaxMemo = size_t{1} << 22;
constexpr size_t kMaxValues = size_t{1} << 22;
constexpr size_t kMaxDims = 64;

std::optional<DType> GlobalDType(std::string_view name) {
  static const std::pair<std::string_view, DType> kTable[] = {
      {"torch.FloatStorage", DType::kF32},   {"torch.HalfStorage", DType::kF16},
      {"torch.BFloat16Storage", DType::kBF16}, {"torch.DoubleStorage", DType::kF64},
      {"torch.LongStorage", DType::kI64},    {"torch.IntStorage", DType::kI32},
      {"torch.ShortStorage", DType::kI16},   {"torch.CharStorage", DType::kI8},
      {"torch.ByteStorage", DType::kU8},     {"torch.BoolStorage", DType::kBool},
      {"torch.float32", DType::kF32},        {"torch.float", DType::kF32},
      {"torch.float16", DType::kF16},        {"torch.half", DType::kF16},
      {"torch.bfloat16", DType::kBF16},      {"torch.float64", DType::kF64},
      {"torch.double", DType::kF64},         {"torch.int64", DType::kI64},
      {"torch.long", DType::kI64},           {"torch.int32", DType::kI32},
      {"torch.int", DType::kI32},            {"torch.int16", DType::kI16},
      {"torch.short", DType::kI16},          {"torch.int8", DType::kI8},
      {"torch.uint8", DType::kU8},           {"torch.bool", DType::kBool},
  };
  for (const auto& [n, t] : kTable) {
    if (n == name) return t;
  }
  return std::nullopt;
}

constexpr std::string_view kOrderedDict = "collections.OrderedDict";
constexpr std::string_view kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr std::string_view kRebuildParameter = "torch._utils._rebuild_parameter";

class PickleVm {
 public:
  PickleVm(const std::string& path, const std::vector<std::byte>& bytes)
      : path_(path),
        data_(reinterpret_cast<const uint8_t*>(bytes.data())),
        size_(bytes.size()) {}

  // Runs to STOP; returns the id of the unpickled root object.
  StatusOr<uint32_t> Run() {
    TS_ASSIGN_OR_RETURN(none_, NewValue(Kind::kNone));
    TS_ASSIGN_OR_RETURN(true_, NewValue(Kind::kBool));
    values_[true_].i = 1;
    TS_ASSIGN_OR_RETURN(false_, NewValue(Kind::kBool));
    while (pos_ < size_) {
      op_offset_ = pos_;
      uint8_t op = data_[pos_++];
      if (op == '.') {  // STOP
        if (stack_.empty()) return Error("STOP with an empty stack");
        return stack_.back();
      }
      TS_RETURN_IF_ERROR(Step(op));
    }
    return DataLoss(path_ + ": truncated data.pkl at offset " + std::to_string(size_) +
                    " (no STOP opcode)");
  }

  // Hands over what Run() built; `root` is the id it returned.
  Result TakeResult(uint32_t root) {
    return Result{std::move(values_), root, std::move(storages_), std::move(tensors_)};
  }

 private:
  Status Error(const std::string& msg) const {
    return InvalidArgument(path_ + ": data.pkl: " + msg + " (at offset " +
                           std::to_string(op_offset_) + ")");
  }
  Status Need(size_t n) const {
    if (n > size_ - pos_) {
      return DataLoss(path_ + ": truncated data.pkl at offset " +
                      std::to_string(op_offset_));
    }
    return OkStatus();
  }
  // Reads n little-endian bytes (n <= 8) after checking they exist.
  StatusOr<uint64_t> ReadLe(size_t n) {
    TS_RETURN_IF_ERROR(Need(n));
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(data_[pos_ + k]) << (8 * k);
    pos_ += n;
    return v;
  }
  StatusOr<std::string> ReadBytes(uint64_t n) {
    TS_RETURN_IF_ERROR(Need(n > size_ ? size_ + 1 : static_cast<size_t>(n)));
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  StatusOr<std::string> ReadLine() {
    const void* nl = std::memchr(data_ + pos_, '\n', size_ - pos_);
    if (nl == nullptr) return Need(size_ - pos_ + 1);
    size_t len = static_cast<const uint8_t*>(nl) - (data_ + pos_);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len + 1;
    return s;
  }

  StatusOr<uint32_t> NewValue(Kind kind) {
    if (values_.size() >= kMaxValues) {
      return Error("more than " + std::to_string(kMaxValues) + " pickle objects");
    }
    values_.emplace_back();
    values_.back().kind = kind;
    return static_cast<uint32_t>(values_.size() - 1);
  }
  Status Push(uint32_t id) {
    if (stack_.size() >= kMaxStackDepth) {
      return Error("pickle stack deeper than " + std::to_string(kMaxStackDepth));
    }
    stack_.push_back(id);
    return OkStatus();
  }
  Status PushNew(Kind kind, int64_t i = 0, std::string s = {}) {
    TS_ASSIGN_OR_RETURN(uint32_t id, NewValue(kind));
    values_[id].i = i;
    values_[id].s = std::move(s);
    return Push(id);
  }
  // The stack item on top (above the innermost MARK, as in CPython's unpickler).
  StatusOr<uint32_t> Top() const {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) {
      return Error("pickle stack underflow");
    }
    return stack_.back();
  }
  StatusOr<uint32_t> Pop() {
    TS_ASSIGN_OR_RETURN(uint32_t id, Top());
    stack_.pop_back();
    return id;
  }
  // Pops the topmost MARK and everything above it; returns those items.
  StatusOr<std::vector<uint32_t>> PopMark() {
    if (marks_.empty()) return Error("no MARK on the pickle stack");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Status PushTuple(std::vector<uint32_t> items) {
    TS_ASSIGN_OR_RETURN(uint32_t id, NewValue(Kind::kTuple));
    values_[id].items = std::move(items);
    return Push(id);
  }
  Status PopTuple(size_t n) {
    std::vector<uint32_t> items(n);
    for (size_t k = n; k > 0; --k) {
      TS_ASSIGN_OR_RETURN(items[k - 1], Pop());
    }
    return PushTuple(std::move(items));
  }
  Status MemoPut(uint64_t key) {
    TS_ASSIGN_OR_RETURN(uint32_t id, Top());
    if (memo_.size() >= kMaxMemo && memo_.find(key) == memo_.end()) {
      return Error("pickle memo larger than " + std::to_string(kMaxMemo) + " entries");
    }
    memo_[key] = id;
    return OkStatus();
  }
  Status MemoGet(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) return Error("memo key " + std::to_string(key) + " not found");
    return Push(it->second);
  }
  Status PushGlobal(const std::string& module, const std::string& name) {
    std::string full = module + "." + name;
    if (full != kOrderedDict && full != kRebuildTensor && full != kRebuildParameter &&
        !GlobalDType(full).has_value()) {
      return Error("global " + Quote(full) +
                   " is not allowed (a state dict needs only torch storages, "
                   "torch._utils._rebuild_tensor_v2/_rebuild_parameter and "
                   "collections.OrderedDict)");
    }
    return PushNew(Kind::kGlobal, 0, std::move(full));
  }
  // SETITEM(S) (`want` kDict, keys and values interleaved) or APPEND(S) (kList).
  Status Extend(Kind want, const std::vector<uint32_t>& items) {
    TS_ASSIGN_OR_RETURN(uint32_t target, Top());
    const char* op = want == Kind::kDict ? "SETITEM(S)" : "APPEND(S)";
    if (values_[target].kind != want) {
      return Error(std::string(op) + " on a " + KindName(values_[target].kind));
    }
    if (want == Kind::kDict && items.size() % 2 != 0) {
      return Error("SETITEMS with an odd number of items");
    }
    auto& dst = values_[target].items;
    dst.insert(dst.end(), items.begin(), items.end());
    return OkStatus();
  }

  Status Step(uint8_t op);
  Status PersistentLoad();
  Status Reduce();
  // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])
  TensorSpec RebuildTensor(const std::vector<uint32_t>& args) const;
  std::optional<std::vector<int64_t>> IntTuple(uint32_t id) const {
    const Value& v = values_[id];
    if (v.kind != Kind::kTuple) return std::nullopt;
    std::vector<int64_t> out;
    for (uint32_t e : v.items) {
      if (values_[e].kind != Kind::kInt) return std::nullopt;
      out.push_back(values_[e].i);
    }
    return out;
  }

  const std::string& path_;
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  size_t op_offset_ = 0;
  std::vector<Value> values_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  std::vector<StorageRef> storages_;
  std::vector<TensorSpec> tensors_;
  uint32_t none_ = 0, true_ = 0, false_ = 0;
};

Status PickleVm::Step(uint8_t op) {
  switch (op) {
    case 0x80: {  // PROTO
      TS_ASSIGN_OR_RETURN(uint64_t v, ReadLe(1));
      if (v > 5) return Error("unsupported pickle protocol " + std::to_string(v));
      return OkStatus();
    }
    case 0x95: {  // FRAME: framing is transparent to the opcode stream
      TS_ASSIGN_OR_RETURN(uint64_t len, ReadLe(8));
      if (len > size_ - pos_) return Need(size_ - pos_ + 1);
      return OkStatus();
    }
    case '(':  // MARK
      if (marks_.size() >= kMaxMarks) return Error("too many nested MARKs");
      marks_.push_back(stack_.size());
      return OkStatus();
    case '}': return PushNew(Kind::kDict);         // EMPTY_DICT
    case ']': return PushNew(Kind::kList);         // EMPTY_LIST
    case ')': return PushTuple({});                // EMPTY_TUPLE
    case 't': {                                    // TUPLE
      TS_ASSIGN_OR_RETURN(auto items, PopMark());
      return PushTuple(std::move(items));
    }
    case 0x85: return PopTuple(1);                 // TUPLE1
    case 0x86: return PopTuple(2);                 // TUPLE2
    case 0x87: return PopTuple(3);                 // TUPLE3
    case 'X': case 0x8c: case 0x8d: case 'T': case 'U': {
      // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, BINSTRING, SHORT_BINSTRING
      size_t width = (op == 0x8c || op == 'U') ? 1 : (op == 0x8d ? 8 : 4);
      TS_ASSIGN_OR_RETURN(uint64_t len, ReadLe(width));
      if (op == 'T' && len > INT32_MAX) return Error("negative BINSTRING length");
      TS_ASSIGN_OR_RETURN(std::string s, ReadBytes(len));
      return PushNew(Kind::kStr, 0, std::move(s));
    }
    case 'J': case 'K': case 'M': {  // BININT (signed), BININT1, BININT2 (unsigned)
      TS_ASSIGN_OR_RETURN(uint64_t v, ReadLe(op == 'J' ? 4 : op == 'K' ? 1 : 2));
      if (op == 'J') v = static_cast<uint64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)));
      return PushNew(Kind::kInt, static_cast<int64_t>(v));
    }
    case 0x8a: {  // LONG1: little-endian two's complement
      TS_ASSIGN_OR_RETURN(uint64_t n, ReadLe(1));
      TS_RETURN_IF_ERROR(Need(n));
      const uint8_t* b = data_ + pos_;
      pos_ += n;
      bool negative = n > 0 && (b[n - 1] & 0x80) != 0;
      bool fits = true;
      for (size_t k = 8; k < n; ++k) fits = fits && b[k] == (negative ? 0xff : 0x00);
      if (n > 8 && fits) fits = ((b[7] & 0x80) != 0) == negative;
      if (!fits) return PushNew(Kind::kBigInt);
      uint64_t v = negative ? ~uint64_t{0} : 0;
      for (size_t k = 0; k < n && k < 8; ++k) {
        v &= ~(uint64_t{0xff} << (8 * k));
        v |= static_cast<uint64_t>(b[k]) << (8 * k);
      }
      return PushNew(Kind::kInt, static_cast<int64_t>(v));
    }
    case 'G': {  // BINFLOAT: big-endian IEEE double
      TS_RETURN_IF_ERROR(Need(8));
      uint64_t bits = 0;
      for (size_t k = 0; k < 8; ++k) bits = (bits << 8) | data_[pos_ + k];
      pos_ += 8;
      TS_ASSIGN_OR_RETURN(uint32_t id, NewValue(Kind::kFloat));
      std::memcpy(&values_[id].f, &bits, sizeof(bits));
      return Push(id);
    }
    case 'N': return Push(none_);    // NONE
    case 0x88: return Push(true_);   // NEWTRUE
    case 0x89: return Push(false_);  // NEWFALSE
    case 0x94: return MemoPut(memo_.size());  // MEMOIZE
    case 'q': case 'r': case 'h': case 'j': {  // BINPUT, LONG_BINPUT, BINGET, LONG_BINGET
      TS_ASSIGN_OR_RETURN(uint64_t k, ReadLe(op == 'q' || op == 'h' ? 1 : 4));
      return op == 'q' || op == 'r' ? MemoPut(k) : MemoGet(k);
    }
    case 'c': {  // GLOBAL "module\nname\n"
      TS_ASSIGN_OR_RETURN(std::string module, ReadLine());
      TS_ASSIGN_OR_RETURN(std::string name, ReadLine());
      return PushGlobal(module, name);
    }
    case 0x93: {  // STACK_GLOBAL
      TS_ASSIGN_OR_RETURN(uint32_t name, Pop());
      TS_ASSIGN_OR_RETURN(uint32_t module, Pop());
      if (values_[module].kind != Kind::kStr || values_[name].kind != Kind::kStr) {
        return Error("STACK_GLOBAL needs two strings");
      }
      return PushGlobal(values_[module].s, values_[name].s);
    }
    case 'Q': return PersistentLoad();  // BINPERSID
    case 'R': return Reduce();          // REDUCE
    case 'b': {                         // BUILD
      TS_ASSIGN_OR_RETURN(uint32_t state, Pop());
      TS_ASSIGN_OR_RETURN(uint32_t obj, Top());
      Kind sk = values_[state].kind;
      // An OrderedDict state dict may carry `_metadata` as instance state: ignore it.
      if (values_[obj].kind == Kind::kDict &&
          (sk == Kind::kDict || sk == Kind::kTuple || sk == Kind::kNone)) {
        return OkStatus();
      }
      return Error(std::string("BUILD on a ") + KindName(values_[obj].kind) +
                   " is not supported");
    }
    case 's': {  // SETITEM
      TS_ASSIGN_OR_RETURN(uint32_t v, Pop());
      TS_ASSIGN_OR_RETURN(uint32_t k, Pop());
      return Extend(Kind::kDict, {k, v});
    }
    case 'a': {  // APPEND
      TS_ASSIGN_OR_RETURN(uint32_t v, Pop());
      return Extend(Kind::kList, {v});
    }
    case 'u': case 'e': {  // SETITEMS, APPENDS
      TS_ASSIGN_OR_RETURN(auto items, PopMark());
      return Extend(op == 'u' ? Kind::kDict : Kind::kList, items);
    }
    default: {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", op);
      return Unimplemented(path_ + ": data.pkl: unsupported pickle opcode " + hex +
                           " at offset " + std::to_string(op_offset_));
    }
  }
}

// BINPERSID with ('storage', storage_type, key, location, numel).
Status PickleVm::PersistentLoad() {
  TS_ASSIGN_OR_RETURN(uint32_t pid_id, Pop());
  const Value& pid = values_[pid_id];
  const char* kShape = "('storage', storage_type, key, location, numel)";
  if (pid.kind != Kind::kTuple || pid.items.size() != 5 ||
      values_[pid.items[0]].kind != Kind::kStr || values_[pid.items[0]].s != "storage") {
    return Error(std::string("persistent id is not a ") + kShape + " tuple");
  }
  const Value& type = values_[pid.items[1]];
  const Value& key = values_[pid.items[2]];
  const Value& numel = values_[pid.items[4]];
  if (key.kind != Kind::kStr) {
    return Error(std::string("storage key is a ") + KindName(key.kind) + ", not a str");
  }
  std::optional<DType> dtype;
  if (type.kind == Kind::kGlobal) dtype = GlobalDType(type.s);
  if (!dtype.has_value()) {
    return Error("storage " + Quote(key.s) + ": storage type is not a torch storage (" +
                 (type.kind == Kind::kGlobal ? Quote(type.s) : KindName(type.kind)) + ")");
  }
  if (numel.kind != Kind::kInt || numel.i < 0) {
    return Error("storage " + Quote(key.s) + ": numel is not a non-negative int");
  }
  storages_.push_back(StorageRef{key.s, *dtype, numel.i});
  return PushNew(Kind::kStorage, static_cast<int64_t>(storages_.size() - 1));
}

Status PickleVm::Reduce() {
  TS_ASSIGN_OR_RETURN(uint32_t args_id, Pop());
  TS_ASSIGN_OR_RETURN(uint32_t fn_id, Pop());
  const Value& fn = values_[fn_id];
  if (fn.kind != Kind::kGlobal) {
    return Error(std::string("REDUCE on a ") + KindName(fn.kind) + ", not a callable");
  }
  if (values_[args_id].kind != Kind::kTuple) return Error("REDUCE arguments are not a tuple");
  const std::vector<uint32_t> args = values_[args_id].items;
  if (fn.s == kOrderedDict) {
    if (!args.empty()) return Error("collections.OrderedDict called with arguments");
    return PushNew(Kind::kDict);
  }
  if (fn.s == kRebuildTensor) {
    tensors_.push_back(RebuildTensor(args));
    return PushNew(Kind::kTensor, static_cast<int64_t>(tensors_.size() - 1));
  }
  if (fn.s == kRebuildParameter) {  // (tensor, requires_grad, backward_hooks)
    if (args.empty() || values_[args[0]].kind != Kind::kTensor) {
      return Error("_rebuild_parameter: first argument is not a tensor");
    }
    return Push(args[0]);
  }
  return Error("cannot call " + Quote(fn.s));
}

TensorSpec PickleVm::RebuildTensor(const std::vector<uint32_t>& args) const {
  TensorSpec t;
  auto fail = [&t](const std::string& why) {
    t.error = "_rebuild_tensor_v2: " + why;
    return t;
  };
  if (args.size() != 6 && args.size() != 7) {
    return fail("takes 6 or 7 arguments, got " + std::to_string(args.size()));
  }
  if (values_[args[0]].kind != Kind::kStorage) {
    return fail(std::string("storage argument is a ") + KindName(values_[args[0]].kind));
  }
  t.storage = static_cast<size_t>(values_[args[0]].i);
  if (values_[args[1]].kind != Kind::kInt || values_[args[1]].i < 0) {
    return fail("storage offset is not a non-negative int");
  }
  t.offset = values_[args[1]].i;
  auto sizes = IntTuple(args[2]);
  auto strides = IntTuple(args[3]);
  if (!sizes || !strides) return fail("size and stride must be tuples of ints");
  if (sizes->size() != strides->size() || sizes->size() > kMaxDims) {
    return fail("size has " + std::to_string(sizes->size()) + " dims but stride has " +
                std::to_string(strides->size()) + " (at most " + std::to_string(kMaxDims) +
                ")");
  }
  t.sizes = std::move(*sizes);
  t.strides = std::move(*strides);
  return t;
}

}  // namespace

std::string Quote(std::string_view s) {
  constexpr size_t kMax = 200;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMax) out += "...";
  return out + "'";
}

const char* KindName(Kind k) {
  static const char* const kNames[] = {"None", "bool", "int", "int (too large)", "float",
                                       "str", "tuple", "list", "dict", "global",
                                       "storage", "tensor"};
  return kNames[static_cast<size_t>(k)];
}

StatusOr<Result> Unpickle(const std::string& path, const std::vector<std::byte>& bytes) {
  if (bytes.size() > kMaxPickleBytes) {
    return ResourceExhausted(path + ": data.pkl is larger than " +
                             std::to_string(kMaxPickleBytes) + " bytes");
  }
  PickleVm vm(path, bytes);
  TS_ASSIGN_OR_RETURN(uint32_t root, vm.Run());
  return vm.TakeResult(root);
}

}  // namespace pickle
}  // namespace tierscope
