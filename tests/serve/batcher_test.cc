// The dynamic batcher on a fake clock: bucket choice, batches that leave when full (by
// size or by padded tokens) or when their oldest request hits the delay, fairness
// between buckets, the bounded queue, cancellation, drain, and option checks; packed
// batching's one queue counted in real tokens.
#include "serve/batcher.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

Batcher Make(BatcherOptions o) {
  auto b = Batcher::Create(o);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return std::move(b).value();
}

BatcherOptions Small() {
  BatcherOptions o;
  o.bucket_edges = {16, 64, 128};
  o.max_batch_size = 4;
  o.max_batch_tokens = 256;  // bucket 128 holds 2, bucket 64 holds 4
  o.max_queue_delay_us = 1000;
  o.max_queue = 10;
  return o;
}

TEST(Batcher, RequestsGoToTheSmallestBucketThatHoldsThem) {
  Batcher b = Make(Small());
  EXPECT_EQ(b.BucketFor(1), 16);
  EXPECT_EQ(b.BucketFor(16), 16);
  EXPECT_EQ(b.BucketFor(17), 64);
  EXPECT_EQ(b.BucketFor(128), 128);
  EXPECT_EQ(b.BucketFor(129), -1);
  const Status s = b.Add(1, 200, 0);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(Contains(s.message(), "longer than the largest bucket (128)"));
  EXPECT_EQ(b.Add(2, 0, 0).code(), StatusCode::kInvalidArgument);
}

TEST(Batcher, AFullBucketLeavesAtOnceAndPadsOnlyToItsLongest) {
  Batcher b = Make(Small());
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(b.Add(id, 20 + static_cast<int64_t>(id), 0).ok());
  EXPECT_FALSE(b.Next(10).has_value());  // 3 of 4, and no one has waited 1 ms
  ASSERT_TRUE(b.Add(4, 30, 10).ok());
  auto batch = b.Next(10);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->reason, "full");
  EXPECT_EQ(batch->ids, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(batch->bucket, 64);
  EXPECT_EQ(batch->pad_len, 30);
  EXPECT_EQ(b.queued(), 0u);
}

TEST(Batcher, TheTokenLimitCapsLongBuckets) {
  Batcher b = Make(Small());
  EXPECT_EQ(b.Capacity(128), 2);
  EXPECT_EQ(b.Capacity(64), 4);
  ASSERT_TRUE(b.Add(1, 100, 0).ok());
  ASSERT_TRUE(b.Add(2, 120, 0).ok());
  ASSERT_TRUE(b.Add(3, 110, 0).ok());
  auto batch = b.Next(0);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->ids, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(batch->pad_len, 120);
  EXPECT_EQ(b.queued(), 1u);
}

TEST(Batcher, ALoneRequestLeavesWhenItHasWaitedTheDelay) {
  Batcher b = Make(Small());
  ASSERT_TRUE(b.Add(7, 5, 100).ok());
  EXPECT_EQ(b.NextDeadline(), 1100);
  EXPECT_FALSE(b.Next(1099).has_value());
  auto batch = b.Next(1100);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->reason, "delay");
  EXPECT_EQ(batch->ids, (std::vector<uint64_t>{7}));
  EXPECT_EQ(batch->bucket, 16);
  EXPECT_FALSE(b.NextDeadline().has_value());
}

TEST(Batcher, TheOldestDueBucketGoesFirst) {
  Batcher b = Make(Small());
  ASSERT_TRUE(b.Add(1, 100, 50).ok());  // bucket 128, newer
  ASSERT_TRUE(b.Add(2, 10, 0).ok());    // bucket 16, older
  auto first = b.Next(5000);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->ids, (std::vector<uint64_t>{2}));
  auto second = b.Next(5000);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->ids, (std::vector<uint64_t>{1}));
}

TEST(Batcher, TheQueueIsBounded) {
  Batcher b = Make(Small());
  for (uint64_t id = 0; id < 10; ++id) ASSERT_TRUE(b.Add(id, 100, 0).ok());
  const Status s = b.Add(10, 1, 0);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(s.message(), "queue is full"));
  ASSERT_TRUE(b.Next(0).has_value());  // a batch leaves: room again
  EXPECT_TRUE(b.Add(10, 1, 0).ok());
}

