// The inference service behind `tierscope serve`: requests of one or more token
// sequences are split into inputs, queued in the dynamic batcher, run as packed batches
// (no padding; where the engine packs sequences and the batch needs no pooler) or padded
// ones on the engine by one dispatcher thread, and pooled (CLS or mean, optionally
// L2-normalised) or returned whole. One bad input never fails its batch-mates: inputs are
// validated before they are queued, and a batch the engine rejects (or throws on) is re-run input by
// input. A cancelled request (its client left) leaves the queue; if it is already
// running its results are dropped.
#ifndef TIERSCOPE_SERVE_SERVICE_H_
#define TIERSCOPE_SERVE_SERVICE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/batcher.h"
#include "serve/metrics.h"
#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

enum class Pooling { kCls, kMean };
const char* PoolingName(Pooling p);

// One token sequence. type_ids and mask may be empty (zeros / ones).
struct ServeInput {
  std::vector<int32_t> ids, type_ids, mask;
};

struct ServeRequest {
  std::vector<ServeInput> inputs;
  bool want_embedding = false;  // pooled by `pooling`, L2-normalised when `normalize`
  Pooling pooling = Pooling::kCls;
  bool normalize = true;
  bool want_hidden = false;     // last_hidden_state, [len, hidden] per input
  bool want_pooler = false;     // BERT's pooler_output, [hidden] per input
};

struct ServeResult {
  Status status;
  int64_t hidden = 0;
  std::vector<std::vector<float>> embedding, last_hidden, pooler;  // one per input
};

// Called once per request, on the dispatcher thread; it should hand the result off quickly.
using ServeCallback = std::function<void(ServeResult)>;

// What the dispatcher runs batches on: the BERT engine (EngineRunner), or in tests an
// engine that fails on purpose. Called from the dispatcher thread only.
class BatchRunner {
 public:
  virtual ~BatchRunner() = default;
  virtual int64_t hidden_size() const = 0;
  virtual bool has_pooler() const = 0;
  virtual bool packs_sequences() const { return false; }  // takes BatchInput::seq_lens
  virtual StatusOr<ForwardOutput> Forward(const BatchInput& input, const ForwardOptions& options) = 0;
};

class EngineRunner : public BatchRunner {
 public:
  explicit EngineRunner(BertEngine& engine) : engine_(engine) {}
  int64_t hidden_size() const override;
  bool has_pooler() const override;
  bool packs_sequences() const override { return engine_.packs_sequences(); }
  StatusOr<ForwardOutput> Forward(const BatchInput& input, const ForwardOptions& options) override {
    return engine_.Forward(input, options);
  }

 private:
  BertEngine& engine_;
};

class InferenceService {
 public:
  // Starts the dispatcher thread. `runner` and `metrics` must outlive the service.
  static StatusOr<std::unique_ptr<InferenceService>> Start(BatchRunner& runner,
                                                           const BatcherOptions& options,
                                                           ServerMetrics* metrics);
  ~InferenceService();  // drains, then stops the dispatcher

  // Queues the request's inputs together; returns the request's id. ResourceExhausted
  // when the queue lacks room for all of them now, FailedPrecondition when it never will
  // (more inputs than max_queue), OutOfRange when an input is longer than the largest
  // bucket, InvalidArgument for an empty request or input.
  StatusOr<uint64_t> Submit(ServeRequest request, ServeCallback done);
  // Abandons request `id`: its waiting inputs leave the queue, running ones are dropped
  // and the callback is never called. False when it had already finished.
  bool Cancel(uint64_t id);
  // From now on every waiting input is dispatched at once, without the queue delay.
  void BeginDrain();
  // Stopping now (a second signal): nothing waiting is run any more — the batch running
  // finishes, the destructor then returns without draining; no callback of a waiting
  // request is called.
  void AbandonQueued();
  // True when nothing is waiting or running.
  bool Idle() const;
  int64_t queued() const;
  const BatcherOptions& options() const { return batcher_.options(); }
  // Inputs served per second of inference, averaged over recent batches (0 before the
  // first batch): the rate the queue drains at.
  double drain_rate() const;
  // Seconds until the queue as it stands has drained at that rate, rounded up, within
  // [1, 60]; `fallback` before any batch has been measured. What Retry-After says.
  int RetryAfterSeconds(int fallback) const;

 private:
  struct Pending {
    ServeRequest request;
    ServeResult result;
    ServeCallback done;
    size_t remaining = 0;
  };
  struct InputRef {
    uint64_t request = 0;
    size_t index = 0;
    int64_t enqueued_us = 0;
  };
  InferenceService(BatchRunner& runner, Batcher batcher, ServerMetrics* metrics)
      : runner_(runner), batcher_(std::move(batcher)), metrics_(metrics) {}
  void Loop();
  void Deliver(const ServeInput& in, const ForwardOutput& out, int64_t row, Pending& p,
               size_t index) const;

  // One forward, with an exception (an allocation that failed) as its Status: the inputs
  // packed back to back, or padded to `pad_len`.
  StatusOr<ForwardOutput> RunForward(const std::vector<const ServeInput*>& inputs, int64_t pad_len,
                                     const ForwardOptions& options, bool packed = false);

  BatchRunner& runner_;
  Batcher batcher_;
  ServerMetrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Pending> pending_;
  std::map<uint64_t, InputRef> inputs_;
  uint64_t next_request_ = 1, next_input_ = 1;
  bool draining_ = false, stop_ = false, running_ = false;
  bool abandon_ = false;  // AbandonQueued: leave without running what waits
  double drain_rate_ = 0;  // inputs a second, an exponential average over batches
  std::thread thread_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_SERVICE_H_
