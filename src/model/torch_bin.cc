// Loads PyTorch's zip checkpoints (torch.save since 1.6, pytorch_model.bin) without
// Python: libzip reads the archive, the pickle subset VM (model/pickle.h) interprets
// data.pkl, and each tensor view is validated against its storage before it is exposed
// (or copied when strided).
#include "model/torch_bin.h"

#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/paths.h"
#include "model/pickle.h"

namespace tierscope {
namespace {

using pickle::Kind;
using pickle::KindName;
using pickle::Quote;
using pickle::StorageRef;
using pickle::TensorSpec;
using pickle::Value;

// ---------------------------------------------------------------------------------
// Zip access.

class ZipReader {
 public:
  explicit ZipReader(std::string path) : path_(std::move(path)) {}
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;
  ~ZipReader() {
    if (za_ != nullptr) zip_discard(za_);
  }

  Status Open() {
    TS_RETURN_IF_ERROR(CheckReadableFile(path_));
    std::FILE* f = std::fopen(path_.c_str(), "rb");
    if (f == nullptr) return NotFound(path_ + ": cannot open file: " + std::strerror(errno));
    char magic[4] = {};
    const bool zip_magic = std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "PK\3\4", 4) == 0;
    if (std::fseek(f, 0, SEEK_END) == 0) file_size_ = std::max(0L, std::ftell(f));
    std::fclose(f);

    int err = 0;
    za_ = zip_open(path_.c_str(), ZIP_RDONLY, &err);
    if (za_ != nullptr) return OkStatus();
    if (err == ZIP_ER_NOZIP && !zip_magic) {
      return InvalidArgument(
          path_ + ": not a zip archive (PyTorch's legacy non-zip torch.save format "
                  "is not supported; re-save with torch >= 1.6 or as safetensors)");
    }
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    std::string detail = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    if (err == ZIP_ER_NOENT) return NotFound(path_ + ": " + detail);
    if (err == ZIP_ER_NOZIP || err == ZIP_ER_INCONS) {
      return DataLoss(path_ + ": truncated or corrupt zip archive (" + detail + ")");
    }
    return InvalidArgument(path_ + ": cannot open zip archive: " + detail);
  }

  std::vector<std::string> EntryNames() const {
    std::vector<std::string> names;
    zip_int64_t n = zip_get_num_entries(za_, 0);
    for (zip_int64_t i = 0; i < n; ++i) {
      const char* name = zip_get_name(za_, static_cast<zip_uint64_t>(i), 0);
      names.emplace_back(name != nullptr ? name : "");
    }
    return names;
  }

  uint64_t file_size() const { return file_size_; }

  // -1 when absent.
  zip_int64_t Locate(const std::string& name) const {
    return zip_name_locate(za_, name.c_str(), 0);
  }

