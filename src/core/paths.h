// File-system helpers: the user's cache directory, directory creation, atomic renames.
#ifndef TIERSCOPE_CORE_PATHS_H_
#define TIERSCOPE_CORE_PATHS_H_

#include <string>

#include "tierscope/status.h"

namespace tierscope {

// $TIERSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/tierscope, else $HOME/.cache/tierscope.
StatusOr<std::string> CacheDir();
// mkdir -p.
Status MakeDirs(const std::string& path);
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);
// Reads a whole file.
StatusOr<std::string> ReadFile(const std::string& path);
// Writes a whole file (via a temporary and a rename, so readers never see half a file).
Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_PATHS_H_
