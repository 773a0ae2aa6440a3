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

#include "core/paths.h"

namespace tierscope {

#define TS_JSON_NAME_OF(x) #x
#define TS_JSON_NAME(x) TS_JSON_NAME_OF(x)
const char* OnDemandKernel() { return TS_JSON_NAME(SIMDJSON_BUILTIN_IMPLEMENTATION); }
#undef TS_JSON_NAME
#undef TS_JSON_NAME_OF

PaddedBuffer& PaddedBuffer::operator=(PaddedBuffer&& o) noexcept {
  if (this != &o) {
    Reset();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    anonymous_ = std::exchange(o.anonymous_, false);
    dropped_ = std::exchange(o.dropped_, 0);
  }
  return *this;
}

void PaddedBuffer::Reset() {
  if (mapped_ > 0) munmap(data_, mapped_);
  else std::free(data_);
  data_ = nullptr;
  size_ = capacity_ = mapped_ = dropped_ = 0;
  anonymous_ = false;
}

void PaddedBuffer::DropPagesBefore(size_t offset) {
  if (mapped_ == 0 || anonymous_) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t end = std::min(offset, size_) / page * page;
  if (end <= dropped_) return;
  madvise(data_ + dropped_, end - dropped_, MADV_DONTNEED);
  dropped_ = end;
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

uint32_t LittleEndian32(const unsigned char* t) {
  return t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<uint32_t>(t[3]) << 24);
}

Status TooLarge(const std::string& path, size_t known_size = 0) {
  const std::string size =
      known_size > 0 ? std::to_string(known_size) + " bytes of JSON" : "more than 4 GiB of JSON";
  return ResourceExhausted(path + ": " + size + ", over simdjson's limit of " +
                           std::to_string(kMaxJsonBytes) + " bytes; split the trace");
}

Status CheckSize(const PaddedBuffer& buf, const std::string& path) {
  return buf.size() > kMaxJsonBytes ? TooLarge(path) : OkStatus();
}

// Makes room for another read, growing by half up to just past the limit, so that JSON
// beyond 4 GiB is refused as soon as one byte more has arrived.
Status EnsureRoom(PaddedBuffer& buf, const std::string& path) {
  if (buf.size() > kMaxJsonBytes) return TooLarge(path);
  if (buf.room() >= 4096) return OkStatus();
  const size_t want =
      std::min(buf.size() + std::max(buf.size() / 2, size_t{1} << 20), kMaxJsonBytes + 1);
  if (buf.Reserve(want)) return OkStatus();
  return ResourceExhausted(path + ": out of memory for " + std::to_string(want) + " bytes");
}

// Whether a gzip trailer's uncompressed size (mod 2^32) is plausible for a file of
// `file_size` bytes: a truncated or multi-member file's last four bytes are noise, and a
// JSON past 4 GiB wraps around to a small number.
bool PlausibleIsize(size_t isize, size_t file_size) {
  return isize >= file_size / 2 && isize <= file_size * 256 + 65536;
}

// What follows the last gzip member: "" when nothing does or only zeros (padding, which
// gzip and Python's gzip pass over too), else a note of the bytes ignored, as gzip warns of
// them ("trailing garbage ignored"). `pending` holds what was read already; the rest of `f`
// is read to its end.
std::string IgnoredTail(FILE* f, const unsigned char* pending, size_t pending_bytes) {
  const auto zero = [](unsigned char c) { return c == 0; };
  size_t total = pending_bytes;
  bool zeros = std::all_of(pending, pending + pending_bytes, zero);
  std::vector<unsigned char> rest(size_t{1} << 16);
  for (size_t n; f != nullptr && (n = std::fread(rest.data(), 1, rest.size(), f)) > 0;) {
    total += n;
    zeros = zeros && std::all_of(rest.data(), rest.data() + n, zero);
  }
  const std::string failed =
      f != nullptr && std::ferror(f) ? std::string(" (reading them failed: ") + std::strerror(errno) + ")" : "";
  if (failed.empty() && (total == 0 || zeros)) return "";
  return "ignored " + std::to_string(total) +
         (total == 1 ? " byte after its gzip data that is" : " bytes after its gzip data that are") +
         " not a gzip member (gzip, too, ignores such bytes, with a warning)" + failed;
}

// zlib, streaming, from byte `offset` of the file (a gzip member's start) to the end,
// appended to `buf` and grown as it goes, so each byte is decompressed once: the path for
// inputs libdeflate cannot take in one pass, and for a truncated or corrupt stream, which
// it reports with where it broke. Refuses as soon as the output passes 4 GiB.
Status ReadGzipStream(FILE* f, const std::string& path, size_t file_size, size_t offset, std::string& ignored,
                      PaddedBuffer& buf) {
  if (buf.size() == 0) {
    // The trailer holds the uncompressed size mod 2^32: the first allocation, unless it
    // is implausible; then 8x the compressed size, a typical JSON ratio.
    size_t hint = file_size * 8;
    unsigned char t[4];
    if (file_size >= 18 && std::fseek(f, -4, SEEK_END) == 0 && std::fread(t, 1, 4, f) == 4 &&
        PlausibleIsize(LittleEndian32(t), file_size)) {
      hint = LittleEndian32(t);
    }
    buf.Reserve(std::min(hint, kMaxJsonBytes) + 1);  // a failure shows in EnsureRoom
  }
  if (std::fseek(f, static_cast<long>(offset), SEEK_SET) != 0) {
    return DataLoss(path + ": cannot seek");
  }
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Internal(path + ": inflateInit failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  std::vector<unsigned char> in(size_t{1} << 18);
  bool eof = false;
  size_t compressed = offset;
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
      // Another gzip member may follow (concatenated .gz); anything else is ignored and said.
      refill();
      if (zs.avail_in == 1 && !eof) {  // a member's magic split across two reads
        in[0] = *zs.next_in;
        const size_t n = std::fread(in.data() + 1, 1, in.size() - 1, f);
        zs.next_in = in.data();
        zs.avail_in = static_cast<uInt>(n + 1);
        compressed += n;
        eof = n == 0;
      }
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) {
        ignored = IgnoredTail(f, zs.next_in, zs.avail_in);
        break;
      }
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
  return CheckSize(buf, path);
}

// libdeflate, whole-buffer (several times zlib's speed), when the trailer's size is
// plausible: the compressed file is read at once and its first member decompressed, in
// one pass, into a buffer of exactly that size. libdeflate cannot resume, so the rest
// goes to ReadGzipStream: members after the first (from where the first ended), or the
// whole file when the trailer was short (a multi-member file whose last member is the
// smallest, or JSON past 4 GiB, the trailer being mod 2^32), implausible, or the data
// bad (zlib says where). No buffer is ever doubled and decompressed into again.
Status ReadGzip(FILE* f, const std::string& path, size_t file_size, std::string& ignored, PaddedBuffer& buf) {
  unsigned char t[4];
  const bool trailer = file_size >= 18 && file_size <= kMaxJsonBytes &&
                       std::fseek(f, -4, SEEK_END) == 0 && std::fread(t, 1, 4, f) == 4;
  const size_t isize = trailer ? LittleEndian32(t) : 0;
  if (std::fseek(f, 0, SEEK_SET) != 0) return DataLoss(path + ": cannot seek");
  if (!trailer || !PlausibleIsize(isize, file_size)) {
    return ReadGzipStream(f, path, file_size, 0, ignored, buf);
  }
  std::vector<unsigned char> in(file_size);
  if (std::fread(in.data(), 1, file_size, f) != file_size || std::fgetc(f) != EOF) {
    return ReadGzipStream(f, path, file_size, 0, ignored, buf);  // not what stat said: being written
  }
  // Pages are allocated up front only for a typical JSON ratio.
  if (!buf.Reserve(isize + 1, /*populate=*/isize <= file_size * 32)) {
    return ResourceExhausted(path + ": out of memory for " + std::to_string(isize + 1) +
                             " bytes");
  }
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (d == nullptr) return ResourceExhausted(path + ": out of memory for the decompressor");
  size_t used = 0, got = 0;
  const libdeflate_result r = libdeflate_gzip_decompress_ex(
      d.get(), in.data(), in.size(), buf.data(), buf.room(), &used, &got);
  d.reset();
  if (r != LIBDEFLATE_SUCCESS) {  // the allocation is kept for zlib
    buf.Truncate(0);
    return ReadGzipStream(f, path, file_size, 0, ignored, buf);
  }
  buf.Grow(got);
  const bool more = used + 2 <= in.size() && in[used] == 0x1f && in[used + 1] == 0x8b;
  // Another member follows (concatenated .gz); anything else after the first is ignored,
  // as gzip does, and said.
  if (!more) ignored = IgnoredTail(nullptr, in.data() + used, in.size() - used);
  in = std::vector<unsigned char>();
  if (more) return ReadGzipStream(f, path, file_size, used, ignored, buf);
  return CheckSize(buf, path);
}

}  // namespace

