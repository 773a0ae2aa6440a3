// NumPy .npy / .npz writers.
#include "core/npy.h"

#include <zip.h>

#include <cstdio>

#include "core/paths.h"

namespace tierscope {

std::string NpyBytes(const std::vector<int64_t>& shape, const float* data) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
    n *= shape[i];
  }
  dict += "), }";
  // Magic (6) + version (2) + header length (2) + dict, padded with spaces to a
  // multiple of 64 and ended by a newline.
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  uint16_t hlen = static_cast<uint16_t>(dict.size());
  out += static_cast<char>(hlen & 0xff);
  out += static_cast<char>(hlen >> 8);
  out += dict;
  out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n) * sizeof(float));
  return out;
}

Status WriteNpy(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  return WriteFileAtomic(path, NpyBytes(shape, data));
}

Status WriteNpz(const std::string& path, const std::vector<NpyArray>& arrays) {
  const std::string tmp = path + ".tmp";
  std::remove(tmp.c_str());
  int err = 0;
  zip_t* z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (z == nullptr) return FailedPrecondition(path + ": cannot create zip (libzip error " + std::to_string(err) + ")");
  std::vector<std::string> members;  // must outlive zip_close
  members.reserve(arrays.size());
  for (const auto& a : arrays) {
    members.push_back(NpyBytes(a.shape, a.data));
    zip_source_t* src = zip_source_buffer(z, members.back().data(), members.back().size(), 0);
    if (src == nullptr) {
      zip_discard(z);
      return Internal(path + ": zip_source_buffer failed");
    }
    zip_int64_t idx = zip_file_add(z, (a.name + ".npy").c_str(), src, ZIP_FL_OVERWRITE);
    if (idx < 0) {
      zip_source_free(src);
      zip_discard(z);
      return Internal(path + ": cannot add " + a.name);
    }
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) {
    std::string msg = zip_strerror(z);
    zip_discard(z);
    return DataLoss(path + ": writing the zip failed: " + msg);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return FailedPrecondition(path + ": rename failed");
  return OkStatus();
}

}  // namespace tierscope
