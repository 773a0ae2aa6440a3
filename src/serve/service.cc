// The dispatcher: admission into the batcher, batch assembly (packed back to back, or
// padded to the batch's longest input), the engine call, pooling, and delivery of
// finished requests.
#include "serve/service.h"

#include "core/clock.h"
#include "core/exceptions.h"
#include "model/bert.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tierscope {
namespace {

int64_t NowUs() { return MonotonicNs() / 1000; }

// Inputs of one batch, padded to `pad_len` (ids 0, type 0, mask 0 past each input's end),
// or `packed` back to back with no padding (BatchInput::seq_lens).
BatchInput Assemble(const std::vector<const ServeInput*>& inputs, int64_t pad_len, bool packed) {
  BatchInput b;
  b.batch = static_cast<int64_t>(inputs.size());
  size_t n = static_cast<size_t>(b.batch * pad_len);
  if (packed) {
    n = 0;
    for (const ServeInput* in : inputs) {
      const auto len = static_cast<int64_t>(in->ids.size());
      b.seq_lens.push_back(len);
      b.seq_len = std::max(b.seq_len, len);
      n += in->ids.size();
    }
  } else {
    b.seq_len = pad_len;
  }
  b.input_ids.assign(n, 0);
  b.attention_mask.assign(n, 0);
  b.token_type_ids.assign(n, 0);
  size_t base = 0;
  for (const ServeInput* input : inputs) {
    const ServeInput& in = *input;
    for (size_t t = 0; t < in.ids.size(); ++t) {
      b.input_ids[base + t] = in.ids[t];
      b.attention_mask[base + t] = in.mask.empty() ? 1 : in.mask[t];
      b.token_type_ids[base + t] = in.type_ids.empty() ? 0 : in.type_ids[t];
    }
    base += packed ? in.ids.size() : static_cast<size_t>(pad_len);
  }
  return b;
}


}  // namespace

const char* PoolingName(Pooling p) { return p == Pooling::kMean ? "mean" : "cls"; }

int64_t EngineRunner::hidden_size() const { return engine_.config().hidden_size; }
bool EngineRunner::has_pooler() const { return engine_.model().has_pooler(); }

StatusOr<std::unique_ptr<InferenceService>> InferenceService::Start(BatchRunner& runner,
                                                                    const BatcherOptions& options,
                                                                    ServerMetrics* metrics) {
  BatcherOptions batching = options;
  batching.packed = batching.packed && runner.packs_sequences();  // buckets where it cannot pack
  TS_ASSIGN_OR_RETURN(Batcher batcher, Batcher::Create(batching));
  std::unique_ptr<InferenceService> s(new InferenceService(runner, std::move(batcher), metrics));
  s->thread_ = std::thread([p = s.get()] { p->Loop(); });
  return s;
}

