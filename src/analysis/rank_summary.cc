// RankAnalysis <-> MessagePack, field by field (nlohmann::json as the document).
#include "analysis/rank_summary.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tierscope {
namespace {

using nlohmann::json;

constexpr int kVersion = 3;  // 2: the trace's place in time (a rank's windows); no step is kNoStep, not 0;
                              // 3: sends and recvs with their peers

json Totals(const KernelTotals& k) {
  return json::array({static_cast<int>(k.type), k.count, k.total_ns, k.min_ns, k.max_ns, k.running_mean(), k.m2()});
}
KernelTotals Totals(const json& j) {
  KernelTotals k;
  const int type = j.at(0).get<int>();
  if (type < 0 || type >= kKernelTypes) throw std::out_of_range("kernel type " + std::to_string(type));
  k.type = static_cast<KernelType>(type);
  k.count = j.at(1).get<int64_t>();
  k.total_ns = j.at(2).get<int64_t>();
  k.min_ns = j.at(3).get<int64_t>();
  k.max_ns = j.at(4).get<int64_t>();
  k.RestoreMoments(j.at(5).get<double>(), j.at(6).get<double>());
  return k;
}

json Sum(const Summary& s) { return json::array({s.count, s.total, s.mean, s.min, s.max, s.median, s.stddev}); }
Summary Sum(const json& j) {
  Summary s;
  s.count = j.at(0).get<int64_t>();
  s.total = j.at(1).get<double>();
  s.mean = j.at(2).get<double>();
  s.min = j.at(3).get<double>();
  s.max = j.at(4).get<double>();
  s.median = j.at(5).get<double>();
  s.stddev = j.at(6).get<double>();
  return s;
}

json Gpu(const GpuTime& g) {
  json j;
  j["has"] = g.has_device_events;
  j["temporal"] = {g.temporal.span_ns, g.temporal.busy_ns, g.temporal.compute_ns};
  j["by_mask"] = g.by_mask;
  j["comm"] = {g.communication_ns, g.overlap_ns};
  json kernels = json::array();
  for (const auto& [name, k] : g.kernels) kernels.push_back({name, Totals(k)});
  j["kernels"] = std::move(kernels);
  json idle = json::array();
  for (const StreamIdle& s : g.idle) {
    idle.push_back({s.device, s.stream, s.events, s.host_wait_ns, s.kernel_wait_ns, s.other_ns});
  }
  j["idle"] = std::move(idle);
  const LaunchStats& l = g.launch;
  j["launch"] = {l.launches, Sum(l.cpu_ns), Sum(l.gpu_ns), Sum(l.delay_ns), l.shorter_than_launch, l.long_delay};
  json queues = json::array();
  for (const StreamQueue& q : g.queues) queues.push_back({q.device, q.stream, q.launches, q.max_depth, q.mean_depth});
  j["queues"] = std::move(queues);
  return j;
}

GpuTime Gpu(const json& j) {
  GpuTime g;
  g.has_device_events = j.at("has").get<bool>();
  g.temporal.span_ns = j.at("temporal").at(0).get<int64_t>();
  g.temporal.busy_ns = j.at("temporal").at(1).get<int64_t>();
  g.temporal.compute_ns = j.at("temporal").at(2).get<int64_t>();
  const json& mask = j.at("by_mask");
  for (size_t i = 0; i < g.by_mask.size() && i < mask.size(); ++i) g.by_mask[i] = mask.at(i).get<int64_t>();
  g.communication_ns = j.at("comm").at(0).get<int64_t>();
  g.overlap_ns = j.at("comm").at(1).get<int64_t>();
  for (const json& k : j.at("kernels")) g.kernels[k.at(0).get<std::string>()] = Totals(k.at(1));
  for (const json& s : j.at("idle")) {
    g.idle.push_back({s.at(0).get<int32_t>(), s.at(1).get<int32_t>(), s.at(2).get<int64_t>(), s.at(3).get<int64_t>(),
                      s.at(4).get<int64_t>(), s.at(5).get<int64_t>()});
  }
  const json& l = j.at("launch");
  g.launch.launches = l.at(0).get<int64_t>();
  g.launch.cpu_ns = Sum(l.at(1));
  g.launch.gpu_ns = Sum(l.at(2));
  g.launch.delay_ns = Sum(l.at(3));
  g.launch.shorter_than_launch = l.at(4).get<int64_t>();
  g.launch.long_delay = l.at(5).get<int64_t>();
  for (const json& q : j.at("queues")) {
    g.queues.push_back({q.at(0).get<int32_t>(), q.at(1).get<int32_t>(), q.at(2).get<int64_t>(), q.at(3).get<int64_t>(),
                        q.at(4).get<double>()});
  }
  return g;
}

// A call as an array: the collective's fields, then a send / recv's peer and side.
json Calls(const RankCollectives& c) {
  json calls = json::array(), p2p = json::array();
  for (const CollectiveCall& k : c.calls) {
    calls.push_back({k.iteration, k.name, k.group, k.elems, k.issue_ns, k.arrive_ns, k.end_ns});
  }
  for (const CollectiveCall& k : c.p2p) {
    p2p.push_back({k.iteration, k.name, k.group, k.elems, k.issue_ns, k.arrive_ns, k.end_ns, k.peer, k.send});
  }
  return {{"device", c.device}, {"p2p", c.point_to_point}, {"calls", std::move(calls)}, {"p2p_calls", std::move(p2p)}};
}

CollectiveCall Call(const json& k) {
  CollectiveCall c{k.at(0).get<int64_t>(), k.at(1).get<std::string>(), k.at(2).get<std::string>(),
                   k.at(3).get<int64_t>(), k.at(4).get<int64_t>(), k.at(5).get<int64_t>(), k.at(6).get<int64_t>()};
  if (k.size() > 7) {
    c.peer = k.at(7).get<int32_t>();
    c.send = k.at(8).get<bool>();
  }
  return c;
}

RankCollectives Calls(const json& j) {
  RankCollectives c;
  c.device = j.at("device").get<bool>();
  c.point_to_point = j.at("p2p").get<int64_t>();
  for (const json& k : j.at("calls")) c.calls.push_back(Call(k));
  for (const json& k : j.at("p2p_calls")) c.p2p.push_back(Call(k));
  return c;
}

json Findings(const std::vector<Finding>& v) {
  json out = json::array();
  for (const Finding& f : v) {
    out.push_back({f.rule, f.title, f.evidence, f.threshold, f.examples, f.next_step, f.explained_ns});
  }
  return out;
}

std::vector<Finding> Findings(const json& j) {
  std::vector<Finding> v;
  for (const json& f : j) {
    v.push_back({f.at(0).get<std::string>(), f.at(1).get<std::string>(), f.at(2).get<std::vector<std::string>>(),
                 f.at(3).get<std::string>(), f.at(4).get<std::vector<std::string>>(), f.at(5).get<std::string>(),
                 f.at(6).get<double>()});
  }
  return v;
}

}  // namespace