bool IsOverJsonLimit(const Status& status) {
  return status.code() == StatusCode::kResourceExhausted &&
         status.message().find("over simdjson's limit") != std::string::npos;
}

namespace {

// The JSON a gzip file holds, from how far its first MiB of output goes into the input:
// what its trailer cannot say past 4 GiB (it holds the size mod 2^32). -1 if unreadable.
int64_t SampledGzipBytes(FILE* f, size_t file_size) {
  if (std::fseek(f, 0, SEEK_SET) != 0) return -1;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return -1;
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  std::vector<unsigned char> in(size_t{1} << 16), out(size_t{1} << 20);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  while (zs.avail_out > 0) {
    if (zs.avail_in == 0) {
      const size_t n = std::fread(in.data(), 1, in.size(), f);
      if (n == 0) break;
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    if (inflate(&zs, Z_NO_FLUSH) != Z_OK) break;
  }
  if (zs.total_in == 0 || zs.total_out < out.size()) return static_cast<int64_t>(zs.total_out);  // all of it
  return static_cast<int64_t>(static_cast<double>(file_size) * static_cast<double>(zs.total_out) /
                              static_cast<double>(zs.total_in));
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
    const size_t isize = LittleEndian32(t);
    const int64_t sampled = SampledGzipBytes(f.get(), file_size);
    // A trailer far below what the start of the stream promises has wrapped past 4 GiB.
    if (sampled > 2 * static_cast<int64_t>(isize) + (int64_t{1} << 20)) return sampled;
    return static_cast<int64_t>(PlausibleIsize(isize, file_size) ? isize : file_size * 8);
  }
  return static_cast<int64_t>(file_size);
}

namespace {
constexpr size_t kStreamInBytes = size_t{1} << 18;
}  // namespace

StatusOr<std::unique_ptr<JsonStream>> JsonStream::Open(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(path + ": no such file");
    return FailedPrecondition(path + ": cannot open: " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": is a directory, not a trace");
  if (!S_ISREG(st.st_mode)) return CheckReadableFile(path);  // a FIFO, socket or device
  std::unique_ptr<JsonStream> s(new JsonStream());
  s->path_ = path;
  s->file_ = std::fopen(path.c_str(), "rb");
  if (s->file_ == nullptr) return FailedPrecondition(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const bool gz = std::fread(magic, 1, 2, s->file_) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (std::fseek(s->file_, 0, SEEK_SET) != 0) return DataLoss(path + ": cannot seek");
  if (gz) {
    s->zs_ = new z_stream{};
    if (inflateInit2(s->zs_, 15 + 32) != Z_OK) return Internal(path + ": inflateInit failed");
    s->in_ = std::make_unique<unsigned char[]>(kStreamInBytes);
  }
  return s;
}

JsonStream::~JsonStream() {
  if (zs_ != nullptr) {
    inflateEnd(zs_);
    delete zs_;
  }
  if (file_ != nullptr) std::fclose(file_);
}

StatusOr<size_t> JsonStream::Read(char* out, size_t n) {
  if (n == 0 || ended_) return size_t{0};
  // Ask the kernel for the next stretch of the file now, so that the disk reads it while
  // this window is parsed (a read() would wait for it after).
  const off_t at = static_cast<off_t>(zs_ == nullptr ? produced_ : compressed_);
  if (at >= advised_) {
    constexpr off_t kAhead = off_t{256} << 20;
    posix_fadvise(fileno(file_), at, kAhead, POSIX_FADV_WILLNEED);
    advised_ = at + kAhead / 2;
  }
  if (zs_ == nullptr) {
    const size_t got = std::fread(out, 1, n, file_);
    if (got == 0 && std::ferror(file_)) return DataLoss(path_ + ": read failed: " + std::strerror(errno));
    if (got == 0) ended_ = true;
    produced_ += got;
    return got;
  }
  const auto refill = [&] {
    if (zs_->avail_in > 0 || eof_) return;
    const size_t got = std::fread(in_.get(), 1, kStreamInBytes, file_);
    eof_ = got == 0;
    zs_->next_in = in_.get();
    zs_->avail_in = static_cast<uInt>(got);
    compressed_ += got;
  };
  const size_t room = std::min<size_t>(n, size_t{1} << 30);
  zs_->next_out = reinterpret_cast<Bytef*>(out);
  zs_->avail_out = static_cast<uInt>(room);
  while (zs_->avail_out == room) {
    refill();
    if (std::ferror(file_)) return DataLoss(path_ + ": read failed: " + std::strerror(errno));
    const int rc = inflate(zs_, Z_NO_FLUSH);
    if (rc == Z_OK || (rc == Z_BUF_ERROR && !(zs_->avail_in == 0 && eof_))) continue;
    if (rc == Z_STREAM_END) {
      refill();  // another gzip member may follow; anything else is ignored, as gzip does, and said
      if (zs_->avail_in == 1 && !eof_) {  // a member's magic split across two reads
        in_[0] = *zs_->next_in;
        const size_t got = std::fread(in_.get() + 1, 1, kStreamInBytes - 1, file_);
        zs_->next_in = in_.get();
        zs_->avail_in = static_cast<uInt>(got + 1);
        compressed_ += got;
        eof_ = got == 0;
      }
      if (zs_->avail_in < 2 || zs_->next_in[0] != 0x1f || zs_->next_in[1] != 0x8b) {
        ignored_ = IgnoredTail(file_, zs_->next_in, zs_->avail_in);
        ended_ = true;
        break;
      }
      inflateReset(zs_);
      continue;
    }
    if (rc == Z_BUF_ERROR) {
      return DataLoss(path_ + ": truncated gzip stream: it ends after " + std::to_string(compressed_) +
                      " compressed bytes (" + std::to_string(produced_ + room - zs_->avail_out) + " bytes of JSON)");
    }
    if (rc == Z_MEM_ERROR) return ResourceExhausted(path_ + ": out of memory in inflate");
    return DataLoss(path_ + ": corrupt gzip stream near compressed byte " +
                    std::to_string(compressed_ - zs_->avail_in) + ": " + (zs_->msg != nullptr ? zs_->msg : "inflate error"));
  }
  const size_t got = room - zs_->avail_out;
  produced_ += got;
  return got;
}

StatusOr<PaddedBuffer> ReadJsonInput(const std::string& path, std::string* ignored) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(path + ": no such file");
    return FailedPrecondition(path + ": cannot open: " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": is a directory, not a trace");
  if (!S_ISREG(st.st_mode)) return CheckReadableFile(path);  // a FIFO, socket or device
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
    std::string tail;
    TS_RETURN_IF_ERROR(ReadGzip(f.get(), path, file_size, tail, buf));
    if (ignored != nullptr) *ignored = std::move(tail);
  } else if (file_size > kMaxJsonBytes) {
    return TooLarge(path, file_size);  // refused from its size, before reading a byte
  } else {
    // A regular file is mapped rather than copied (the padding is zero pages after it).
    if (file_size > (size_t{1} << 20) && buf.Map(fileno(f.get()), file_size)) {
      return buf;
    }
    buf.Reserve(file_size + 1);  // +1: EOF seen without growing
    for (size_t n = 1; n > 0; buf.Grow(n)) {
      TS_RETURN_IF_ERROR(EnsureRoom(buf, path));
      n = std::fread(buf.data() + buf.size(), 1, buf.room(), f.get());
    }
    if (std::ferror(f.get())) return DataLoss(path + ": read failed: " + std::strerror(errno));
    TS_RETURN_IF_ERROR(CheckSize(buf, path));
  }
  buf.Finish();
  return buf;
}

}  // namespace tierscope
