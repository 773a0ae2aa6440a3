// The load generator's options, URL and loopback checks, request bodies, and RunLoad:
// the server's batch histogram before and after the traffic (load_client.cc) around it.
#include "loadgen/load_gen.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include <boost/asio/ip/address.hpp>

#include "core/process_limits.h"
#include "core/text.h"
#include "loadgen/load_client.h"

namespace tierscope {
namespace {

using nlohmann::json;

// Percent-encodes everything but RFC 3986's unreserved characters.
std::string PathEscape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The batch-size histogram from a /metrics reply.
StatusOr<PromHistogram> BatchHistogram(const StatusOr<HttpReply>& reply) {
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) {
    return FailedPrecondition("GET /metrics answered HTTP " + std::to_string(reply->status));
  }
  StatusOr<PromHistogram> h = ParsePromHistogram(reply->body, "tierscope_batch_size");
  if (!h.ok()) return h.status().WithContext("GET /metrics");
  return h;
}

}  // namespace

// --- Options, URLs and bodies ------------------------------------------------------

StatusOr<HttpUrl> ParseHttpUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--url '" + url + "': " + why + " (expected http://host:port)");
  };
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return bad("no http:// scheme");
  std::string scheme = url.substr(0, scheme_end);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), ::tolower);
  if (scheme == "https") return bad("https is not supported, only plain http");
  if (scheme != "http") return bad("unsupported scheme '" + scheme + "'");
  std::string rest = url.substr(scheme_end + 3);
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    if (rest.substr(slash) != "/")
      return bad("a path is not allowed; endpoints come from --endpoint");
    rest.erase(slash);
  }
  if (rest.find_first_of("@?# \t") != std::string::npos) return bad("unexpected characters");
  HttpUrl out;
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) return bad("unterminated [IPv6 address]");
    out.host = rest.substr(1, close - 1);
    const std::string after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("unexpected text after the [IPv6 address]");
      port = after.substr(1);
      if (port.empty()) return bad("empty port");
    }
  } else {
    const size_t colon = rest.find(':');
    out.host = rest.substr(0, colon);
    if (colon != std::string::npos) {
      port = rest.substr(colon + 1);
      if (port.empty()) return bad("empty port");
    }
  }
  if (out.host.empty()) return bad("no host");
  if (!port.empty()) {
    int p = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), p);
    if (r.ec != std::errc() || r.ptr != port.data() + port.size() || p < 1 || p > 65535) {
      return bad("port '" + port + "' is not in 1..65535");
    }
    out.port = static_cast<uint16_t>(p);
  }
  return out;
}

bool IsLoopbackHost(const std::string& host) {
  std::string h = host;
  std::transform(h.begin(), h.end(), h.begin(), ::tolower);
  if (h == "localhost" || (h.size() > 10 && h.substr(h.size() - 10) == ".localhost")) return true;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  namespace ip = boost::asio::ip;
  boost::system::error_code ec;
  const ip::address a = ip::make_address(h, ec);
  if (ec) return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return a.is_loopback();
}