std::string SaveRankSummary(const RankAnalysis& r) {
  json j;
  j["tierscope_rank_summary"] = kVersion;
  j["rank"] = r.rank;
  j["trace_rank"] = r.trace_rank;
  j["text"] = {r.rank_from, r.source, r.format, r.device, r.backend, r.unit_name};
  j["counts"] = {r.world_size, r.events, r.bytes, r.malformed, r.units};
  j["time"] = {r.begin_ns, r.end_ns, r.base_time_ns};
  j["gpu"] = Gpu(r.gpu);
  j["collectives"] = Calls(r.collectives);
  json ranges = json::array();
  for (const auto& [key, k] : r.ranges) ranges.push_back({key.first, key.second, Totals(k)});
  j["ranges"] = std::move(ranges);
  json range_kernels = json::array();
  r.range_kernels.ForEach([&](std::string_view range, std::string_view side, std::string_view kernel,
                              const RangeKernels& rk) {
    range_kernels.push_back({range, side, kernel, rk.range_instances, Totals(rk.kernels)});
  });
  j["range_kernels"] = std::move(range_kernels);
  j["findings"] = Findings(r.findings);
  j["quality"] = {r.quality, r.quality_failed};
  const std::vector<uint8_t> bytes = json::to_msgpack(j);
  return std::string(bytes.begin(), bytes.end());
}

StatusOr<RankAnalysis> LoadRankSummary(std::string_view bytes) {
  try {
    const json j = json::from_msgpack(bytes.begin(), bytes.end());
    if (!j.is_object() || j.value("tierscope_rank_summary", 0) != kVersion) {
      return InvalidArgument("not a tierscope rank summary (version " + std::to_string(kVersion) + ")");
    }
    RankAnalysis r;
    r.rank = j.at("rank").get<int>();
    r.trace_rank = j.at("trace_rank").get<int32_t>();
    const json& text = j.at("text");
    r.rank_from = text.at(0).get<std::string>();
    r.source = text.at(1).get<std::string>();
    r.format = text.at(2).get<std::string>();
    r.device = text.at(3).get<std::string>();
    r.backend = text.at(4).get<std::string>();
    r.unit_name = text.at(5).get<std::string>();
    const json& counts = j.at("counts");
    r.world_size = counts.at(0).get<int32_t>();
    r.events = counts.at(1).get<int64_t>();
    r.bytes = counts.at(2).get<int64_t>();
    r.malformed = counts.at(3).get<int64_t>();
    r.units = counts.at(4).get<int64_t>();
    const json& time = j.at("time");
    r.begin_ns = time.at(0).get<int64_t>();
    r.end_ns = time.at(1).get<int64_t>();
    r.base_time_ns = time.at(2).get<int64_t>();
    r.gpu = Gpu(j.at("gpu"));
    r.collectives = Calls(j.at("collectives"));
    for (const json& x : j.at("ranges")) r.ranges[{x.at(0).get<std::string>(), x.at(1).get<std::string>()}] = Totals(x.at(2));
    for (const json& x : j.at("range_kernels")) {
      RangeKernels& rk = r.range_kernels.At(x.at(0).get<std::string>(), x.at(1).get<std::string>(),
                                            x.at(2).get<std::string>());
      rk.range_instances = x.at(3).get<int64_t>();
      rk.kernels = Totals(x.at(4));
    }
    r.range_kernels.Compact();  // kept for the whole job
    r.findings = Findings(j.at("findings"));
    r.quality = j.at("quality").at(0).get<std::string>();
    r.quality_failed = j.at("quality").at(1).get<std::string>();
    return r;
  } catch (const std::exception& e) {  // json's own errors, and values out of range
    return InvalidArgument(std::string("not a tierscope rank summary: ") + e.what());
  }
}

}  // namespace tierscope
