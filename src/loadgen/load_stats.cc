// Length specs, percentiles, Prometheus histogram parsing and the load report's text.
#include "loadgen/load_stats.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <sstream>

#include "core/stats.h"
#include "core/text.h"

namespace tierscope {
namespace {

using nlohmann::json;

// A whole decimal integer (no sign, no spaces), or nullopt.
std::optional<int64_t> ParseInt(const std::string& s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto r = std::from_chars(s.data(), end, v);
  if (s.empty() || r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

// A whole floating-point token as Prometheus writes it ("12", "0.5", "1e+06", "+Inf",
// "NaN"), or nullopt.
std::optional<double> ParseDouble(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

Status BadLengths(const std::string& spec, const std::string& why) {
  return InvalidArgument("--lengths '" + spec + "': " + why +
                         " (expected fixed:N, uniform:A-B or choice:A,B,C)");
}

// One sample line of the exposition: name, labels and value.
struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

// Parses `line` (not a comment, not blank) into `out`; the error says what is wrong.
std::optional<std::string> ParseSampleLine(const std::string& line, Sample* out) {
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && !std::isspace(static_cast<unsigned char>(line[i])))
    ++i;
  out->name = line.substr(0, i);
  if (out->name.empty()) return "no metric name";
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i >= line.size()) return "unterminated label set";
      if (line[i] == '}') {
        ++i;
        break;
      }
      const size_t eq = line.find('=', i);
      if (eq == std::string::npos) return "a label without '='";
      std::string key = line.substr(i, eq - i);
      while (!key.empty() && key.back() == ' ') key.pop_back();
      if (key.empty()) return "a label without a name";
      i = eq + 1;
      if (i >= line.size() || line[i] != '"') return "label '" + key + "' has no quoted value";
      ++i;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '\\' && i < line.size()) {
          const char e = line[i++];
          value += e == 'n' ? '\n' : e;
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value += c;
        }
      }
      if (!closed) return "label '" + key + "' has an unterminated value";
      out->labels.emplace_back(std::move(key), std::move(value));
    }
  }
  std::istringstream rest(line.substr(i));
  std::string value, timestamp, extra;
  if (!(rest >> value)) return "no value";
  rest >> timestamp >> extra;
  if (!extra.empty()) return "unexpected text after the value";
  const auto v = ParseDouble(value);
  if (!v) return "value '" + value + "' is not a number";
  if (!timestamp.empty() && !ParseInt(timestamp) &&
      !(timestamp[0] == '-' && ParseInt(timestamp.substr(1)))) {
    return "timestamp '" + timestamp + "' is not an integer";
  }
  out->value = *v;
  return std::nullopt;
}

// A count for the JSON report: an integer when it is one.
json CountJson(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<int64_t>(v);
  return v;
}

// A number, or "-" for null/missing.
std::string Num(const json& j, const char* key, int digits) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return "-";
  return Fixed(j[key].get<double>(), digits);
}

int64_t Int(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<int64_t>();
}

}  // namespace

int64_t LengthSpec::Draw(std::mt19937_64& rng) const {
  switch (kind) {
    case Kind::kFixed: return values[0];
    case Kind::kUniform: return std::uniform_int_distribution<int64_t>(values[0], values[1])(rng);
    case Kind::kChoice:
      return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
  }
  return values[0];
}

int64_t LengthSpec::Max() const { return *std::max_element(values.begin(), values.end()); }