InferenceService::~InferenceService() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatusOr<uint64_t> InferenceService::Submit(ServeRequest request, ServeCallback done) {
  if (request.inputs.empty()) return InvalidArgument("the request has no inputs");
  if (static_cast<int64_t>(request.inputs.size()) > batcher_.options().max_queue) {
    return FailedPrecondition("the request has " + std::to_string(request.inputs.size()) +
                              " inputs, more than the queue holds (" +
                              std::to_string(batcher_.options().max_queue) + ")");
  }
  for (const ServeInput& in : request.inputs) {
    const int64_t len = static_cast<int64_t>(in.ids.size());
    if (len < 1) return InvalidArgument("an input has no tokens");
    if (batcher_.BucketFor(len) < 0) {
      return OutOfRange("an input of " + std::to_string(len) +
                        " tokens is longer than the largest bucket (" +
                        std::to_string(batcher_.options().bucket_edges.back()) + ")");
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  const size_t n = request.inputs.size();
  if (static_cast<int64_t>(batcher_.queued() + n) > batcher_.options().max_queue) {
    return ResourceExhausted("the queue is full (" + std::to_string(batcher_.queued()) + " of " +
                             std::to_string(batcher_.options().max_queue) + " inputs waiting)");
  }
  const uint64_t id = next_request_++;
  const int64_t now = NowUs();
  Pending& p = pending_[id];
  p.request = std::move(request);
  p.done = std::move(done);
  p.remaining = n;
  p.result.hidden = runner_.hidden_size();
  p.result.embedding.resize(p.request.want_embedding ? n : 0);
  p.result.last_hidden.resize(p.request.want_hidden ? n : 0);
  p.result.pooler.resize(p.request.want_pooler ? n : 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t input = next_input_++;
    // Cannot fail: lengths and room were checked above, under the lock.
    // A pooler request is not packable: BERT's pooler reads each input's row of a padded batch.
    // An input whose mask is all zeros attends uniformly over every position of its row: it
    // is not padded with others' lengths (its output would change with its batch).
    const ServeInput& in = p.request.inputs[i];
    const bool all_masked =
        !in.mask.empty() && std::all_of(in.mask.begin(), in.mask.end(), [](int32_t m) { return m == 0; });
    Status s = batcher_.Add(input, static_cast<int64_t>(in.ids.size()), now,
                            /*packable=*/!p.request.want_pooler, /*alone=*/all_masked);
    if (!s.ok()) {  // roll back, so nothing of the request stays behind
      lock.unlock();
      Cancel(id);
      return s;
    }
    inputs_[input] = {id, i, now};
  }
  if (metrics_) metrics_->SetQueueDepth(static_cast<int64_t>(batcher_.queued()));
  lock.unlock();
  cv_.notify_all();
  return id;
}

bool InferenceService::Cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(id);
  if (it == pending_.end()) return false;
  for (auto in = inputs_.begin(); in != inputs_.end();) {
    if (in->second.request == id) {
      batcher_.Cancel(in->first);  // false when it is in the running batch: its result is dropped
      in = inputs_.erase(in);
    } else {
      ++in;
    }
  }
  pending_.erase(it);
  if (metrics_) metrics_->SetQueueDepth(static_cast<int64_t>(batcher_.queued()));
  return true;
}

void InferenceService::BeginDrain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  cv_.notify_all();
}

void InferenceService::AbandonQueued() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    abandon_ = true;
  }
  cv_.notify_all();
}

bool InferenceService::Idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batcher_.queued() == 0 && !running_ && pending_.empty();
}

int64_t InferenceService::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(batcher_.queued());
}

void InferenceService::Deliver(const ServeInput& in, const ForwardOutput& out, int64_t row,
                               Pending& p, size_t index) const {
  const int64_t H = out.hidden;
  const int64_t len = static_cast<int64_t>(in.ids.size());
  const int64_t first = out.offsets.empty() ? row * out.seq_len : out.offsets[row];  // its first token's row
  const float* base = out.last_hidden_state.data() + first * H;
  if (p.request.want_hidden) {
    p.result.last_hidden[index].assign(base, base + len * H);
  }
  if (p.request.want_pooler && !out.pooler_output.empty()) {
    const float* pr = out.pooler_output.data() + row * H;
    p.result.pooler[index].assign(pr, pr + H);
  }
  if (p.request.want_embedding) {
    std::vector<double> acc(static_cast<size_t>(H), 0.0);
    if (p.request.pooling == Pooling::kCls) {
      for (int64_t h = 0; h < H; ++h) acc[h] = base[h];
    } else {
      int64_t count = 0;
      for (int64_t t = 0; t < len; ++t) {
        if (!in.mask.empty() && in.mask[t] == 0) continue;
        ++count;
        for (int64_t h = 0; h < H; ++h) acc[h] += base[t * H + h];
      }
      // sentence-transformers clamps the token count at 1e-9: an all-masked input pools to 0.
      const double inv = 1.0 / std::max<double>(static_cast<double>(count), 1e-9);
      for (double& v : acc) v *= inv;
    }
    if (p.request.normalize) {
      double norm = 0;
      for (double v : acc) norm += v * v;
      norm = std::sqrt(norm);
      // torch.nn.functional.normalize divides by max(norm, 1e-12).
      const double inv = 1.0 / std::max(norm, 1e-12);
      for (double& v : acc) v *= inv;
    }
    auto& e = p.result.embedding[index];
    e.resize(static_cast<size_t>(H));
    for (int64_t h = 0; h < H; ++h) e[h] = static_cast<float>(acc[h]);
  }
}

StatusOr<ForwardOutput> InferenceService::RunForward(const std::vector<const ServeInput*>& inputs,
                                                     int64_t pad_len, const ForwardOptions& options,
                                                     bool packed) {
  return CatchAll("the engine", [&] {
    return runner_.Forward(Assemble(inputs, pad_len, packed), options);
  });
}

