// The server's metrics, written in the Prometheus text exposition format: request
// counts by endpoint and status code, queue depth, batch size and batch token
// histograms, and queue, inference and total latency histograms. Thread-safe.
#ifndef TIERSCOPE_SERVE_METRICS_H_
#define TIERSCOPE_SERVE_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tierscope {

// A cumulative Prometheus histogram with fixed upper bounds (+Inf is implicit).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  // Appends the _bucket, _sum and _count lines of `name` (after its HELP/TYPE lines).
  void Write(const std::string& name, const std::string& help, std::string* out) const;
  uint64_t count() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, non-cumulative, plus one for +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void CountRequest(const std::string& endpoint, int code);
  void ObserveBatch(int64_t size, int64_t tokens, const std::string& reason, double inference_s);
  void ObserveQueue(double seconds) { queue_s_.Observe(seconds); }
  void ObserveTotal(double seconds) { total_s_.Observe(seconds); }
  void SetQueueDepth(int64_t depth) { queue_depth_.store(depth); }
  void SetInFlight(int64_t n) { in_flight_.store(n); }  // HTTP requests
  void AddGrpcInFlight(int64_t delta) { grpc_in_flight_.fetch_add(delta); }
  // At the connection cap: an idle connection closed to make room, or a new one refused.
  void CountConnectionEvicted() { connections_evicted_.fetch_add(1); }
  void CountConnectionRefused() { connections_refused_.fetch_add(1); }
  // The whole exposition, with `ready` as a gauge.
  std::string Render(bool ready) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> batches_by_reason_;
  std::atomic<int64_t> queue_depth_{0}, in_flight_{0}, grpc_in_flight_{0};
  std::atomic<int64_t> connections_evicted_{0}, connections_refused_{0};
  Histogram batch_size_, batch_tokens_, queue_s_, inference_s_, total_s_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_METRICS_H_