Status CheckLoadOptions(const LoadOptions& o) {
  TS_ASSIGN_OR_RETURN(const HttpUrl url, ParseHttpUrl(o.url));
  if (!o.allow_remote && !IsLoopbackHost(url.host)) {
    return InvalidArgument("--url: '" + url.host +
                           "' is not a loopback host; pass --allow-remote to load another machine");
  }
  if (o.endpoint != "embed" && o.endpoint != "infer") {
    return InvalidArgument("--endpoint '" + o.endpoint + "': expected embed or infer");
  }
  if (o.endpoint == "infer" && SplitList(o.infer_outputs).empty()) {
    return InvalidArgument("--outputs: infer needs at least one output name");
  }
  if (o.mode != "open" && o.mode != "closed") {
    return InvalidArgument("--mode '" + o.mode + "': expected open or closed");
  }
  // Every flag is checked, whichever mode uses it.
  if (!(o.rate > 0 && o.rate <= 1e6)) {
    return InvalidArgument("--rate must be in (0, 1e6] requests per second");
  }
  if (o.concurrency < 1 || o.concurrency > 100000) {
    return InvalidArgument("--concurrency must be in [1, 100000]");
  }
  if (!(o.duration_s > 0 && o.duration_s <= 86400)) {
    return InvalidArgument("--duration must be in (0, 86400] seconds");
  }
  if (!(o.warmup_s >= 0 && o.warmup_s < o.duration_s)) {
    return InvalidArgument("--warmup must be >= 0 and shorter than --duration");
  }
  if (!(o.timeout_s > 0 && o.timeout_s <= 3600)) {
    return InvalidArgument("--timeout must be in (0, 3600] seconds");
  }
  if (o.inputs_per_request < 1 || o.inputs_per_request > 100000) {
    return InvalidArgument("--inputs-per-request must be in [1, 100000]");
  }
  if (o.max_connections < 1 || o.max_connections > 100000) {
    return InvalidArgument("--max-connections must be in [1, 100000]");
  }
  // Each client holds a socket: as many as the descriptor limit leaves, no more.
  const int64_t limit = DescriptorLimit(), room = limit - ReservedDescriptors(limit);
  const bool closed = o.mode == "closed";
  const int64_t sockets = closed ? o.concurrency : o.max_connections;
  if (sockets > room) {
    return InvalidArgument(std::string(closed ? "--concurrency" : "--max-connections") + " " +
                           std::to_string(sockets) + " needs as many sockets; this process's descriptor limit (ulimit -n " +
                           std::to_string(limit) + ") leaves " + std::to_string(room) + ": use at most that");
  }
  return ParseLengthSpec(o.lengths).status();
}

std::string RandomWords(int64_t length, std::mt19937_64& rng) {
  std::string out;
  const int64_t words = std::max<int64_t>(0, length - 2);
  out.reserve(static_cast<size_t>(words * 2));
  for (int64_t i = 0; i < words; ++i) {
    if (i > 0) out += ' ';
    out += static_cast<char>('a' + rng() % 26);
  }
  return out;
}

std::string BuildEmbedBody(const std::vector<int64_t>& lengths, std::mt19937_64& rng) {
  if (lengths.size() == 1) return "{\"inputs\": \"" + RandomWords(lengths[0], rng) + "\"}";
  std::string out = "{\"inputs\": [";
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (i > 0) out += ", ";
    out += '"';
    out += RandomWords(lengths[i], rng);  // appended, not "\"" + ...: GCC 12 warns on that
    out += '"';
  }
  return out + "]}";
}

std::string BuildInferBody(const std::vector<int64_t>& lengths,
                           const std::vector<std::string>& outputs, std::mt19937_64& rng) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  const int64_t width = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  const std::string shape = "[" + std::to_string(n) + "," + std::to_string(width) + "]";
  std::string ids, mask;
  for (int64_t len : lengths) {
    for (int64_t t = 0; t < width; ++t) {
      int64_t id = 0;
      if (t < len)
        id = t == 0 ? 101 : t == len - 1 ? 102 : 1000 + static_cast<int64_t>(rng() % 1000);
      if (!ids.empty()) {
        ids += ',';
        mask += ',';
      }
      ids += std::to_string(id);
      mask += t < len ? '1' : '0';
    }
  }
  std::string out = "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":" + shape +
                    ",\"datatype\":\"INT64\",\"data\":[" + ids +
                    "]},{\"name\":\"attention_mask\",\"shape\":" + shape +
                    ",\"datatype\":\"INT64\",\"data\":[" + mask + "]}],\"outputs\":[";
  for (size_t i = 0; i < outputs.size(); ++i) {
    out += (i > 0 ? ",{\"name\":" : "{\"name\":") + json(outputs[i]).dump() + "}";
  }
  return out + "]}";
}

// --- RunLoad -----------------------------------------------------------------------