void InferenceService::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (abandon_ || (stop_ && batcher_.queued() == 0)) break;
    const int64_t now = NowUs();
    // While draining every waiting input is due: look from far in the future.
    std::optional<Batch> batch = batcher_.Next(draining_ ? now + (int64_t{1} << 40) : now);
    if (!batch) {
      std::optional<int64_t> deadline = batcher_.NextDeadline();
      if (deadline) {
        cv_.wait_for(lock, std::chrono::microseconds(std::max<int64_t>(*deadline - now, 1)));
      } else {
        cv_.wait(lock);
      }
      continue;
    }
    // Gather the batch's inputs (copied: a Cancel may erase them while the engine runs).
    std::vector<ServeInput> copies;
    std::vector<InputRef> refs;
    bool pooler = false;
    for (uint64_t input : batch->ids) {
      auto it = inputs_.find(input);
      if (it == inputs_.end()) continue;
      const Pending& p = pending_.at(it->second.request);
      copies.push_back(p.request.inputs[it->second.index]);
      refs.push_back(it->second);
      pooler = pooler || p.request.want_pooler;
      if (metrics_) metrics_->ObserveQueue(static_cast<double>(now - it->second.enqueued_us) * 1e-6);
      inputs_.erase(it);
    }
    if (metrics_) metrics_->SetQueueDepth(static_cast<int64_t>(batcher_.queued()));
    if (copies.empty()) continue;
    running_ = true;
    lock.unlock();

    std::vector<const ServeInput*> ptrs;
    for (const ServeInput& c : copies) ptrs.push_back(&c);
    ForwardOptions fo;
    fo.pooler = pooler && runner_.has_pooler();
    // The packed queue's batches (no pooler request is in them) run back to back.
    const bool packed = batch->packed;
    const int64_t t0 = NowUs();
    StatusOr<ForwardOutput> out = RunForward(ptrs, batch->pad_len, fo, packed);
    std::vector<StatusOr<ForwardOutput>> singles;  // input by input, when the batch failed
    if (!out.ok() && copies.size() > 1) {
      for (const ServeInput* in : ptrs) {
        singles.push_back(RunForward({in}, static_cast<int64_t>(in->ids.size()), fo));
      }
    }
    const double inference_s = static_cast<double>(NowUs() - t0) * 1e-6;
    if (metrics_) {
      int64_t tokens = static_cast<int64_t>(copies.size()) * batch->pad_len;
      if (packed) {
        tokens = 0;
        for (const ServeInput& c : copies) tokens += static_cast<int64_t>(c.ids.size());
      }
      metrics_->ObserveBatch(static_cast<int64_t>(copies.size()), tokens, batch->reason, inference_s);
    }

    lock.lock();
    running_ = false;
    if (inference_s > 0) {  // each batch weighs a quarter: a few batches follow a change of load
      const double rate = static_cast<double>(copies.size()) / inference_s;
      drain_rate_ = drain_rate_ > 0 ? 0.75 * drain_rate_ + 0.25 * rate : rate;
    }
    std::vector<std::pair<ServeCallback, ServeResult>> finished;
    for (size_t r = 0; r < refs.size(); ++r) {
      auto it = pending_.find(refs[r].request);
      if (it == pending_.end()) continue;  // cancelled while running
      Pending& p = it->second;
      const StatusOr<ForwardOutput>& o = singles.empty() ? out : singles[r];
      if (!o.ok()) {
        if (p.result.status.ok()) {
          p.result.status = o.status().WithContext("input " + std::to_string(refs[r].index));
        }
      } else {
        Deliver(copies[r], *o, singles.empty() ? static_cast<int64_t>(r) : 0, p, refs[r].index);
      }
      if (--p.remaining == 0) {
        finished.emplace_back(std::move(p.done), std::move(p.result));
        pending_.erase(it);
      }
    }
    lock.unlock();
    for (auto& [done, result] : finished) done(std::move(result));
    lock.lock();
  }
}

double InferenceService::drain_rate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return drain_rate_;
}

int InferenceService::RetryAfterSeconds(int fallback) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!(drain_rate_ > 0)) return fallback;
  const double s = std::ceil(static_cast<double>(batcher_.queued()) / drain_rate_);
  return static_cast<int>(std::clamp(s, 1.0, 60.0));
}

}  // namespace tierscope
