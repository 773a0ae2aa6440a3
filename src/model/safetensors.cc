// safetensors reader (mmap, validated) and writer.
#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/paths.h"

namespace tierscope {
namespace {

using nlohmann::json;

struct Mapping {
  void* addr = nullptr;
  size_t size = 0;
  // Aligned copies of tensors whose data in the file is misaligned (operator new aligns
  // for every element type).
  std::vector<std::vector<std::byte>> copies;
  ~Mapping() {
    if (addr != nullptr && addr != MAP_FAILED) munmap(addr, size);
  }
};

StatusOr<DType> ParseDType(const std::string& s) {
  if (s == "F32") return DType::kF32;
  if (s == "F16") return DType::kF16;
  if (s == "BF16") return DType::kBF16;
  if (s == "F64") return DType::kF64;
  if (s == "I64") return DType::kI64;
  if (s == "I32") return DType::kI32;
  if (s == "I16") return DType::kI16;
  if (s == "I8") return DType::kI8;
  if (s == "U8") return DType::kU8;
  if (s == "BOOL") return DType::kBool;
  return InvalidArgument("unknown dtype '" + s + "'");
}

const char* DTypeCode(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kF64: return "F64";
    case DType::kI64: return "I64";
    case DType::kI32: return "I32";
    case DType::kI16: return "I16";
    case DType::kI8: return "I8";
    case DType::kU8: return "U8";
    case DType::kBool: return "BOOL";
  }
  return "?";
}

// Reads a non-negative integer that fits in 62 bits.
bool GetCount(const json& v, uint64_t* out) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) return false;
  uint64_t x = v.get<uint64_t>();
  if (x > (uint64_t{1} << 62)) return false;
  *out = x;
  return true;
}

}  // namespace

StatusOr<TensorMap> LoadSafetensors(const std::string& path) {
  TS_RETURN_IF_ERROR(CheckReadableFile(path));  // a FIFO would block the open
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return DataLoss(path + ": cannot stat");
  }
  auto map = std::make_shared<Mapping>();
  map->size = static_cast<size_t>(st.st_size);
  if (map->size < 8) {
    close(fd);
    return DataLoss(path + ": truncated: the file is " + std::to_string(map->size) +
                    " bytes, a safetensors file needs at least 8");
  }
  map->addr = mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map->addr == MAP_FAILED) return DataLoss(path + ": cannot mmap: " + std::strerror(errno));
  const auto* base = static_cast<const std::byte*>(map->addr);

  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(base[i]);
  if (header_len > map->size - 8) {
    return DataLoss(path + ": header length " + std::to_string(header_len) +
                    " runs past the end of the file (" + std::to_string(map->size) + " bytes)");
  }
  const char* hbegin = reinterpret_cast<const char*>(base + 8);
  json header = json::parse(hbegin, hbegin + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return DataLoss(path + ": the header is not a valid JSON object");
  }
  const uint64_t data_size = map->size - 8 - header_len;
  const std::byte* data = base + 8 + header_len;

  TensorMap result;
  result.source = path;
  struct Span { uint64_t begin, end; std::string name; };
  std::vector<Span> spans;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = path + ": tensor '" + name + "'";
    if (!entry.is_object()) return DataLoss(where + ": header entry is not an object");
    auto dt = entry.find("dtype");
    auto sh = entry.find("shape");
    auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) return DataLoss(where + ": missing 'dtype'");
    if (sh == entry.end() || !sh->is_array()) return DataLoss(where + ": missing 'shape'");
    if (off == entry.end() || !off->is_array() || off->size() != 2) {
      return DataLoss(where + ": 'data_offsets' must be [begin, end]");
    }
    auto dtype = ParseDType(dt->get<std::string>());
    if (!dtype.ok()) return dtype.status().WithContext(where);
    HostTensor t;
    t.dtype = *dtype;
    uint64_t numel = 1;
    for (const auto& d : *sh) {
      uint64_t v;
      if (!GetCount(d, &v)) return DataLoss(where + ": bad dimension " + JsonExcerpt(d));
      t.shape.push_back(static_cast<int64_t>(v));
      if (v != 0 && numel > (uint64_t{1} << 62) / v) return DataLoss(where + ": shape too large");
      numel *= v;
    }
    uint64_t begin, end;
    if (!GetCount((*off)[0], &begin) || !GetCount((*off)[1], &end) || begin > end) {
      return DataLoss(where + ": bad data_offsets " + JsonExcerpt(*off));
    }
    if (end > data_size) {
      return DataLoss(where + ": data_offsets " + JsonExcerpt(*off) + " run past the end of the data (" +
                      std::to_string(data_size) + " bytes)");
    }
    uint64_t expected = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(DTypeSize(t.dtype)), &expected)) {
      return DataLoss(where + ": shape " + ShapeToString(t.shape) + " of " +
                      std::string(DTypeName(t.dtype)) + " is too large (its size overflows)");
    }
    if (end - begin != expected) {
      return DataLoss(where + ": " + std::to_string(end - begin) + " bytes of data for shape " +
                      ShapeToString(t.shape) + " of " + std::string(DTypeName(t.dtype)) +
                      " (needs " + std::to_string(expected) + ")");
    }
    t.data = data + begin;
    t.bytes = static_cast<size_t>(expected);
    // The format does not require alignment (writers pad the header to 8 bytes, but not
    // every file was written so): a tensor whose data is not aligned to its element size
    // is copied, so no element is ever read through a misaligned pointer.
    if (reinterpret_cast<uintptr_t>(t.data) % DTypeSize(t.dtype) != 0) {
      auto& copy = map->copies.emplace_back();
      try {
        copy.resize(t.bytes);
      } catch (const std::bad_alloc&) {
        return ResourceExhausted(where + ": cannot allocate " + std::to_string(t.bytes) +
                                 " bytes for an aligned copy of its misaligned data (offset " +
                                 std::to_string(8 + header_len + begin) + ")");
      }
      if (t.bytes > 0) std::memcpy(copy.data(), t.data, t.bytes);
      t.data = copy.data();
      ++result.realigned;
    }
    spans.push_back({begin, end, name});
    result.tensors.emplace(name, std::move(t));
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end) {
      return DataLoss(path + ": tensors '" + spans[i - 1].name + "' and '" + spans[i].name +
                      "' overlap in the data section");
    }
  }
  result.storage = map;
  return result;
}

Status WriteSafetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", DTypeCode(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string h = header.dump();
  while ((h.size() + 8) % 8 != 0) h += ' ';  // data starts 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return NotFound(path + ": cannot create");
  uint64_t n = h.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.write(len, 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& t : tensors) out.write(t.bytes.data(), static_cast<std::streamsize>(t.bytes.size()));
  out.close();
  if (!out) return DataLoss(path + ": write failed");
  return OkStatus();
}

}  // namespace tierscope
