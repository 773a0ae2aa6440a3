// Dynamic batching, bucketed or packed: admission, batch formation, cancellation, drain.
#include "serve/batcher.h"

#include <algorithm>

namespace tierscope {

StatusOr<Batcher> Batcher::Create(const BatcherOptions& o) {
  if (o.bucket_edges.empty()) return InvalidArgument("no length buckets");
  for (size_t i = 0; i < o.bucket_edges.size(); ++i) {
    if (o.bucket_edges[i] < 1 || (i > 0 && o.bucket_edges[i] <= o.bucket_edges[i - 1])) {
      return InvalidArgument("bucket edges must be increasing and >= 1");
    }
  }
  if (o.max_batch_size < 1) return InvalidArgument("max batch size must be >= 1");
  if (o.max_batch_tokens < 1) return InvalidArgument("max batch tokens must be >= 1");
  if (o.max_queue_delay_us < 0) return InvalidArgument("max queue delay must be >= 0");
  if (o.max_queue < 1) return InvalidArgument("max queue must be >= 1");
  return Batcher(o);
}

int64_t Batcher::BucketFor(int64_t length) const {
  for (int64_t edge : options_.bucket_edges) {
    if (length <= edge) return edge;
  }
  return -1;
}

int64_t Batcher::Capacity(int64_t bucket) const {
  if (options_.packed) return options_.max_batch_size;
  // A batch always holds at least one request, even one past the token limit alone.
  return std::max<int64_t>(1, std::min(options_.max_batch_size, options_.max_batch_tokens / bucket));
}

Status Batcher::Add(uint64_t id, int64_t length, int64_t now_us) {
  if (length < 1) return InvalidArgument("a request needs at least one token");
  const int64_t bucket = BucketFor(length);
  if (bucket < 0) {
    return OutOfRange("a sequence of " + std::to_string(length) + " tokens is longer than the largest bucket (" +
                      std::to_string(options_.bucket_edges.back()) + ")");
  }
  if (static_cast<int64_t>(queued_) >= options_.max_queue) {
    return ResourceExhausted("the queue is full (" + std::to_string(options_.max_queue) + " requests)");
  }
  const size_t b = options_.packed ? 0
                                    : static_cast<size_t>(std::find(options_.bucket_edges.begin(),
                                                                    options_.bucket_edges.end(), bucket) -
                                                          options_.bucket_edges.begin());
  queues_[b].push_back({id, length, now_us});
  ++queued_;
  if (options_.packed) packed_tokens_ += length;
  return OkStatus();
}

Batch Batcher::Take(size_t b, int64_t count, const char* reason) {
  Batch batch;
  batch.bucket = options_.packed ? options_.bucket_edges.back() : options_.bucket_edges[b];
  batch.reason = reason;
  auto& q = queues_[b];
  for (int64_t i = 0; i < count && !q.empty(); ++i) {
    // Packed: up to max_batch_tokens real tokens (always at least one request).
    if (options_.packed && i > 0 && batch.tokens + q.front().length > options_.max_batch_tokens) break;
    batch.ids.push_back(q.front().id);
    batch.pad_len = std::max(batch.pad_len, q.front().length);
    batch.tokens += q.front().length;
    if (options_.packed) packed_tokens_ -= q.front().length;
    q.pop_front();
    --queued_;
  }
  return batch;
}

std::optional<Batch> Batcher::Next(int64_t now_us) {
  std::optional<size_t> full, due;
  for (size_t b = 0; b < queues_.size(); ++b) {
    const auto& q = queues_[b];
    if (q.empty()) continue;
    const int64_t oldest = q.front().enqueued_us;
    const bool is_full = static_cast<int64_t>(q.size()) >= Capacity(options_.bucket_edges[b]) ||
                         (options_.packed && packed_tokens_ >= options_.max_batch_tokens);
    if (is_full && (!full || oldest < queues_[*full].front().enqueued_us)) {
      full = b;
    }
    if (now_us - oldest >= options_.max_queue_delay_us &&
        (!due || oldest < queues_[*due].front().enqueued_us)) {
      due = b;
    }
  }
  if (full) return Take(*full, Capacity(options_.bucket_edges[*full]), "full");
  if (due) return Take(*due, Capacity(options_.bucket_edges[*due]), "delay");
  return std::nullopt;
}

std::optional<int64_t> Batcher::NextDeadline() const {
  std::optional<int64_t> at;
  for (const auto& q : queues_) {
    if (q.empty()) continue;
    const int64_t t = q.front().enqueued_us + options_.max_queue_delay_us;
    if (!at || t < *at) at = t;
  }
  return at;
}

bool Batcher::Cancel(uint64_t id) {
  for (auto& q : queues_) {
    auto it = std::find_if(q.begin(), q.end(), [&](const Waiting& w) { return w.id == id; });
    if (it != q.end()) {
      if (options_.packed) packed_tokens_ -= it->length;
      q.erase(it);
      --queued_;
      return true;
    }
  }
  return false;
}

std::vector<Batch> Batcher::Drain() {
  std::vector<Batch> out;
  for (size_t b = 0; b < queues_.size(); ++b) {
    while (!queues_[b].empty()) out.push_back(Take(b, Capacity(options_.bucket_edges[b]), "drain"));
  }
  return out;
}

}  // namespace tierscope