StatusOr<json> RunLoad(const LoadOptions& o) {
  TS_RETURN_IF_ERROR(CheckLoadOptions(o));
  TS_ASSIGN_OR_RETURN(const HttpUrl url, ParseHttpUrl(o.url));
  TrafficPlan plan;
  plan.options = o;
  TS_ASSIGN_OR_RETURN(plan.lengths, ParseLengthSpec(o.lengths));
  plan.host = url.host;
  plan.port = url.port;
  plan.outputs = SplitList(o.infer_outputs);
  // The name may be loopback while the resolver says otherwise (/etc/hosts): check both.
  TS_ASSIGN_OR_RETURN(const std::vector<std::string> addresses, ResolveHost(url.host, url.port));
  for (const std::string& a : addresses) {
    if (!o.allow_remote && !IsLoopbackHost(a)) {
      return InvalidArgument(
          "--url: '" + url.host + "' resolves to " + a +
          ", not a loopback address; pass --allow-remote to load another machine");
    }
  }
  const double probe_timeout = std::min(o.timeout_s, 10.0);

  json warnings = json::array();
  std::string model = o.model_name;
  if (o.endpoint == "infer" && model.empty()) {
    const StatusOr<HttpReply> info = HttpGet(url.host, url.port, "/info", probe_timeout);
    if (!info.ok()) {
      // The run goes on: if the server is down its requests count as connect errors.
      warnings.push_back("could not ask the server for its model name (" + info.status().message() +
                         "); pass --model");
      model = "unknown";
    } else {
      const json j = json::parse(info->body, nullptr, /*allow_exceptions=*/false);
      if (info->status != 200 || !j.is_object() || !j.contains("model_name") ||
          !j["model_name"].is_string() || j["model_name"].get<std::string>().empty()) {
        return FailedPrecondition("GET /info (HTTP " + std::to_string(info->status) +
                                  ") gave no \"model_name\"; pass the model name (--model)");
      }
      model = j["model_name"].get<std::string>();
    }
  }
  plan.target = o.endpoint == "infer" ? "/v2/models/" + PathEscape(model) + "/infer" : "/embed";

  json report;
  report["options"] = {{"url", o.url},
                       {"endpoint", o.endpoint},
                       {"target", plan.target},
                       {"model_name", o.endpoint == "infer" ? json(model) : json(nullptr)},
                       {"infer_outputs", plan.outputs},
                       {"mode", o.mode},
                       {"rate", o.rate},
                       {"concurrency", o.concurrency},
                       {"duration_s", o.duration_s},
                       {"warmup_s", o.warmup_s},
                       {"lengths", o.lengths},
                       {"inputs_per_request", o.inputs_per_request},
                       {"max_connections", o.max_connections},
                       {"timeout_s", o.timeout_s},
                       {"seed", o.seed},
                       {"allow_remote", o.allow_remote}};

  // With a warmup the first snapshot is taken when it ends, by the client.
  std::optional<StatusOr<HttpReply>> before;
  if (o.warmup_s <= 0) before = HttpGet(url.host, url.port, "/metrics", probe_timeout);
  TrafficResult traffic = RunTraffic(plan);
  if (!before) {
    before =
        traffic.warm_metrics
            ? *traffic.warm_metrics
            : StatusOr<HttpReply>(FailedPrecondition("no GET /metrics at the end of the warmup"));
  }
  const StatusOr<HttpReply> after = HttpGet(url.host, url.port, "/metrics", probe_timeout);
  report.update(traffic.counters);

  const StatusOr<PromHistogram> h0 = BatchHistogram(*before), h1 = BatchHistogram(after);
  Status metrics_status = h0.ok() ? h1.status() : h0.status();
  if (metrics_status.ok()) {
    StatusOr<json> delta = HistogramDelta(*h0, *h1);
    if (delta.ok()) {
      report["server_batches"] = *delta;
      report["server_batches"]["since"] = o.warmup_s > 0 ? "end of warmup" : "start";
    } else {
      metrics_status = delta.status();
    }
  }
  if (!metrics_status.ok()) {
    report["server_batches"] = nullptr;
    report["server_metrics_error"] = metrics_status.message();
  }
  for (const json& w : traffic.counters.value("warnings", json::array())) warnings.push_back(w);
  report["warnings"] = warnings;
  return report;
}

}  // namespace tierscope
