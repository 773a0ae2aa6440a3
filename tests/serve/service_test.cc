// The inference service with an engine that fails on purpose: a batch the engine rejects,
// or throws on (an allocation that failed), is re-run input by input, so the requests
// batched with a bad one are answered and only the bad one gets the error.
#include "serve/service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace tierscope {
namespace {

constexpr int32_t kFails = 13;   // a batch holding this id returns an error
constexpr int32_t kThrows = 99;  // a batch holding this id throws std::bad_alloc

// hidden state of token t = {id, 2 * id}.
class FaultyRunner : public BatchRunner {
 public:
  int64_t hidden_size() const override { return 2; }
  bool has_pooler() const override { return false; }
  StatusOr<ForwardOutput> Forward(const BatchInput& in, const ForwardOptions&) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      batches_.push_back(in.batch);
    }
    for (int64_t id : in.input_ids) {
      if (id == kFails) return Internal("injected failure");
      if (id == kThrows) throw std::bad_alloc();
    }
    ForwardOutput out;
    out.batch = in.batch;
    out.seq_len = in.seq_len;
    out.hidden = 2;
    for (int64_t id : in.input_ids) {
      out.last_hidden_state.push_back(static_cast<float>(id));
      out.last_hidden_state.push_back(static_cast<float>(2 * id));
    }
    return out;
  }
  std::vector<int64_t> batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> batches_;
};

// Three one-input requests that fill one batch (max 3, a long delay); the middle one
// carries `poison`. Fills `out` with their results in order.
void ServeThree(FaultyRunner& runner, int32_t poison, std::vector<ServeResult>* out) {
  BatcherOptions o;
  o.bucket_edges = {4};
  o.max_batch_size = 3;
  o.max_queue_delay_us = 10'000'000;  // only a full batch leaves
  auto service = InferenceService::Start(runner, o, nullptr);
  ASSERT_TRUE(service.ok()) << service.status().ToString();
  std::vector<std::promise<ServeResult>> done(3);
  std::vector<std::future<ServeResult>> results;
  for (auto& d : done) results.push_back(d.get_future());
  const std::vector<std::vector<int32_t>> ids = {{5, 6}, {7, poison}, {8, 9}};
  for (size_t i = 0; i < ids.size(); ++i) {
    ServeRequest r;
    r.inputs.push_back(ServeInput{ids[i], {}, {}});
    r.want_hidden = true;
    auto id = (*service)->Submit(std::move(r), [&done, i](ServeResult res) { done[i].set_value(std::move(res)); });
    ASSERT_TRUE(id.ok()) << id.status().ToString();
  }
  for (auto& f : results) {
    // A hang guard, not a speed check: a lost request never completes.
    ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    out->push_back(f.get());
  }
}

void ExpectGoodNeighbours(const std::vector<ServeResult>& r) {
  ASSERT_EQ(r.size(), 3u);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  ASSERT_TRUE(r[2].status.ok()) << r[2].status.ToString();
  EXPECT_EQ(r[0].last_hidden.at(0), (std::vector<float>{5, 10, 6, 12}));
  EXPECT_EQ(r[2].last_hidden.at(0), (std::vector<float>{8, 16, 9, 18}));
}

TEST(ServiceFaults, ABatchTheEngineRejectsIsRerunInputByInput) {
  FaultyRunner runner;
  std::vector<ServeResult> r;
  ServeThree(runner, kFails, &r);
  ExpectGoodNeighbours(r);
  EXPECT_FALSE(r[1].status.ok());
  EXPECT_NE(r[1].status.message().find("injected failure"), std::string::npos) << r[1].status.ToString();
  EXPECT_EQ(runner.batches(), (std::vector<int64_t>{3, 1, 1, 1}));  // the batch, then each alone
}

TEST(ServiceFaults, AnEngineThatThrowsFailsOnlyItsOwnInput) {
  // An exception on the dispatcher thread used to end the whole server (std::terminate).
  FaultyRunner runner;
  std::vector<ServeResult> r;
  ServeThree(runner, kThrows, &r);
  ExpectGoodNeighbours(r);
  EXPECT_EQ(r[1].status.code(), StatusCode::kResourceExhausted) << r[1].status.ToString();
  EXPECT_NE(r[1].status.message().find("out of memory"), std::string::npos) << r[1].status.ToString();
  EXPECT_EQ(runner.batches(), (std::vector<int64_t>{3, 1, 1, 1}));
}

// Takes at least 100 ms a batch: the service can drain at most 10 one-input batches a second.
class SlowRunner : public FaultyRunner {
 public:
  StatusOr<ForwardOutput> Forward(const BatchInput& in, const ForwardOptions& o) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return FaultyRunner::Forward(in, o);
  }
};

TEST(ServiceRetryAfter, ComesFromTheMeasuredDrainRateOnceABatchHasRun) {
  SlowRunner runner;
  BatcherOptions o;
  o.bucket_edges = {4};
  o.max_batch_size = 1;
  o.max_queue_delay_us = 0;
  o.max_queue = 64;
  auto service = InferenceService::Start(runner, o, nullptr);
  ASSERT_TRUE(service.ok()) << service.status().ToString();
  EXPECT_EQ((*service)->RetryAfterSeconds(7), 7);  // nothing measured yet: the fallback
  std::vector<std::promise<ServeResult>> done(21);
  auto submit = [&](size_t i) {
    ServeRequest r;
    r.inputs.push_back(ServeInput{{5, 6}, {}, {}});
    r.want_hidden = true;
    ASSERT_TRUE((*service)->Submit(std::move(r), [&done, i](ServeResult res) { done[i].set_value(std::move(res)); }).ok());
  };
  submit(0);
  ASSERT_EQ(done[0].get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const double rate = (*service)->drain_rate();
  EXPECT_GT(rate, 0);
  EXPECT_LE(rate, 10.5);  // one input per >= 100 ms
  EXPECT_EQ((*service)->RetryAfterSeconds(7), 1);  // an empty queue: the floor of 1 s
  for (size_t i = 1; i < done.size(); ++i) submit(i);
  // About 19-20 inputs wait behind the one running, at <= 10 a second: >= 2 s to drain.
  const int retry = (*service)->RetryAfterSeconds(7);
  EXPECT_GE(retry, 2);
  EXPECT_LE(retry, 60);
  for (size_t i = 1; i < done.size(); ++i) {
    ASSERT_EQ(done[i].get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  }
}

}  // namespace
}  // namespace tierscope