  // Reads a whole entry; `what` names it in errors.
  Status Read(zip_int64_t index, const std::string& what, std::vector<std::byte>* out) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za_, static_cast<zip_uint64_t>(index), 0, &st) != 0 ||
        (st.valid & ZIP_STAT_SIZE) == 0) {
      return DataLoss(path_ + ": cannot stat " + what + ": " + zip_strerror(za_));
    }
    // Bound the claimed size by what the file can hold (deflate expands <= 1032x).
    uint64_t limit = file_size_;
    if ((st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method != ZIP_CM_STORE) {
      limit = file_size_ > UINT64_MAX / 1100 ? UINT64_MAX : file_size_ * 1100;
    }
    if (st.size > limit || st.size > SIZE_MAX) {
      return DataLoss(path_ + ": " + what + " claims " + std::to_string(st.size) +
                      " bytes, more than the archive can hold (corrupt zip)");
    }
    try {
      out->assign(static_cast<size_t>(st.size), std::byte{0});
    } catch (const std::bad_alloc&) {
      return ResourceExhausted(path_ + ": cannot allocate " + std::to_string(st.size) +
                               " bytes for " + what);
    }
    zip_file_t* zf = zip_fopen_index(za_, static_cast<zip_uint64_t>(index), 0);
    if (zf == nullptr) {
      return DataLoss(path_ + ": cannot open " + what + ": " + zip_strerror(za_));
    }
    size_t done = 0;
    std::string error;
    while (done < out->size()) {
      zip_int64_t n = zip_fread(zf, out->data() + done, out->size() - done);
      if (n < 0) {
        error = zip_file_strerror(zf);
        break;
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    if (error.empty() && done == out->size()) {
      std::byte extra;  // reading to EOF makes libzip verify the CRC
      zip_int64_t n = zip_fread(zf, &extra, 1);
      if (n < 0) error = zip_file_strerror(zf);
      if (n > 0) error = "entry is longer than its declared size";
    }
    zip_fclose(zf);
    if (!error.empty()) return DataLoss(path_ + ": reading " + what + ": " + error);
    if (done != out->size()) {
      return DataLoss(path_ + ": " + what + " is truncated (" + std::to_string(done) +
                      " of " + std::to_string(out->size()) + " bytes)");
    }
    return OkStatus();
  }

 private:
  std::string path_;
  zip_t* za_ = nullptr;
  uint64_t file_size_ = 0;
};

// ---------------------------------------------------------------------------------
// Turning tensor specs into HostTensors.

// Owns every storage read from the archive and every materialised strided copy.
struct TorchBinBuffers {
  std::deque<std::vector<std::byte>> buffers;
};

class TensorBuilder {
 public:
  TensorBuilder(const std::string& path, const std::string& prefix, ZipReader* zip,
                const pickle::Result& vm, uint64_t copy_limit, TorchBinBuffers* owner)
      : path_(path), prefix_(prefix), zip_(zip), vm_(vm), copy_limit_(copy_limit),
        owner_(owner) {}

  StatusOr<HostTensor> Build(const std::string& name, const TensorSpec& spec) {
    const std::string where = path_ + ": tensor " + Quote(name);
    if (!spec.error.empty()) return InvalidArgument(where + ": " + spec.error);
    const StorageRef& ref = vm_.storages[spec.storage];
    const std::string skey = "storage key " + Quote(ref.key);
    const size_t isz = DTypeSize(ref.dtype);

    HostTensor t;
    t.dtype = ref.dtype;
    t.shape = spec.sizes;
    int64_t numel = 1;
    size_t bytes = 0;
    for (size_t d = 0; d < spec.sizes.size(); ++d) {
      if (spec.sizes[d] < 0 || spec.strides[d] < 0) {
        return InvalidArgument(where + ": negative size " + ShapeToString(spec.sizes) +
                               " or stride " + ShapeToString(spec.strides));
      }
      if (__builtin_mul_overflow(numel, spec.sizes[d], &numel) ||
          __builtin_mul_overflow(static_cast<uint64_t>(numel), isz, &bytes)) {
        return InvalidArgument(where + ": size of " + ShapeToString(spec.sizes) + " overflows");
      }
    }
    bytes = static_cast<size_t>(numel) * isz;
    TS_ASSIGN_OR_RETURN(const std::vector<std::byte>* storage,
                        LoadStorage(ref, name, where));
    t.bytes = bytes;
    if (numel == 0) {
      t.data = storage->data();
      return t;
    }
    // The furthest element the view reaches must lie inside the storage.
    int64_t last = spec.offset;
    bool overflow = false;
    for (size_t d = 0; d < spec.sizes.size(); ++d) {
      int64_t span = 0;
      overflow = overflow || __builtin_mul_overflow(spec.sizes[d] - 1, spec.strides[d], &span) ||
                 __builtin_add_overflow(last, span, &last);
    }
    if (overflow || last >= ref.numel) {
      return OutOfRange(where + ": view (offset " + std::to_string(spec.offset) + ", size " +
                        ShapeToString(spec.sizes) + ", stride " +
                        ShapeToString(spec.strides) + ") reaches past the end of " + skey +
                        " (" + std::to_string(ref.numel) + " elements)");
    }
    const std::byte* base = storage->data() + static_cast<size_t>(spec.offset) * isz;
    bool contiguous = true;
    int64_t expect = 1;
    for (size_t d = spec.sizes.size(); d > 0; --d) {
      if (spec.sizes[d - 1] == 1) continue;
      if (spec.strides[d - 1] != expect) contiguous = false;
      expect *= spec.sizes[d - 1];
    }
    if (contiguous) {
      t.data = base;
      return t;
    }
    if (bytes > copy_limit_) {
      return ResourceExhausted(where + ": materialising the strided view " +
                               ShapeToString(spec.sizes) + " would need " +
                               std::to_string(bytes) + " bytes");
    }
    std::vector<std::byte> copy;
    try {
      copy.resize(bytes);
    } catch (const std::bad_alloc&) {
      return ResourceExhausted(where + ": cannot allocate " + std::to_string(bytes) +
                               " bytes for a contiguous copy");
    }
    CopyStrided(base, isz, spec.sizes, spec.strides, numel, copy.data());
    owner_->buffers.push_back(std::move(copy));
    t.data = owner_->buffers.back().data();
    return t;
  }

 private:
  // Gathers a strided view (sizes all > 0) into `out`, row-major.
  static void CopyStrided(const std::byte* base, size_t isz,
                          const std::vector<int64_t>& sizes,
                          const std::vector<int64_t>& strides, int64_t numel,
                          std::byte* out) {
    const size_t nd = sizes.size();
    const int64_t inner = nd > 0 ? sizes[nd - 1] : 1;
    const int64_t inner_stride = nd > 0 ? strides[nd - 1] : 0;
    std::vector<int64_t> idx(nd, 0);
    int64_t pos = 0;  // element offset of the current row from `base`
    for (int64_t row = 0, rows = numel / inner; row < rows; ++row) {
      const std::byte* src = base + static_cast<size_t>(pos) * isz;
      if (inner_stride == 1) {
        std::memcpy(out, src, static_cast<size_t>(inner) * isz);
        out += static_cast<size_t>(inner) * isz;
      } else {
        for (int64_t j = 0; j < inner; ++j, out += isz) {
          std::memcpy(out, src + static_cast<size_t>(j * inner_stride) * isz, isz);
        }
      }
      for (size_t d = nd >= 2 ? nd - 1 : 0; d > 0; --d) {
        if (++idx[d - 1] < sizes[d - 1]) {
          pos += strides[d - 1];
          break;
        }
        pos -= (sizes[d - 1] - 1) * strides[d - 1];
        idx[d - 1] = 0;
      }
    }
  }

  // Reads `data/<key>` once per key and checks its size against this reference.
  StatusOr<const std::vector<std::byte>*> LoadStorage(const StorageRef& ref,
                                                      const std::string& name,
                                                      const std::string& where) {
    const std::string entry = prefix_ + "data/" + ref.key;
    auto it = cache_.find(ref.key);
    if (it == cache_.end()) {
      zip_int64_t index = zip_->Locate(entry);
      if (index < 0) {
        return NotFound(where + ": storage key " + Quote(ref.key) + " (entry " +
                        Quote(entry) + ") is missing from the archive");
      }
      std::vector<std::byte> bytes;
      TS_RETURN_IF_ERROR(zip_->Read(
          index, "storage key " + Quote(ref.key) + " (tensor " + Quote(name) + ")", &bytes));
      owner_->buffers.push_back(std::move(bytes));
      it = cache_.emplace(ref.key, &owner_->buffers.back()).first;
    }
    const std::vector<std::byte>* storage = it->second;
    const size_t isz = DTypeSize(ref.dtype);
    uint64_t want = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(ref.numel), isz, &want) ||
        want != storage->size()) {
      return DataLoss(where + ": storage key " + Quote(ref.key) + " holds " +
                      std::to_string(storage->size()) + " bytes, but its numel " +
                      std::to_string(ref.numel) + " x " + std::to_string(isz) +
                      " bytes (" + std::string(DTypeName(ref.dtype)) + ") needs " +
                      std::to_string(static_cast<uint64_t>(ref.numel) * isz));
    }
    return storage;
  }

  const std::string& path_;
  const std::string& prefix_;
  ZipReader* zip_;
  const pickle::Result& vm_;
  uint64_t copy_limit_;
  TorchBinBuffers* owner_;
  std::unordered_map<std::string, const std::vector<std::byte>*> cache_;
};

}  // namespace

