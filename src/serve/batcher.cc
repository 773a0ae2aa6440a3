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
  // A batch always holds at least one request, even one past the token limit alone.
  return std::max<int64_t>(1, std::min(options_.max_batch_size, options_.max_batch_tokens / bucket));
}

bool Batcher::Full(size_t q) const {
  if (q == alone_queue()) return false;  // due at once instead (Next): never ahead of a full bucket
  if (q == packed_queue()) {
    return static_cast<int64_t>(queues_[q].size()) >= options_.max_batch_size ||
           packed_tokens_ >= options_.max_batch_tokens;
  }
  return static_cast<int64_t>(queues_[q].size()) >= Capacity(options_.bucket_edges[q]);
}

Status Batcher::Add(uint64_t id, int64_t length, int64_t now_us, bool packable, bool alone) {
  if (length < 1) return InvalidArgument("a request needs at least one token");
  const int64_t bucket = BucketFor(length);
  if (bucket < 0) {
    return OutOfRange("a sequence of " + std::to_string(length) + " tokens is longer than the largest bucket (" +
                      std::to_string(options_.bucket_edges.back()) + ")");
  }
  if (static_cast<int64_t>(queued_) >= options_.max_queue) {
    return ResourceExhausted("the queue is full (" + std::to_string(options_.max_queue) + " requests)");
  }
  size_t q = static_cast<size_t>(std::find(options_.bucket_edges.begin(), options_.bucket_edges.end(), bucket) -
                                 options_.bucket_edges.begin());
  if (options_.packed && packable) {
    q = packed_queue();  // packed, it is attended over its own length alone anyway
    packed_tokens_ += length;
  } else if (alone) {
    q = alone_queue();
  }
  queues_[q].push_back({id, length, now_us});
  ++queued_;
  return OkStatus();
}

Batch Batcher::Take(size_t q, const char* reason) {
  const bool packed = q == packed_queue();
  if (q == alone_queue()) return TakeAlone(reason);
  Batch batch;
  batch.bucket = packed ? options_.bucket_edges.back() : options_.bucket_edges[q];
  batch.packed = packed;
  batch.reason = reason;
  const int64_t count = packed ? options_.max_batch_size : Capacity(batch.bucket);
  auto& waiting = queues_[q];
  for (int64_t i = 0; i < count && !waiting.empty(); ++i) {
    // Packed: up to max_batch_tokens real tokens (always at least one request).
    if (packed && i > 0 && batch.tokens + waiting.front().length > options_.max_batch_tokens) break;
    batch.ids.push_back(waiting.front().id);
    batch.pad_len = std::max(batch.pad_len, waiting.front().length);
    batch.tokens += waiting.front().length;
    if (packed) packed_tokens_ -= waiting.front().length;
    waiting.pop_front();
    --queued_;
  }
  return batch;
}

Batch Batcher::TakeAlone(const char* reason) {
  // The oldest, and those of its very length behind it: padded to nothing, together.
  auto& waiting = queues_[alone_queue()];
  const int64_t length = waiting.front().length;
  Batch batch;
  batch.bucket = BucketFor(length);
  batch.pad_len = length;
  batch.reason = std::string(reason) == "drain" ? reason : "alone";
  const int64_t count = Capacity(batch.bucket);
  for (auto it = waiting.begin(); it != waiting.end() && static_cast<int64_t>(batch.ids.size()) < count;) {
    if (it->length != length) {
      ++it;
      continue;
    }
    batch.ids.push_back(it->id);
    batch.tokens += length;
    it = waiting.erase(it);
    --queued_;
  }
  return batch;
}

std::optional<Batch> Batcher::Next(int64_t now_us) {
  std::optional<size_t> full, due;
  for (size_t q = 0; q < queues_.size(); ++q) {
    if (queues_[q].empty()) continue;
    const int64_t oldest = queues_[q].front().enqueued_us;
    if (Full(q) && (!full || oldest < queues_[*full].front().enqueued_us)) full = q;
    const bool is_due = q == alone_queue() || now_us - oldest >= options_.max_queue_delay_us;
    if (is_due && (!due || oldest < queues_[*due].front().enqueued_us)) {
      due = q;
    }
  }
  if (full) return Take(*full, "full");
  if (due) return Take(*due, "delay");
  return std::nullopt;
}

std::optional<int64_t> Batcher::NextDeadline() const {
  std::optional<int64_t> at;
  for (size_t i = 0; i < queues_.size(); ++i) {
    const auto& q = queues_[i];
    if (q.empty()) continue;
    const int64_t t = q.front().enqueued_us + (i == alone_queue() ? 0 : options_.max_queue_delay_us);
    if (!at || t < *at) at = t;
  }
  return at;
}

bool Batcher::Cancel(uint64_t id) {
  for (size_t q = 0; q < queues_.size(); ++q) {
    auto& waiting = queues_[q];
    auto it = std::find_if(waiting.begin(), waiting.end(), [&](const Waiting& w) { return w.id == id; });
    if (it != waiting.end()) {
      if (q == packed_queue()) packed_tokens_ -= it->length;
      waiting.erase(it);
      --queued_;
      return true;
    }
  }
  return false;
}

std::vector<Batch> Batcher::Drain() {
  std::vector<Batch> out;
  for (size_t q = 0; q < queues_.size(); ++q) {
    while (!queues_[q].empty()) out.push_back(Take(q, "drain"));
  }
  return out;
}

}  // namespace tierscope
