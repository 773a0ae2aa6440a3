// File-system helpers.
#include "core/paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace tierscope {

StatusOr<std::string> CacheDir() {
  if (const char* d = std::getenv("TIERSCOPE_CACHE_DIR"); d && *d) return std::string(d);
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/tierscope";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tierscope";
  return FailedPrecondition("no cache directory: set TIERSCOPE_CACHE_DIR or HOME");
}

Status MakeDirs(const std::string& path) {
  if (path.empty()) return OkStatus();
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      return FailedPrecondition("cannot create directory " + cur + ": " + std::strerror(errno));
    }
  }
  if (!IsDirectory(path)) return FailedPrecondition(path + " is not a directory");
  return OkStatus();
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status CheckReadableFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(path + ": no such file");
    return FailedPrecondition(path + ": cannot open: " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": a directory, not a file");
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(path + ": not a regular file (" +
                           (S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device") +
                           "); give the file itself");
  }
  return OkStatus();
}

StatusOr<std::string> ReadFile(const std::string& path) {
  TS_RETURN_IF_ERROR(CheckReadableFile(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return DataLoss(path + ": read error");
  return ss.str();
}

Status RefuseInputAsOutput(const std::string& out, const std::vector<std::string>& inputs) {
  std::error_code ec;
  if (out.empty() || !std::filesystem::exists(out, ec)) return OkStatus();
  for (const std::string& in : inputs) {
    if (!in.empty() && std::filesystem::equivalent(in, out, ec)) {
      return InvalidArgument(out + ": is " + (in == out ? std::string("an input") : "the input " + in) +
                             " of this command; write somewhere else");
    }
  }
  return OkStatus();
}

Status CheckReplaceable(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return FailedPrecondition(path + (S_ISDIR(st.st_mode) ? ": is a directory" : ": exists and is not a regular file"));
  }
  return OkStatus();
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  TS_RETURN_IF_ERROR(CheckReplaceable(path));
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {  // named as the user wrote it, with the reason (a missing directory, no permission)
      return FailedPrecondition(path + ": cannot create" + (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
    }
    errno = 0;
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    int err = errno;  // a full disk fails the write itself, for large contents
    if (out) {
      errno = 0;
      out.close();
      err = errno;
    }
    if (!out) {
      std::remove(tmp.c_str());
      return DataLoss(path + ": write failed" + (err != 0 ? std::string(": ") + std::strerror(err) : ""));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;  // before remove() can change it
    std::remove(tmp.c_str());
    return FailedPrecondition("cannot rename " + tmp + " to " + path + ": " + std::strerror(err));
  }
  return OkStatus();
}

}  // namespace tierscope