StatusOr<TensorMap> LoadTorchBin(const std::string& path) {
  ZipReader zip(path);
  TS_RETURN_IF_ERROR(zip.Open());

  // Find the single "<prefix>/data.pkl"; the top folder's name varies.
  std::string prefix;
  int found = 0;
  for (const std::string& name : zip.EntryNames()) {
    constexpr std::string_view kPkl = "/data.pkl";
    if (name.size() > kPkl.size() && name.ends_with(kPkl)) {
      if (++found > 1) {
        return InvalidArgument(path + ": several data.pkl entries (" +
                               Quote(prefix + "data.pkl") + ", " + Quote(name) + ")");
      }
      prefix = name.substr(0, name.size() - (kPkl.size() - 1));
    }
  }
  if (found == 0) {
    return InvalidArgument(path + ": zip archive has no <folder>/data.pkl entry "
                                  "(not a PyTorch checkpoint)");
  }
  zip_int64_t byteorder = zip.Locate(prefix + "byteorder");
  if (byteorder >= 0) {
    std::vector<std::byte> b;
    TS_RETURN_IF_ERROR(zip.Read(byteorder, Quote(prefix + "byteorder"), &b));
    std::string order(reinterpret_cast<const char*>(b.data()), b.size());
    order.erase(std::min(order.size(), order.find_last_not_of(" \r\n") + 1));
    if (order != "little") {
      return Unimplemented(path + ": byteorder is " + Quote(order) +
                           "; only little-endian checkpoints are supported");
    }
  }

  std::vector<std::byte> data_pkl;
  TS_RETURN_IF_ERROR(zip.Read(zip.Locate(prefix + "data.pkl"), Quote(prefix + "data.pkl"),
                              &data_pkl));
  TS_ASSIGN_OR_RETURN(const pickle::Result vm, pickle::Unpickle(path, data_pkl));
  const Value& root = vm.value(vm.root);
  if (root.kind != Kind::kDict) {
    return InvalidArgument(path + ": data.pkl holds a " + std::string(KindName(root.kind)) +
                           ", not a state dict (a dict of tensors)");
  }

  auto owner = std::make_shared<TorchBinBuffers>();
  TensorMap result;
  result.source = path;
  // A strided view's contiguous copy may not exceed 16x the file plus 64 MiB.
  const uint64_t copy_limit = zip.file_size() * 16 + (uint64_t{64} << 20);
  TensorBuilder builder(path, prefix, &zip, vm, copy_limit, owner.get());
  for (size_t k = 0; k + 1 < root.items.size(); k += 2) {
    const Value& key = vm.value(root.items[k]);
    const Value& val = vm.value(root.items[k + 1]);
    if (key.kind != Kind::kStr) {
      return InvalidArgument(path + ": state-dict key #" + std::to_string(k / 2) + " is a " +
                             KindName(key.kind) + ", not a str");
    }
    if (val.kind != Kind::kTensor) {
      return InvalidArgument(path + ": state-dict entry " + Quote(key.s) + " is a " +
                             KindName(val.kind) + ", not a tensor (only flat state dicts)");
    }
    TS_ASSIGN_OR_RETURN(HostTensor t,
                        builder.Build(key.s, vm.tensors[static_cast<size_t>(val.i)]));
    result.tensors.insert_or_assign(key.s, std::move(t));
  }
  result.storage = std::move(owner);
  return result;
}

}  // namespace tierscope
