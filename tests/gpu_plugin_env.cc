// Linked into every test binary of a build with a GPU plugin: the binaries live below the
// build directory, where the executable's plugin search does not look, so this points them
// at the build's plugin (unless TIERSCOPE_GPU_PLUGIN is already set, as the device check
// does for its bundle).
#include <stdlib.h>

namespace {

const bool kPluginPathSet = [] {
  setenv("TIERSCOPE_GPU_PLUGIN", TIERSCOPE_TEST_GPU_PLUGIN, /*overwrite=*/0);
  return true;
}();

}  // namespace
