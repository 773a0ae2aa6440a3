// /proc/cpuinfo, sysfs caches (CPU 0's, and the last level over every online CPU) and
// /proc/meminfo (with the cgroup v2 limit).
#include "core/cpu_info.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace tierscope {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "48K", "1024K", "32M" (sysfs cache sizes) -> bytes; 0 if unreadable.
int64_t ParseSysfsSize(const std::string& text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  if (v < 0) return 0;
  const char unit = used < text.size() ? text[used] : ' ';
  if (unit == 'K') return v << 10;
  if (unit == 'M') return v << 20;
  if (unit == 'G') return v << 30;
  return v;
}

// The CPUs of a sysfs list such as "0-3,8,10-11", in the list's order.
std::vector<int> CpuListIds(const std::string& list) {
  std::vector<int> ids;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int a = 0, b = 0;
    if (std::sscanf(part.c_str(), "%d-%d", &a, &b) == 2 && b >= a && a >= 0) {
      for (int c = a; c <= b; ++c) ids.push_back(c);
    } else if (std::sscanf(part.c_str(), "%d", &a) == 1 && a >= 0) {
      ids.push_back(a);
    }
  }
  return ids;
}

// The data and unified caches sysfs lists under `cpu_dir` (.../cpu<N>), in index order.
std::vector<CacheLevel> ReadCaches(const std::string& cpu_dir) {
  std::vector<CacheLevel> out;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = cpu_dir + "/cache/index" + std::to_string(i);
    const std::string type = ReadFirstLine(dir + "/type");
    if (type.empty()) break;
    if (type == "Instruction") continue;
    CacheLevel c;
    c.level = std::atoi(ReadFirstLine(dir + "/level").c_str());
    c.bytes = ParseSysfsSize(ReadFirstLine(dir + "/size"));
    c.shared_cpus = ReadFirstLine(dir + "/shared_cpu_list");
    c.shared_by = std::max<int>(static_cast<int>(CpuListIds(c.shared_cpus).size()), 1);
    if (c.level > 0 && c.bytes > 0) out.push_back(c);
  }
  return out;
}

// The value of the first "key : value" line of /proc/cpuinfo whose key is `key`.
std::string CpuInfoField(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t name_end = line.find_last_not_of(" \t", colon - 1);
    if (name_end == std::string::npos || name_end + 1 != key.size()) continue;
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    const size_t end = line.find_last_not_of(" \t\r");
    if (begin == std::string::npos || end < begin) return "";
    return line.substr(begin, end - begin + 1);
  }
  return "";
}

}  // namespace

std::string CpuModelName() {
  const std::string name = CpuInfoField("model name");
  return name.empty() ? "unknown CPU" : name;
}

bool CpuRunsIsa(const std::string& isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (isa == "avx512f") return __builtin_cpu_supports("avx512f");
  if (isa == "avx2+fma") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  // The INT8 dot instructions, as /proc/cpuinfo names them (the kernel reports what the
  // hypervisor lets the guest use).
  if (isa == "avx512vnni") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           CpuHasFlag("avx512_vnni");
  }
  if (isa == "avxvnni") return __builtin_cpu_supports("avx2") && CpuHasFlag("avx_vnni");
  // BF16 arithmetic: vdpbf16ps (the kernels' tails and conversions use AVX512BW/VL too).
  if (isa == "avx512bf16") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && CpuHasFlag("avx512_bf16");
  }
  // AMX: the CPU has the tiles, and Linux lets this process use them (the tile data is
  // off until asked for, once per process: ARCH_REQ_XCOMP_PERM for XTILEDATA).
  if (isa == "amx-int8") {
    static const bool usable = CpuHasFlag("amx_tile") && CpuHasFlag("amx_int8") &&
                               syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                                       18 /* XFEATURE_XTILEDATA */) == 0;
    return usable;
  }
#endif
  return isa == "scalar";
}

std::string CpuVectorIsa() {
  for (const char* isa : {"avx512f", "avx2+fma"}) {
    if (CpuRunsIsa(isa)) return isa;
  }
  return "scalar";
}

std::string CpuInt8DotIsa() {
  if (CpuRunsIsa("amx-int8") && CpuRunsIsa("avx512vnni")) return "amx-int8";
  for (const char* isa : {"avx512vnni", "avxvnni"}) {
    if (CpuRunsIsa(isa)) return isa;
  }
  return CpuRunsIsa("avx2+fma") ? "avx2" : "scalar";
}

