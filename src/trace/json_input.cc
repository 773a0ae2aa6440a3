// JSON file input: plain or gzip, into a padded buffer.
#include "trace/json_input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>
#include <vector>

namespace tierscope {

PaddedBuffer& PaddedBuffer::operator=(PaddedBuffer&& o) noexcept {
  if (this != &o) {
    Reset();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    anonymous_ = std::exchange(o.anonymous_, false);
  }
  return *this;
}

void PaddedBuffer::Reset() {
  if (mapped_ > 0) munmap(data_, mapped_);
  else std::free(data_);
  data_ = nullptr;
  size_ = capacity_ = mapped_ = 0;
  anonymous_ = false;
}

bool PaddedBuffer::Reserve(size_t n, bool populate) {
  if (n + kPadding <= capacity_) return true;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t total = (n + kPadding + page - 1) / page * page;
  if (mapped_ > 0) {
    if (!anonymous_) return false;
    void* p = mremap(data_, mapped_, total, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<char*>(p);
    capacity_ = mapped_ = total;
    return true;
  }
  if (populate && data_ == nullptr && n >= (size_t{8} << 20)) {
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<char*>(p);
    capacity_ = mapped_ = total;
    anonymous_ = true;
    return true;
  }
  char* p = static_cast<char*>(std::realloc(data_, n + kPadding));
  if (p == nullptr) return false;
  data_ = p;
  capacity_ = n + kPadding;
  return true;
}

bool PaddedBuffer::Map(int fd, size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t total = (size + kPadding + page - 1) / page * page;
  // Zero pages for the whole span, then the file over its start; the tail of the file's
  // last page reads as zeros, and the pages after it are the anonymous ones.
  void* area = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) return false;
  // Not MAP_POPULATE: on a writable private mapping it would copy every page; read faults
  // map the page cache itself, and only the few pages written get copied.
  if (size > 0 &&
      mmap(area, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
    munmap(area, total);
    return false;
  }
  madvise(area, size, MADV_SEQUENTIAL);
  Reset();
  data_ = static_cast<char*>(area);
  size_ = size;
  capacity_ = total;
  mapped_ = total;
  return true;
}

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

// The uncompressed size a gzip trailer claims (mod 2^32) when it is plausible for a
// file of `file_size` bytes; else `file_size` x 8, a typical JSON ratio.
size_t GzipSizeHint(const unsigned char* trailer, size_t file_size) {
  const unsigned char* t = trailer;
  const size_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<size_t>(t[3]) << 24);
  return isize >= file_size / 2 && isize <= file_size * 256 + 65536 ? isize : file_size * 8;
}

// zlib, streaming: the path for inputs libdeflate rejects, so that a truncated or corrupt
// stream is reported with where it broke.
Status ReadGzipStream(FILE* f, const std::string& path, size_t file_size, PaddedBuffer& buf) {
  // The gzip trailer holds the uncompressed size mod 2^32: the first allocation, unless
  // it is implausible (a truncated or multi-member file).
  size_t hint = file_size * 8;
  unsigned char t[4];
  if (file_size >= 18 && std::fseek(f, -4, SEEK_END) == 0 && std::fread(t, 1, 4, f) == 4) {
    hint = GzipSizeHint(t, file_size);
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

// libdeflate, whole-buffer (several times zlib's speed): the compressed file is read at
// once and each gzip member decompressed into the buffer, sized from the trailer's
// length and doubled if that was short. Bad data goes to ReadGzipStream for its report.
Status ReadGzip(FILE* f, const std::string& path, size_t file_size, PaddedBuffer& buf) {
  std::vector<unsigned char> in;
  if (file_size < 18 || file_size > kMaxJsonBytes) {
    return ReadGzipStream(f, path, file_size, buf);
  }
  in.resize(file_size);
  if (std::fread(in.data(), 1, file_size, f) != file_size || std::fgetc(f) != EOF) {
    // Shorter or longer than stat said (a file being written): stream it.
    if (std::fseek(f, 0, SEEK_SET) != 0) return DataLoss(path + ": cannot seek");
    return ReadGzipStream(f, path, file_size, buf);
  }
  const unsigned char* t = in.data() + file_size - 4;
  const size_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<size_t>(t[3]) << 24);
  size_t want = GzipSizeHint(t, file_size);
  // Pages are allocated up front only for a typical JSON ratio: the trailer of a truncated
  // file is noise, and must not commit gigabytes.
  bool populate = want == isize && isize <= file_size * 32;
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (d == nullptr) return ResourceExhausted(path + ": out of memory for the decompressor");
  size_t pos = 0;
  while (pos + 2 <= in.size() && in[pos] == 0x1f && in[pos + 1] == 0x8b) {
    const size_t start = buf.size();
    for (;;) {
      want = std::min(want, kMaxJsonBytes + 1);
      if (!buf.Reserve(start + want, populate)) {
        return ResourceExhausted(path + ": out of memory for " + std::to_string(start + want) +
                                 " bytes");
      }
      size_t used = 0, got = 0;
      const libdeflate_result r = libdeflate_gzip_decompress_ex(
          d.get(), in.data() + pos, in.size() - pos, buf.data() + start, buf.room(), &used, &got);
      if (r == LIBDEFLATE_SUCCESS) {
        buf.Grow(got);
        pos += used;
        break;
      }
      if (r != LIBDEFLATE_INSUFFICIENT_SPACE) {  // corrupt or truncated: say where
        buf = PaddedBuffer();
        if (std::fseek(f, 0, SEEK_SET) != 0) return DataLoss(path + ": cannot seek");
        return ReadGzipStream(f, path, file_size, buf);
      }
      if (buf.room() > kMaxJsonBytes) {
        return ResourceExhausted(path + ": the JSON is larger than 4 GiB, simdjson's limit");
      }
      want = std::max(buf.room() * 2, size_t{1} << 20);
      populate = false;
    }
    want = std::max(want / 4, size_t{1} << 20);  // a following member: a guess, grown as needed
  }
  if (buf.size() > kMaxJsonBytes) {
    return ResourceExhausted(path + ": the JSON is larger than 4 GiB, simdjson's limit");
  }
  // Anything after the last member is ignored, as gzip does.
  return EnsureRoom(buf, path);
}

}  // namespace

int64_t EstimatedInputBytes(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  const size_t file_size = static_cast<size_t>(st.st_size);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (f == nullptr) return -1;
  unsigned char magic[2] = {0, 0};
  unsigned char t[4];
  if (file_size >= 18 && std::fread(magic, 1, 2, f.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b &&
      std::fseek(f.get(), -4, SEEK_END) == 0 && std::fread(t, 1, 4, f.get()) == 4) {
    return static_cast<int64_t>(GzipSizeHint(t, file_size));
  }
  return static_cast<int64_t>(file_size);
}

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
    // A regular file is mapped rather than copied (the padding is zero pages after it).
    if (file_size > (size_t{1} << 20) && file_size <= kMaxJsonBytes &&
        buf.Map(fileno(f.get()), file_size)) {
      return buf;
    }
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