double LengthSpec::Mean() const {
  if (kind == Kind::kUniform)
    return (static_cast<double>(values[0]) + static_cast<double>(values[1])) / 2;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

StatusOr<LengthSpec> ParseLengthSpec(const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return BadLengths(spec, "no kind");
  const std::string kind = spec.substr(0, colon), arg = spec.substr(colon + 1);
  LengthSpec out;
  if (kind == "fixed") {
    out.kind = LengthSpec::Kind::kFixed;
    const auto n = ParseInt(arg);
    if (!n) return BadLengths(spec, "'" + arg + "' is not a whole number");
    out.values = {*n};
  } else if (kind == "uniform") {
    out.kind = LengthSpec::Kind::kUniform;
    const size_t dash = arg.find('-');
    if (dash == std::string::npos) return BadLengths(spec, "uniform needs A-B");
    const auto a = ParseInt(arg.substr(0, dash)), b = ParseInt(arg.substr(dash + 1));
    if (!a || !b) return BadLengths(spec, "uniform needs two whole numbers A-B");
    if (*a > *b) return BadLengths(spec, "uniform needs A <= B");
    out.values = {*a, *b};
  } else if (kind == "choice") {
    out.kind = LengthSpec::Kind::kChoice;
    if (arg.find_first_not_of(" ,") == std::string::npos)
      return BadLengths(spec, "choice needs lengths");
    for (const std::string& item : SplitList(arg)) {
      const auto n = ParseInt(item);
      if (!n) return BadLengths(spec, "'" + item + "' is not a whole number");
      out.values.push_back(*n);
    }
  } else {
    return BadLengths(spec, "unknown kind '" + kind + "'");
  }
  for (int64_t v : out.values) {
    if (v < LengthSpec::kMinLength || v > LengthSpec::kMaxLength) {
      return BadLengths(spec, "length " + std::to_string(v) + " is outside [" +
                                  std::to_string(LengthSpec::kMinLength) + ", " +
                                  std::to_string(LengthSpec::kMaxLength) +
                                  "] (lengths count [CLS] and [SEP])");
    }
  }
  return out;
}

json SummarizeLatencies(std::vector<double> values) {
  json out = {{"count", values.size()}};
  const char* keys[] = {"p50", "p90", "p95", "p99", "max", "mean"};
  if (values.empty()) {
    for (const char* k : keys) out[k] = nullptr;
    return out;
  }
  std::sort(values.begin(), values.end());
  out["p50"] = Percentile(values, 50);
  out["p90"] = Percentile(values, 90);
  out["p95"] = Percentile(values, 95);
  out["p99"] = Percentile(values, 99);
  out["max"] = values.back();
  out["mean"] =
      std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  return out;
}

StatusOr<PromHistogram> ParsePromHistogram(const std::string& text, const std::string& name) {
  const std::string bucket_name = name + "_bucket", sum_name = name + "_sum",
                    count_name = name + "_count";
  PromHistogram h;
  bool any = false, have_sum = false, have_count = false;
  std::istringstream in(text);
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    line.erase(0, start);
    // Only lines of this histogram matter; others are not even parsed.
    const size_t name_end = line.find_first_of("{ \t");
    const std::string metric = line.substr(0, name_end);
    if (metric != bucket_name && metric != sum_name && metric != count_name) continue;
    const std::string where = "metrics line " + std::to_string(line_no) + " '" + line + "'";
    Sample s;
    if (auto err = ParseSampleLine(line, &s)) return InvalidArgument(where + ": " + *err);
    any = true;
    if (metric == bucket_name) {
      auto le = std::find_if(s.labels.begin(), s.labels.end(),
                             [](const auto& kv) { return kv.first == "le"; });
      if (le == s.labels.end()) return InvalidArgument(where + ": a bucket without an le label");
      const auto bound = ParseDouble(le->second);
      if (!bound || std::isnan(*bound)) {
        return InvalidArgument(where + ": le=\"" + le->second + "\" is not a number");
      }
      for (const auto& b : h.buckets) {
        if (b.bound == *bound) {
          return InvalidArgument(where + ": repeated bucket le=\"" + le->second +
                                 "\" (several series of " + name + " are not supported)");
        }
      }
      h.buckets.push_back({le->second, *bound, s.value});
    } else if (metric == sum_name) {
      if (have_sum) return InvalidArgument(where + ": repeated " + sum_name);
      h.sum = s.value;
      have_sum = true;
    } else {
      if (have_count) return InvalidArgument(where + ": repeated " + count_name);
      h.count = s.value;
      have_count = true;
    }
  }
  if (!any) return NotFound("the metrics have no histogram " + name);
  std::sort(h.buckets.begin(), h.buckets.end(),
            [](const auto& a, const auto& b) { return a.bound < b.bound; });
  if (h.buckets.empty() || !std::isinf(h.buckets.back().bound)) {
    return InvalidArgument("histogram " + name + " has no le=\"+Inf\" bucket");
  }
  if (!have_count) return InvalidArgument("histogram " + name + " has no " + count_name);
  for (size_t i = 1; i < h.buckets.size(); ++i) {
    if (h.buckets[i].cumulative < h.buckets[i - 1].cumulative) {
      return InvalidArgument("histogram " + name + ": bucket le=\"" + h.buckets[i].le +
                             "\" counts fewer than le=\"" + h.buckets[i - 1].le +
                             "\" (buckets must be cumulative)");
    }
  }
  if (h.count != h.buckets.back().cumulative) {
    return InvalidArgument("histogram " + name + ": " + count_name + " (" + Fixed(h.count, 0) +
                           ") differs from the +Inf bucket (" +
                           Fixed(h.buckets.back().cumulative, 0) + ")");
  }
  return h;
}