TEST(Batcher, CancelledRequestsLeaveTheirBatchAndDrainTakesTheRest) {
  Batcher b = Make(Small());
  ASSERT_TRUE(b.Add(1, 10, 0).ok());
  ASSERT_TRUE(b.Add(2, 10, 0).ok());
  ASSERT_TRUE(b.Add(3, 100, 0).ok());
  EXPECT_TRUE(b.Cancel(1));
  EXPECT_FALSE(b.Cancel(1));
  const std::vector<Batch> rest = b.Drain();
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].ids, (std::vector<uint64_t>{2}));
  EXPECT_EQ(rest[1].ids, (std::vector<uint64_t>{3}));
  EXPECT_EQ(rest[0].reason, "drain");
  EXPECT_EQ(b.queued(), 0u);
}

TEST(Batcher, BadOptionsAreRefused) {
  BatcherOptions o = Small();
  o.bucket_edges = {64, 32};
  EXPECT_FALSE(Batcher::Create(o).ok());
  o = Small();
  o.max_batch_size = 0;
  EXPECT_FALSE(Batcher::Create(o).ok());
  o = Small();
  o.bucket_edges.clear();
  EXPECT_FALSE(Batcher::Create(o).ok());
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

TEST(PackedBatcher, OneQueueOfEveryLengthLeavesAtMaxRealTokensOrSize) {
  BatcherOptions o = Small();
  o.packed = true;  // 256 real tokens or 4 inputs a batch; the largest edge is the longest input
  Batcher b = Make(o);
  ASSERT_TRUE(b.Add(1, 100, 0).ok());
  ASSERT_TRUE(b.Add(2, 10, 0).ok());
  EXPECT_FALSE(b.Next(10).has_value());  // 110 tokens, 2 inputs: not full, not due
  ASSERT_TRUE(b.Add(3, 120, 1).ok());
  ASSERT_TRUE(b.Add(4, 50, 2).ok());    // 280 tokens waiting: full
  std::optional<Batch> first = b.Next(10);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->reason, "full");
  // Lengths 100, 10 and 120 make 230; the 50 would pass 256: it waits for the next one.
  EXPECT_EQ(first->ids, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(first->tokens, 230);
  EXPECT_EQ(first->pad_len, 120);
  EXPECT_EQ(b.queued(), 1u);
  EXPECT_FALSE(b.Next(10).has_value());
  std::optional<Batch> rest = b.Next(2 + o.max_queue_delay_us);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->reason, "delay");
  EXPECT_EQ(rest->tokens, 50);
}

TEST(PackedBatcher, ALongInputAloneLeavesAndCancelledTokensNoLongerCount) {
  BatcherOptions o = Small();
  o.packed = true;
  o.max_batch_tokens = 64;
  Batcher b = Make(o);
  ASSERT_TRUE(b.Add(1, 128, 0).ok());  // past the token budget alone: a batch of its own
  ASSERT_TRUE(b.Add(2, 8, 0).ok());
  std::optional<Batch> one = b.Next(1);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->ids, (std::vector<uint64_t>{1}));
  EXPECT_EQ(one->tokens, 128);
  ASSERT_TRUE(b.Add(3, 60, 1).ok());    // 68 tokens waiting: full...
  EXPECT_TRUE(b.Cancel(3));             // ...until the 60 leave
  EXPECT_FALSE(b.Next(2).has_value());
  EXPECT_EQ(b.Add(4, 129, 2).code(), StatusCode::kOutOfRange);  // longer than the largest edge
}


