// The dynamic batcher of `tierscope serve`. Bucketed: requests wait in sequence-length
// buckets; a bucket's batch leaves as soon as it is full (max batch size, or max padded
// tokens) or when its oldest request has waited max_queue_delay; requests in a batch are
// padded only to the longest among them, never past their bucket's edge. Packed: every
// packable request waits in one queue of every length, its batches counted in real tokens
// (the engine runs them back to back: no padding to pay for), leaving on the same rules;
// a request that is not packable (it wants BERT's pooler, which reads padded rows) waits
// in its bucket as above. A request that must not be padded (its attention mask is all
// zeros: its attention averages over every position, which padding would stretch to the
// batch's longest) is due at once, in a batch of those of its very length ("alone").
// Time is passed in, so the logic is tested with a fake clock; the server's dispatcher is
// the only caller.
#ifndef TIERSCOPE_SERVE_BATCHER_H_
#define TIERSCOPE_SERVE_BATCHER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

struct BatcherOptions {
  std::vector<int64_t> bucket_edges = {16, 32, 64, 128, 256, 512};  // increasing lengths
  int64_t max_batch_size = 64;
  int64_t max_batch_tokens = 16384;  // batch size x padded length; packed: the tokens themselves
  int64_t max_queue_delay_us = 2000;
  int64_t max_queue = 1024;          // requests waiting in all buckets
  // Packed batches for packable requests (one queue; max_batch_tokens counts real
  // tokens); the largest bucket edge stays the longest request admitted.
  bool packed = false;
};

struct Batch {
  int64_t bucket = 0;     // the bucket's edge
  int64_t pad_len = 0;    // the longest request in the batch (<= bucket)
  int64_t tokens = 0;     // the requests' own tokens, summed
  bool packed = false;    // from the packed queue: run back to back, unpadded
  std::vector<uint64_t> ids;
  std::string reason;     // "full", "delay", "alone" (unpadded, due at once) or "drain"
};

class Batcher {
 public:
  // Checks the options: edges increasing and >= 1, sizes and delay >= 1 (delay >= 0).
  static StatusOr<Batcher> Create(const BatcherOptions& options);

  // Queues request `id` of `length` tokens at `now_us`: in the packed queue when
  // options.packed and `packable`, else in its bucket, or, `alone` (it may not be padded),
  // due at once with those of its very length. OutOfRange when it is longer than the
  // largest bucket; ResourceExhausted when the queue is full.
  Status Add(uint64_t id, int64_t length, int64_t now_us, bool packable = true, bool alone = false);
  // The next batch that may leave at `now_us`: a full bucket first (the one whose
  // oldest request is oldest), else the bucket whose oldest request has waited longest,
  // if that is at least the delay.
  std::optional<Batch> Next(int64_t now_us);
  // When Next will next have a batch without new requests (the oldest head's deadline).
  std::optional<int64_t> NextDeadline() const;
  // Removes a waiting request (its client went away); false if it is not waiting.
  bool Cancel(uint64_t id);
  // Every waiting request, as batches bucket by bucket (graceful shutdown).
  std::vector<Batch> Drain();

  size_t queued() const { return queued_; }
  // The edge of the bucket for `length`, or -1 when it is too long.
  int64_t BucketFor(int64_t length) const;
  // The most requests one batch of `bucket` holds.
  int64_t Capacity(int64_t bucket) const;
  const BatcherOptions& options() const { return options_; }

 private:
  struct Waiting {
    uint64_t id;
    int64_t length;
    int64_t enqueued_us;
  };
  explicit Batcher(const BatcherOptions& o) : options_(o), queues_(o.bucket_edges.size() + 2) {}
  // The packed queue's index, after the buckets', then the queue of batches of one.
  size_t packed_queue() const { return options_.bucket_edges.size(); }
  size_t alone_queue() const { return options_.bucket_edges.size() + 1; }
  bool Full(size_t queue) const;
  Batch Take(size_t queue, const char* reason);
  Batch TakeAlone(const char* reason);

  BatcherOptions options_;
  std::vector<std::deque<Waiting>> queues_;  // one FIFO per bucket, the packed one, the alone one
  size_t queued_ = 0;
  int64_t packed_tokens_ = 0;  // tokens waiting in the packed queue
};

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_BATCHER_H_