std::vector<std::string> CpuInt8DotIsas() {
  std::vector<std::string> v;
  if (CpuInt8DotIsa() == "amx-int8") v.push_back("amx-int8");
  for (const char* isa : {"avx512vnni", "avxvnni"}) {
    if (CpuRunsIsa(isa)) v.push_back(isa);
  }
  if (CpuRunsIsa("avx2+fma")) v.push_back("avx2");
  v.push_back("scalar");
  return v;
}

std::vector<std::string> CpuFp32KernelIsas() {
  std::vector<std::string> v;
  if (CpuRunsIsa("avx512f")) v.push_back("avx512f");
  if (CpuRunsIsa("avx2+fma") && CpuHasFlag("f16c")) v.push_back("avx2+fma");
  v.push_back("scalar");
  return v;
}

std::vector<std::string> CpuBf16KernelIsas() {
  std::vector<std::string> v;
  if (CpuRunsIsa("avx512bf16")) v.push_back("avx512bf16");
  v.push_back("fp32");
  return v;
}

bool CpuHasFlag(const std::string& flag) {
  static const std::vector<std::string> flags = [] {
    std::vector<std::string> v;
    std::istringstream in(CpuInfoField("flags"));
    for (std::string f; in >> f;) v.push_back(f);
    return v;
  }();
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}


std::vector<CacheLevel> CpuDataCaches() {
  std::vector<CacheLevel> out = ReadCaches("/sys/devices/system/cpu/cpu0");
  std::stable_sort(out.begin(), out.end(),
                   [](const CacheLevel& a, const CacheLevel& b) { return a.level < b.level; });
  return out;
}

LastLevelCache CpuLastLevelCache(const std::string& sysfs_cpu) {
  std::vector<int> cpus = CpuListIds(ReadFirstLine(sysfs_cpu + "/online"));
  if (cpus.empty()) {  // no online list: every cpu<N> directory
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(sysfs_cpu, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.size() > 3 && name.rfind("cpu", 0) == 0 &&
          name.find_first_not_of("0123456789", 3) == std::string::npos) {
        cpus.push_back(std::atoi(name.c_str() + 3));
      }
    }
  }
  // Each instance of the outermost level once, keyed by the CPUs that share it.
  LastLevelCache llc;
  std::map<std::string, int64_t> instances;
  for (int cpu : cpus) {
    for (const CacheLevel& c : ReadCaches(sysfs_cpu + "/cpu" + std::to_string(cpu))) {
      if (c.level > llc.level) {
        llc.level = c.level;
        instances.clear();
      }
      if (c.level == llc.level) {
        // A CPU that lists no sharers shares with no one else.
        const std::string key = c.shared_cpus.empty() ? std::to_string(cpu) : c.shared_cpus;
        instances[key] = std::max(instances[key], c.bytes);
      }
    }
  }
  for (const auto& [cpus_sharing, bytes] : instances) {
    ++llc.instances;
    llc.total_bytes += bytes;
    llc.instance_bytes = std::max(llc.instance_bytes, bytes);
  }
  return llc;
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  if (bytes == static_cast<double>(static_cast<int64_t>(bytes)) || bytes >= 100) {
    std::snprintf(buf, sizeof(buf), "%.0f %s", bytes, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", bytes, kUnits[u]);
  }
  return buf;
}

int64_t AvailableMemoryBytes() {
  int64_t avail = -1;
  std::ifstream in("/proc/meminfo");
  std::string key;
  long long kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") {
      avail = static_cast<int64_t>(kb) << 10;
      break;
    }
  }
  // cgroup v2: a container's limit can be far below the host's free memory. Its usage
  // counts page cache the kernel reclaims on demand (the mapped model file, build output):
  // what is in use is memory.current less inactive_file, as the kubelet's working set.
  const std::string max = ReadFirstLine("/sys/fs/cgroup/memory.max");
  const std::string cur = ReadFirstLine("/sys/fs/cgroup/memory.current");
  if (!max.empty() && max != "max" && !cur.empty()) {
    int64_t reclaimable = 0;
    std::ifstream stat("/sys/fs/cgroup/memory.stat");
    std::string key;
    long long value = 0;
    while (stat >> key >> value) {
      if (key == "inactive_file") reclaimable = value;
    }
    const int64_t used = std::max<int64_t>(0, ParseSysfsSize(cur) - reclaimable);
    const int64_t room = std::max<int64_t>(0, ParseSysfsSize(max) - used);
    avail = avail < 0 ? room : std::min(avail, room);
  }
  return avail;
}

}  // namespace tierscope
