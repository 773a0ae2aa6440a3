// Stand-ins for a GPU plugin, for the loader's refusals (cli_test's GpuPluginTest): built
// twice, once exporting the plugin's two symbols with another build's id, once exporting
// nothing the loader looks for. Neither ever creates a backend.
extern "C" {
#if defined(TS_FAKE_PLUGIN_SYMBOLS)
__attribute__((visibility("default"))) const char* tierscope_gpu_plugin_build() {
  return "0.0.0 OtherCompiler-1.0 Release march=none cuda=0 kernels=0 abi=0";
}
__attribute__((visibility("default"))) void tierscope_gpu_plugin_create(int, void*) {}
#else
__attribute__((visibility("default"))) int not_a_tierscope_plugin() { return 1; }
#endif
}