TEST(PackedBatcher, AnUnpackableRequestWaitsInItsBucketBesideThePackedQueue) {
  BatcherOptions o = Small();
  o.packed = true;
  Batcher b = Make(o);
  ASSERT_TRUE(b.Add(1, 10, 0).ok());
  ASSERT_TRUE(b.Add(2, 100, 0, /*packable=*/false).ok());  // wants the pooler: padded, bucket 128
  ASSERT_TRUE(b.Add(3, 20, 0).ok());
  std::optional<Batch> first = b.Next(o.max_queue_delay_us);
  std::optional<Batch> second = b.Next(o.max_queue_delay_us);
  ASSERT_TRUE(first.has_value() && second.has_value());
  const Batch& packed = first->packed ? *first : *second;
  const Batch& padded = first->packed ? *second : *first;
  EXPECT_TRUE(packed.packed);
  EXPECT_EQ(packed.ids, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(packed.tokens, 30);
  EXPECT_FALSE(padded.packed);
  EXPECT_EQ(padded.ids, (std::vector<uint64_t>{2}));
  EXPECT_EQ(padded.bucket, 128);
  EXPECT_EQ(b.queued(), 0u);
}

TEST(Batcher, AnInputThatMayNotSharePaddingLeavesAtOnceAsABatchOfItsOwn) {
  BatcherOptions o = Small();
  Batcher b = Make(o);
  ASSERT_TRUE(b.Add(1, 10, 0).ok());
  ASSERT_TRUE(b.Add(2, 5, 0, /*packable=*/true, /*alone=*/true).ok());
  ASSERT_TRUE(b.Add(3, 12, 0).ok());
  ASSERT_TRUE(b.Add(4, 40, 0, /*packable=*/true, /*alone=*/true).ok());
  EXPECT_EQ(b.queued(), 4u);
  std::optional<Batch> first = b.Next(0);  // before any delay: it need not wait for others
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->ids, (std::vector<uint64_t>{2}));
  EXPECT_EQ(first->pad_len, 5);  // padded to nothing
  EXPECT_EQ(first->bucket, 16);
  EXPECT_FALSE(first->packed);
  EXPECT_EQ(first->reason, "alone");
  EXPECT_TRUE(b.Cancel(4));  // a client that left takes it out
  EXPECT_FALSE(b.Next(0).has_value());  // bucket 16's two wait for the delay, together
  std::optional<Batch> rest = b.Next(o.max_queue_delay_us);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(rest->ids, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(b.queued(), 0u);
  // Draining takes it too.
  ASSERT_TRUE(b.Add(5, 7, 0, true, true).ok());
  std::vector<Batch> drained = b.Drain();
  ASSERT_EQ(drained.size(), 1u);
  EXPECT_EQ(drained[0].ids, (std::vector<uint64_t>{5}));
}

TEST(Batcher, InputsThatMayNotBePaddedShareABatchOfTheirVeryLengthAndNeverJumpOlderDueOnes) {
  BatcherOptions o = Small();
  Batcher b = Make(o);
  ASSERT_TRUE(b.Add(1, 10, 0).ok());  // due at the delay
  for (uint64_t id = 2; id <= 7; ++id) {  // lengths 5, 6, 5, 6, 5, 6 arriving after it
    ASSERT_TRUE(b.Add(id, id % 2 == 0 ? 5 : 6, 10, true, /*alone=*/true).ok());
  }
  std::optional<Batch> first = b.Next(o.max_queue_delay_us);  // bucket 16's request is older
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->ids, (std::vector<uint64_t>{1}));
  std::optional<Batch> fives = b.Next(o.max_queue_delay_us);
  ASSERT_TRUE(fives.has_value());
  EXPECT_EQ(fives->ids, (std::vector<uint64_t>{2, 4, 6}));  // one batch, capacity 4, of length 5 only
  EXPECT_EQ(fives->pad_len, 5);
  EXPECT_EQ(fives->tokens, 15);
  std::optional<Batch> sixes = b.Next(o.max_queue_delay_us);
  ASSERT_TRUE(sixes.has_value());
  EXPECT_EQ(sixes->ids, (std::vector<uint64_t>{3, 5, 7}));
  EXPECT_EQ(b.queued(), 0u);
  // Due at once: the dispatcher's next deadline is the arrival itself.
  ASSERT_TRUE(b.Add(8, 5, 50, true, true).ok());
  EXPECT_EQ(b.NextDeadline(), std::optional<int64_t>(50));
}

TEST(PackedBatcher, APackableInputThatMayNotSharePaddingIsPackedForItKeepsItsOwnLength) {
  BatcherOptions o = Small();
  o.packed = true;
  Batcher b = Make(o);
  ASSERT_TRUE(b.Add(1, 10, 0).ok());
  ASSERT_TRUE(b.Add(2, 5, 0, /*packable=*/true, /*alone=*/true).ok());
  ASSERT_TRUE(b.Add(3, 100, 0, /*packable=*/false, /*alone=*/true).ok());  // padded: alone
  std::optional<Batch> first = b.Next(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->ids, (std::vector<uint64_t>{3}));
  EXPECT_EQ(first->bucket, 128);
  EXPECT_EQ(first->pad_len, 100);
  std::optional<Batch> packed = b.Next(o.max_queue_delay_us);
  ASSERT_TRUE(packed.has_value());
  EXPECT_TRUE(packed->packed);
  EXPECT_EQ(packed->ids, (std::vector<uint64_t>{1, 2}));
}

}  // namespace
}  // namespace tierscope
