// What the host says about its CPU and memory: the model name (/proc/cpuinfo), the data
// cache sizes (sysfs: CPU 0's levels, and the whole machine's last-level cache), and the
// memory available to a new allocation (/proc/meminfo and the cgroup limit). One reader
// of each, used by the backend, calibration and the workload's memory check.
#ifndef TIERSCOPE_CORE_CPU_INFO_H_
#define TIERSCOPE_CORE_CPU_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tierscope {

// "AMD EPYC 7B13"; "unknown CPU" when /proc/cpuinfo does not say.
std::string CpuModelName();

// True when /proc/cpuinfo's flags list `flag` ("avx2", "f16c", "avx512_bf16", as the
// kernel spells them): what every compiler's __builtin_cpu_supports does not all know.
bool CpuHasFlag(const std::string& flag);

// The widest vector ISA this CPU runs that tierscope has kernels for, as the CPU itself
// reports it (cpuid): "avx512f", "avx2+fma" or "scalar". The micro-kernel dispatch and the
// calibration's cache key both use it, so they cannot disagree.
std::string CpuVectorIsa();
// The INT8 dot instruction set the INT8 GEMM uses on this CPU, fastest first:
// "amx-int8" (with AVX512-VNNI beside it), "avx512vnni", "avxvnni", "avx2" or "scalar".
// The GEMM's dispatch and the calibration of its peak both use it, so they cannot disagree.
std::string CpuInt8DotIsa();
// Every INT8 dot instruction set this CPU runs, fastest first (CpuInt8DotIsa's first):
// the INT8 GEMM has a variant for each, and the tests force each in turn
// (TIERSCOPE_INT8_KERNELS=<isa>).
std::vector<std::string> CpuInt8DotIsas();
// Every FP32 micro-kernel variant this CPU runs, fastest first: "avx512f", "avx2+fma"
// (with F16C, for its FP16-weight forms), "scalar"; the tests force each in turn
// (TIERSCOPE_FP32_KERNELS=<isa>), and the backend's variants are these.
std::vector<std::string> CpuFp32KernelIsas();
// Every BF16 kernel variant this CPU runs, fastest first: "avx512bf16" (BF16 arithmetic:
// vdpbf16ps), then "fp32" (BF16 weights widened on the FP32 micro-kernels, FP32
// activations), always; the tests force each in turn (TIERSCOPE_BF16_KERNELS=<isa>).
std::vector<std::string> CpuBf16KernelIsas();
// Whether the CPU runs `isa`: one of CpuVectorIsa's names, an INT8 dot ISA ("amx-int8",
// "avx512vnni", "avxvnni"), or "avx512bf16"; "scalar" always. "amx-int8" asks Linux for the
// tile state the first time (a process without it cannot use AMX).
bool CpuRunsIsa(const std::string& isa);

struct CacheLevel {
  int level = 0;         // 1, 2, 3
  int64_t bytes = 0;     // size of one instance
  int shared_by = 1;     // logical CPUs sharing one instance
  std::string shared_cpus;  // which: sysfs's shared_cpu_list ("0-7,64-71")
};

// The data and unified caches of CPU 0, innermost first (empty when sysfs lacks them).
std::vector<CacheLevel> CpuDataCaches();

// The machine's last-level cache: the outermost level any online CPU reports, over all
// of its instances (one per distinct shared_cpu_list: a socket, or on AMD each CCX), so
// two sockets of 240 MiB hold 480 MiB. level 0 when sysfs says nothing. `sysfs_cpu` is
// the directory of cpu<N>/cache/index<M>/ (and `online`); tests give their own.
struct LastLevelCache {
  int level = 0;
  int instances = 0;
  int64_t instance_bytes = 0;  // the largest instance (what one core can use)
  int64_t total_bytes = 0;     // all instances together
};
LastLevelCache CpuLastLevelCache(const std::string& sysfs_cpu = "/sys/devices/system/cpu");

// "48 KiB", "1 MiB", "32 MiB", "1.5 GiB".
std::string FormatBytes(double bytes);

// Bytes a process can still allocate without swapping: MemAvailable, capped by the
// cgroup's memory.max less what it uses (memory.current without its inactive page
// cache). -1 when neither can be read.
int64_t AvailableMemoryBytes();

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_CPU_INFO_H_
