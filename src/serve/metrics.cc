// Prometheus text exposition of the server's counters, gauges and histograms.
#include "serve/metrics.h"

#include <algorithm>
#include <charconv>

namespace tierscope {
namespace {

std::string Num(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

const std::vector<double>& LatencyBounds() {
  static const std::vector<double> b = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                        0.1,    0.2,   0.5,   1,     2,    5,    10};
  return b;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  const size_t i = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += v;
  ++count_;
}

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

void Histogram::Write(const std::string& name, const std::string& help, std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    *out += name + "_bucket{le=\"" + Num(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += counts_.back();
  *out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  *out += name + "_sum " + Num(sum_) + "\n";
  *out += name + "_count " + std::to_string(count_) + "\n";
}

ServerMetrics::ServerMetrics()
    : batch_size_({1, 2, 4, 8, 16, 32, 64, 128, 256}),
      batch_tokens_({128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}),
      queue_s_(LatencyBounds()),
      inference_s_(LatencyBounds()),
      total_s_(LatencyBounds()) {}

void ServerMetrics::CountRequest(const std::string& endpoint, int code) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, code}];
}

void ServerMetrics::ObserveBatch(int64_t size, int64_t tokens, const std::string& reason,
                                 double inference_s) {
  batch_size_.Observe(static_cast<double>(size));
  batch_tokens_.Observe(static_cast<double>(tokens));
  inference_s_.Observe(inference_s);
  std::lock_guard<std::mutex> lock(mu_);
  ++batches_by_reason_[reason];
}

std::string ServerMetrics::Render(bool ready) const {
  std::string out;
  out += "# HELP tierscope_requests_total Requests answered, by endpoint (gRPC's as grpc:METHOD) and status code "
         "(gRPC's as its HTTP equivalent).\n"
         "# TYPE tierscope_requests_total counter\n";
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, n] : requests_) {
      out += "tierscope_requests_total{endpoint=\"" + key.first + "\",code=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
    }
    out += "# HELP tierscope_batches_total Batches run, by why they left the queue (full, delay, "
           "drain).\n# TYPE tierscope_batches_total counter\n";
    for (const auto& [reason, n] : batches_by_reason_) {
      out += "tierscope_batches_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
    }
  }
  out += "# HELP tierscope_queue_depth Inputs waiting in the batcher.\n"
         "# TYPE tierscope_queue_depth gauge\ntierscope_queue_depth " +
         std::to_string(queue_depth_.load()) + "\n";
  out += "# HELP tierscope_requests_in_flight Requests read and not yet answered, HTTP and gRPC.\n"
         "# TYPE tierscope_requests_in_flight gauge\ntierscope_requests_in_flight " +
         std::to_string(in_flight_.load() + grpc_in_flight_.load()) + "\n";
  out += "# HELP tierscope_connections_closed_total HTTP connections closed at the connection cap: "
         "idle ones to make room (evicted), new ones answered 503 (refused).\n"
         "# TYPE tierscope_connections_closed_total counter\n"
         "tierscope_connections_closed_total{reason=\"evicted\"} " + std::to_string(connections_evicted_.load()) +
         "\ntierscope_connections_closed_total{reason=\"refused\"} " + std::to_string(connections_refused_.load()) +
         "\n";
  out += "# HELP tierscope_ready 1 when the server accepts work, 0 while it drains.\n"
         "# TYPE tierscope_ready gauge\ntierscope_ready " + std::string(ready ? "1" : "0") + "\n";
  batch_size_.Write("tierscope_batch_size", "Inputs per batch run by the engine.", &out);
  batch_tokens_.Write("tierscope_batch_tokens", 
                      "Tokens computed per batch (size x padded length; packed batches: their own tokens).",
                      &out);
  queue_s_.Write("tierscope_queue_seconds", "Time an input waited in the batcher.", &out);
  inference_s_.Write("tierscope_inference_seconds", "Engine time per batch.", &out);
  total_s_.Write("tierscope_request_seconds",
                 "Time from a request being read to its response being written, HTTP and gRPC.", &out);
  return out;
}

}  // namespace tierscope
