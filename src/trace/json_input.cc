// JSON file input: plain or gzip, into a padded buffer.
#include "trace/json_input.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace tierscope {
namespace {


// Makes room for another read, growing by half; JSON beyond 4 GiB is refused.
Status EnsureRoom(PaddedBuffer& buf, const std::string& path) {
  if (buf.size() > kMaxJsonBytes) {
    return ResourceExhausted(path + ": the JSON is larger than 4 GiB, simdjson's limit");
  }
  if (buf.room() >= 4096) return OkStatus();
  const size_t want = buf.size() + std::max(buf.size() / 2, size_t{1} << 20);
  if (buf.Reserve(want)) return OkStatus();
  return ResourceExhausted(path + ": out of memory for " + std::to_string(want) + " bytes");
}

Status ReadGzip(FILE* f, const std::string& path, size_t file_size, PaddedBuffer& buf) {
  // The gzip trailer holds the uncompressed size mod 2^32: the first allocation, unless
  // it is implausible (a truncated or multi-member file).
  size_t hint = file_size * 8;
  unsigned char t[4];
  if (file_size >= 18 && std::fseek(f, -4, SEEK_END) == 0 && std::fread(t, 1, 4, f) == 4) {
    const size_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<size_t>(t[3]) << 24);
    if (isize >= file_size / 2 && isize <= file_size * 256 + 65536) hint = isize;
  }
  if (std::fseek(f, 0, SEEK_SET) != 0) return DataLoss(path + ": cannot seek");
  buf.Reserve(std::min(hint, kMaxJsonBytes) + 1);  // a failure shows in EnsureRoom

  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Internal(path + ": inflateInit failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  std::vector<unsigned char> in(size_t{1} << 18);
  bool eof = false;
  size_t compressed = 0;
  auto refill = [&]() {
    if (zs.avail_in > 0 || eof) return;
    const size_t n = std::fread(in.data(), 1, in.size(), f);
    eof = n == 0;
    zs.next_in = in.data();
    zs.avail_in = static_cast<uInt>(n);
    compressed += n;
  };
  for (;;) {
    refill();
    if (std::ferror(f)) return DataLoss(path + ": read failed: " + std::strerror(errno));
    TS_RETURN_IF_ERROR(EnsureRoom(buf, path));
    const size_t room = std::min<size_t>(buf.room(), size_t{1} << 30);
    zs.next_out = reinterpret_cast<Bytef*>(buf.data() + buf.size());
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    buf.Grow(room - zs.avail_out);
    if (rc == Z_OK || (rc == Z_BUF_ERROR && !(zs.avail_in == 0 && eof))) continue;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (concatenated .gz); anything else is ignored.
      refill();
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) break;
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_BUF_ERROR) {
      return DataLoss(path + ": truncated gzip stream: it ends after " +
                      std::to_string(compressed) + " compressed bytes (" +
                      std::to_string(buf.size()) + " bytes of JSON)");
    }
    if (rc == Z_MEM_ERROR) return ResourceExhausted(path + ": out of memory in inflate");
    return DataLoss(path + ": corrupt gzip stream near compressed byte " +
                    std::to_string(compressed - zs.avail_in) + ": " +
                    (zs.msg != nullptr ? zs.msg : "inflate error"));
  }
  return EnsureRoom(buf, path);
}

}  // namespace

StatusOr<PaddedBuffer> ReadJsonInput(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(path + ": no such file");
    return FailedPrecondition(path + ": cannot open: " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": is a directory, not a trace");
  struct Close {
    void operator()(FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<FILE, Close> f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) return FailedPrecondition(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const bool gz = std::fread(magic, 1, 2, f.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (std::fseek(f.get(), 0, SEEK_SET) != 0) return DataLoss(path + ": cannot seek");
  const size_t file_size = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  PaddedBuffer buf;
  if (gz) {
    TS_RETURN_IF_ERROR(ReadGzip(f.get(), path, file_size, buf));
  } else {
    buf.Reserve(std::min(file_size, kMaxJsonBytes) + 1);  // +1: EOF seen without growing
    for (size_t n = 1; n > 0; buf.Grow(n)) {
      TS_RETURN_IF_ERROR(EnsureRoom(buf, path));
      n = std::fread(buf.data() + buf.size(), 1, buf.room(), f.get());
    }
    if (std::ferror(f.get())) return DataLoss(path + ": read failed: " + std::strerror(errno));
    TS_RETURN_IF_ERROR(EnsureRoom(buf, path));
  }
  buf.Finish();
  return buf;
}

}  // namespace tierscope
