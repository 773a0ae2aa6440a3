// nccl_sum: collectives by kind and size, their algorithm and bus bandwidth.
#include "analysis/collective_bandwidth.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <tuple>

#include "analysis/gpu_time.h"
#include "trace/args.h"

namespace tierscope {
namespace {

// Lower case without separators ("All_Reduce" -> "allreduce").
std::string LowerJoined(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '_' && c != ' ') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// NCCL's dtype names as PyTorch records them ("Float", "BFloat16", "Half", ...).
double DtypeBytes(std::string_view dtype) {
  const std::string d = LowerJoined(dtype);
  if (d == "double" || d == "long" || d == "int64" || d == "uint64") return 8;
  if (d == "float" || d == "int" || d == "int32" || d == "uint32") return 4;
  if (d == "half" || d == "bfloat16" || d == "float16") return 2;
  if (d == "char" || d == "byte" || d == "bool" || d == "int8" || d == "uint8" || d.starts_with("float8")) return 1;
  return 0;
}

}  // namespace

double BusBandwidthFactor(std::string_view collective, int64_t ranks) {
  if (ranks < 1) return 0;
  const std::string c = LowerJoined(collective);
  const double n = static_cast<double>(ranks);
  if (c == "allreduce" || c == "allreducecoalesced") return 2 * (n - 1) / n;
  if (c == "allgather" || c == "allgatherintotensorcoalesced" || c == "allgatherbase" || c == "reducescatter" ||
      c == "reducescattertensorcoalesced" || c == "reducescatterbase" || c == "alltoall" || c == "alltoallbase" ||
      c == "alltoallv") {
    return (n - 1) / n;
  }
  if (c == "broadcast" || c == "reduce" || c == "send" || c == "recv" || c == "sendrecv") return 1;
  return 0;
}

Table NcclSumTable(const TraceIndex& x, const std::optional<DeviceSpec>& spec) {
  Table t;
  t.name = "nccl_sum";
  t.title = "Collectives by kind and size: algorithm and bus bandwidth (nccl-tests' formulas)";
  t.columns = {"Count", "Total (ns)", "Avg (ns)", "Size (MB)", "Ranks", "Algbw (GB/s)", "Busbw (GB/s)",
               "Of link (%)", "Dtype", "Collective"};
  const Trace& tr = *x.trace;
  const std::optional<DeviceSpec> device = spec ? spec : FindDeviceSpec(tr.device_name, tr.device_units,
                                                                        tr.device_memory);
  struct Sum {
    int64_t count = 0;
    double ns = 0, bytes = 0;
  };
  // (collective, dtype, bytes a call, ranks) -> totals
  std::map<std::tuple<std::string, std::string, double, int64_t>, Sum> by;
  int64_t unsized = 0;
  DeviceEventTypes types(x);
  for (size_t k : x.kernels) {
    const Event& e = x.E(k);
    if (types.Of(k) != KernelType::kCommunication) continue;
    const std::string_view args = e.args >= 0 ? tr.strings.Get(e.args) : std::string_view();
    const std::string collective(ArgText(args, "Collective name"));
    const std::string dtype(ArgText(args, "dtype"));
    const std::optional<double> in = ArgNumber(args, "In msg nelems"), out = ArgNumber(args, "Out msg nelems");
    const std::optional<double> ranks = ArgNumber(args, "Group size");
    const double es = DtypeBytes(dtype);
    if (collective.empty() || !in || !ranks || *ranks < 1 || es == 0) {
      ++unsized;
      continue;
    }
    // The message nccl-tests sizes a collective by: all-gather's whole output, else the input.
    const std::string c = LowerJoined(collective);
    const double elems = c.starts_with("allgather") && out ? *out : *in;
    Sum& s = by[{collective, dtype, elems * es, static_cast<int64_t>(*ranks)}];
    s.count += 1;
    s.ns += static_cast<double>(e.dur_ns);
    s.bytes += elems * es;
  }
  std::vector<std::pair<std::tuple<std::string, std::string, double, int64_t>, Sum>> rows(by.begin(), by.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  int64_t above = 0;
  for (const auto& [key, s] : rows) {
    const auto& [collective, dtype, bytes, ranks] = key;
    const double algbw = s.ns > 0 ? s.bytes / s.ns : 0;  // bytes/ns = GB/s
    const double factor = BusBandwidthFactor(collective, ranks);
    const double busbw = algbw * factor;
    Cell of_link = std::string("-");
    if (device && device->link_gbps > 0 && factor > 0) {
      const double share = 100.0 * busbw / device->link_gbps;
      char text[48];
      std::snprintf(text, sizeof(text), "%.1f ABOVE", share);
      of_link = share > 100 ? Cell(std::string(text)) : Cell(share);
      above += share > 100 ? 1 : 0;
    }
    t.AddRow({s.count, s.ns, s.ns / static_cast<double>(s.count), bytes / 1e6, ranks, algbw,
              factor > 0 ? Cell(busbw) : Cell(std::string("-")), of_link, dtype, collective});
  }
  t.notes.push_back(device ? "link: " + device->name + ", " + std::to_string(static_cast<int>(device->link_gbps)) +
                                 " GB/s a direction (" + device->source + ")"
                           : "no link peak: the device is not in the table (--device-spec gives one)");
  t.notes.push_back("a collective kernel's time includes waiting for the slowest rank: its bandwidths are lower "
                    "bounds on the link's (stragglers shows who waits)");
  t.NoteCount(above,
              "row(s) ABOVE the link peak: a reduction in the switch (NVLS, SHARP) "
              "moves less than the formula assumes, or the peak is wrong: not a link measurement");
  t.NoteCount(unsized,
              "collective kernel(s) without a collective name, message size, "
              "group size or known dtype are not in the table");
  return t;
}

}  // namespace tierscope