StatusOr<json> HistogramDelta(const PromHistogram& before, const PromHistogram& after) {
  if (before.buckets.size() != after.buckets.size()) {
    return FailedPrecondition("the histogram's buckets changed between the snapshots");
  }
  json hist = json::object();
  double prev_delta = 0;
  for (size_t i = 0; i < after.buckets.size(); ++i) {
    if (before.buckets[i].bound != after.buckets[i].bound) {
      return FailedPrecondition("the histogram's buckets changed between the snapshots");
    }
    const double delta = after.buckets[i].cumulative - before.buckets[i].cumulative;
    if (delta < 0 || delta < prev_delta) {
      return FailedPrecondition("the histogram's counts went down (did the server restart?)");
    }
    hist[after.buckets[i].le] = CountJson(delta - prev_delta);
    prev_delta = delta;
  }
  const double count = after.count - before.count, sum = after.sum - before.sum;
  if (count < 0 || sum < 0) {
    return FailedPrecondition("the histogram's counts went down (did the server restart?)");
  }
  json out = {{"count", CountJson(count)}, {"inputs", CountJson(sum)}, {"histogram", hist}};
  out["mean_size"] = count > 0 ? json(sum / count) : json(nullptr);
  return out;
}

std::string FormatLoadReport(const json& r) {
  std::ostringstream out;
  const json opts = r.value("options", json::object());
  const std::string mode = opts.value("mode", "");
  out << "tierscope load: " << opts.value("endpoint", std::string("?")) << " at "
      << opts.value("url", std::string("?"));
  if (mode == "open") {
    out << ", open loop at " << Num(opts, "rate", 1) << " req/s";
  } else {
    out << ", closed loop with " << Int(opts, "concurrency") << " clients";
  }
  out << ", lengths " << opts.value("lengths", std::string("?")) << ", "
      << Int(opts, "inputs_per_request") << " input(s)/request\n";
  out << "  window      " << Num(r, "duration_s", 2) << " s";
  if (Num(opts, "warmup_s", 2) != "0.00")
    out << " after " << Num(opts, "warmup_s", 2) << " s warmup";
  out << "\n";
  out << "  requests    issued " << Int(r, "issued") << ", sent " << Int(r, "sent")
      << ", completed " << Int(r, "completed") << ", ok " << Int(r, "ok");
  const json errors = r.value("errors", json::object());
  if (!errors.empty()) {
    out << ", errors";
    bool first = true;
    for (const auto& [kind, n] : errors.items()) {
      out << (first ? " " : ", ") << kind << ": " << n.get<int64_t>();
      first = false;
    }
  }
  out << "\n";
  out << "  throughput  " << Num(r, "throughput_rps", 1) << " req/s, " << Num(r, "inputs_per_s", 1)
      << " inputs/s, " << Num(r, "tokens_per_s", 0) << " tokens/s (offered "
      << Num(r, "offered_rps", 1) << " req/s)\n";
  const json lat = r.value("latency_ms", json::object());
  out << "  latency ms  p50 " << Num(lat, "p50", 2) << "  p90 " << Num(lat, "p90", 2) << "  p95 "
      << Num(lat, "p95", 2) << "  p99 " << Num(lat, "p99", 2) << "  max " << Num(lat, "max", 2)
      << "  mean " << Num(lat, "mean", 2) << "\n";
  const json batches = r.value("server_batches", json());
  if (batches.is_object()) {
    out << "  server      " << Int(batches, "count") << " batches, " << Int(batches, "inputs")
        << " inputs, mean size " << Num(batches, "mean_size", 2) << "\n";
    // Buckets in order of their bound, only those that saw batches.
    std::vector<std::pair<double, std::string>> rows;
    const json hist = batches.value("histogram", json::object());
    for (const auto& [le, n] : hist.items()) {
      if (n.is_number() && n.get<double>() > 0)
        rows.emplace_back(std::strtod(le.c_str(), nullptr), le);
    }
    std::sort(rows.begin(), rows.end());
    if (!rows.empty()) {
      out << "  batch size ";
      for (const auto& [bound, le] : rows) {
        out << " <=" << le << ": " << hist[le].get<int64_t>();
      }
      out << "\n";
    }
  } else if (r.contains("server_metrics_error")) {
    out << "  server      no batch statistics: " << r.value("server_metrics_error", std::string())
        << "\n";
  }
  if (mode == "open") {
    out << "  client      max queue " << Int(r, "max_client_queue") << ", connections "
        << Int(r, "max_connections_used") << " (opened " << Int(r, "connections_opened") << ")\n";
  }
  const json warnings = r.value("warnings", json::array());
  for (const auto& w : warnings) {
    out << "  warning: " << w.get<std::string>() << "\n";
  }
  return out.str();
}

}  // namespace tierscope
