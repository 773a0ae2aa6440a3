// File-system helpers: the user's cache directory, directory creation, atomic renames.
#ifndef TIERSCOPE_CORE_PATHS_H_
#define TIERSCOPE_CORE_PATHS_H_

#include <string>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

// FailedPrecondition when `path` exists and is not a regular file (a directory, a device,
// a FIFO): what a write by rename would replace, or fail on with a temporary file's name.
Status CheckReplaceable(const std::string& path);

// InvalidArgument naming both when `out` is (the same file as) one of `inputs`: a command's
// output never replaces what it read. Inputs that do not exist, and `out` when it does not,
// pass.
Status RefuseInputAsOutput(const std::string& out, const std::vector<std::string>& inputs);

// $TIERSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/tierscope, else $HOME/.cache/tierscope.
StatusOr<std::string> CacheDir();
// mkdir -p.
Status MakeDirs(const std::string& path);
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);
// OK when `path` is a regular file (or a link to one) to read; else NotFound (no such
// file) or InvalidArgument naming what it is: a directory, or a FIFO, socket or device —
// which an open would block on, or read without end.
Status CheckReadableFile(const std::string& path);
// Reads a whole file.
StatusOr<std::string> ReadFile(const std::string& path);
// Writes a whole file (via a temporary and a rename, so readers never see half a file).
Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_PATHS_H_
