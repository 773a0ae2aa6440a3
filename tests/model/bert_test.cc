// The BERT engine on the built-in default model: the default directory, serial vs
// batched agreement, masking, packed sequences, precisions, pooler, and input validation.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "core/paths.h"
#include "workload/bench.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "backend/cpu/micro_kernel_int8.h"
#include "model/bert.h"
#include "tierscope/engine.h"
#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;
using testing::Cosine;
using testing::ScopedEnv;

// Whether two float vectors hold the same bits (NaNs included).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Two forwards' last hidden states, pooler outputs and hidden states the same bit for bit.
void ExpectSameOutputs(const ForwardOutput& a, const ForwardOutput& b, const std::string& what) {
  EXPECT_TRUE(SameBits(a.last_hidden_state, b.last_hidden_state)) << what;
  EXPECT_TRUE(SameBits(a.pooler_output, b.pooler_output)) << what;
  ASSERT_EQ(a.hidden_states.size(), b.hidden_states.size()) << what;
  for (size_t i = 0; i < a.hidden_states.size(); ++i) {
    EXPECT_TRUE(SameBits(a.hidden_states[i], b.hidden_states[i])) << what << " layer " << i;
  }
}

class BertEngineTest : public testing::FreshCacheTest {
 protected:
  static void SetUpTestSuite() {
    FreshCacheTest::SetUpTestSuite();
    auto dir = EnsureDefaultModel();
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = new std::string(*dir);
  }
  static void TearDownTestSuite() {
    delete dir_;
    FreshCacheTest::TearDownTestSuite();
  }
  static std::unique_ptr<BertEngine> Load(DType t) {
    EngineOptions o;
    o.dtype = t;
    o.threads = 2;
    auto e = BertEngine::Load(*dir_, o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }
  static BatchInput Inputs(int64_t batch, int64_t seq) {
    return BatchInput{batch, seq, BenchInputIds(11, batch, seq, 30522), {}, {}};
  }
  static inline std::string* dir_ = nullptr;
};

TEST_F(BertEngineTest, DefaultModelIsARealHuggingFaceDirectoryWrittenOnce) {
  EXPECT_TRUE(Contains(*dir_, cache_->path()));
  auto cfg = LoadBertConfig(*dir_ + "/config.json");
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->num_hidden_layers, 2);
  EXPECT_EQ(cfg->hidden_size, 128);
  EXPECT_EQ(cfg->num_attention_heads, 2);
  EXPECT_EQ(cfg->intermediate_size, 512);
  EXPECT_EQ(cfg->vocab_size, 30522);
  std::ifstream vocab(*dir_ + "/vocab.txt");
  std::vector<std::string> lines;
  for (std::string l; std::getline(vocab, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 30522u);
  EXPECT_EQ(lines[0], "[PAD]");
  EXPECT_EQ(lines[100], "[UNK]");
  EXPECT_EQ(lines[101], "[CLS]");
  EXPECT_EQ(lines[102], "[SEP]");
  EXPECT_EQ(lines[103], "[MASK]");
  struct stat before, after;
  ASSERT_EQ(stat((*dir_ + "/model.safetensors").c_str(), &before), 0);
  auto again = EnsureDefaultModel();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *dir_);
  ASSERT_EQ(stat((*dir_ + "/model.safetensors").c_str(), &after), 0);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
  EXPECT_EQ(before.st_ino, after.st_ino);
}

TEST_F(BertEngineTest, SerialAndBatchedForwardsAgreeInFp32) {
  auto e = Load(DType::kF32);
  ASSERT_NE(e, nullptr);
  const int64_t B = 4, S = 32, H = 128;
  BatchInput batch = Inputs(B, S);
  auto all = e->Forward(batch, {});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  double max_diff = 0;
  for (int64_t b = 0; b < B; ++b) {
    BatchInput one{1, S, std::vector<int64_t>(batch.input_ids.begin() + b * S,
                                              batch.input_ids.begin() + (b + 1) * S), {}, {}};
    auto single = e->Forward(one, {});
    ASSERT_TRUE(single.ok());
    for (int64_t i = 0; i < S * H; ++i) {
      max_diff = std::max<double>(max_diff, std::fabs(single->last_hidden_state[i] -
                                                      all->last_hidden_state[b * S * H + i]));
    }
  }
  EXPECT_LE(max_diff, 1e-5);
}

TEST_F(BertEngineTest, PaddingAfterTheMaskDoesNotChangeRealTokens) {
  auto e = Load(DType::kF32);
  ASSERT_NE(e, nullptr);
  const int64_t S = 24, real = 15, H = 128;
  BatchInput padded = Inputs(1, S);
  padded.attention_mask.assign(S, 1);
  for (int64_t s = real; s < S; ++s) {
    padded.attention_mask[s] = 0;
    padded.input_ids[s] = 0;
  }
  BatchInput trimmed{1, real, std::vector<int64_t>(padded.input_ids.begin(), padded.input_ids.begin() + real), {}, {}};
  auto a = e->Forward(padded, {});
  auto b = e->Forward(trimmed, {});
  ASSERT_TRUE(a.ok() && b.ok());
  for (int64_t i = 0; i < real * H; ++i) {
    ASSERT_NEAR(a->last_hidden_state[i], b->last_hidden_state[i], 1e-5) << i;
  }
}

// A packed batch (no padding) gives every sequence the output it gets padded in a batch
// and alone: attention stays within each sequence, positions restart in each, and an
// inner masked token is honoured; FP32, BF16 (16-bit weights) and INT8 alike.
TEST_F(BertEngineTest, PackedSequencesGiveEachSequenceItsPaddedOutputElementByElement) {
  const std::vector<int64_t> lens = {5, 17, 1, 9, 40};
  const int64_t B = static_cast<int64_t>(lens.size()), S = 40, H = 128;
  int64_t total = 0;
  for (int64_t len : lens) total += len;
  const std::vector<int64_t> ids = BenchInputIds(23, 1, total, 30522);
  std::vector<int64_t> mask(total, 1);
  mask[22 + 4] = 0;  // token 4 of the fourth sequence (which starts at 5 + 17 = 22)
  BatchInput packed{B, S, ids, mask, {}, lens};
  BatchInput padded{B, S, std::vector<int64_t>(B * S, 0), std::vector<int64_t>(B * S, 0), {}};
  for (int64_t b = 0, at = 0; b < B; at += lens[b], ++b) {
    for (int64_t t = 0; t < lens[b]; ++t) {
      padded.input_ids[b * S + t] = ids[at + t];
      padded.attention_mask[b * S + t] = mask[at + t];
    }
  }
  for (DType t : {DType::kF32, DType::kBF16, DType::kI8}) {
    auto e = Load(t);
    ASSERT_NE(e, nullptr);
    ASSERT_TRUE(e->packs_sequences());
    auto p = e->Forward(packed, {});
    auto q = e->Forward(padded, {});
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(p->offsets, (std::vector<int64_t>{0, 5, 22, 23, 32, 72}));
    ASSERT_EQ(static_cast<int64_t>(p->last_hidden_state.size()), total * H);
    double worst = 0;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < lens[b] * H; ++i) {
        worst = std::max<double>(worst, std::fabs(p->last_hidden_state[p->offsets[b] * H + i] -
                                                  q->last_hidden_state[b * S * H + i]));
      }
    }
    RecordProperty(std::string("max_abs_diff_") + std::string(DTypeName(t)), std::to_string(worst));
    EXPECT_LE(worst, 1e-5) << DTypeName(t);
    // The last sequence alone, unbatched, too.
    BatchInput alone{1, lens[4], std::vector<int64_t>(ids.end() - lens[4], ids.end()), {}, {}};
    auto a = e->Forward(alone, {});
    ASSERT_TRUE(a.ok());
    for (int64_t i = 0; i < lens[4] * H; ++i) {
      ASSERT_NEAR(p->last_hidden_state[32 * H + i], a->last_hidden_state[i], 1e-5) << DTypeName(t) << " " << i;
    }
  }
}

TEST_F(BertEngineTest, BrokenPackedBatchesAreRefusedSayingWhatIsWrong) {
  auto e = Load(DType::kF32);
  ASSERT_NE(e, nullptr);
  const std::vector<int64_t> ids = BenchInputIds(5, 1, 10, 30522);
  auto message = [&](BatchInput in, ForwardOptions fo = {}) {
    auto r = e->Forward(in, fo);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_TRUE(Contains(message({2, 5, ids, {}, {}, {4, 5}}), "sum of seq_lens = 9"));
  EXPECT_TRUE(Contains(message({2, 10, ids, {}, {}, {0, 10}}), "packed sequence 0 has 0 tokens"));
  EXPECT_TRUE(Contains(message({3, 6, ids, {}, {}, {4, 6}}), "2 lengths for a batch of 3"));
  EXPECT_TRUE(Contains(message({2, 7, ids, {}, {}, {4, 6}}), "not the longest packed sequence (6)"));
  ForwardOptions pooler;
  pooler.pooler = true;
  EXPECT_TRUE(Contains(message({2, 6, ids, {}, {}, {4, 6}}, pooler), "not computed for packed sequences"));
  EXPECT_EQ(message({2, 6, ids, {}, {}, {4, 6}}), "ok");
}

TEST_F(BertEngineTest, TokenTypesChangeTheOutput) {
  auto e = Load(DType::kF32);
  ASSERT_NE(e, nullptr);
  BatchInput a = Inputs(1, 8), b = Inputs(1, 8);
  b.token_type_ids.assign(8, 1);
  auto ra = e->Forward(a, {});
  auto rb = e->Forward(b, {});
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_NE(ra->last_hidden_state, rb->last_hidden_state);
}

TEST_F(BertEngineTest, HalfPrecisionsStayCloseToFp32AndHalveMemory) {
  auto f32 = Load(DType::kF32);
  auto f16 = Load(DType::kF16);
  auto bf16 = Load(DType::kBF16);
  ASSERT_TRUE(f32 && f16 && bf16);
  BatchInput in = Inputs(2, 64);
  auto r32 = f32->Forward(in, {});
  auto r16 = f16->Forward(in, {});
  auto rb16 = bf16->Forward(in, {});
  ASSERT_TRUE(r32.ok() && r16.ok() && rb16.ok());
  EXPECT_GE(Cosine(r32->last_hidden_state, r16->last_hidden_state), 0.9999);
  EXPECT_GE(Cosine(r32->last_hidden_state, rb16->last_hidden_state), 0.999);
  EXPECT_LT(f16->memory().weight_bytes, f32->memory().weight_bytes * 0.55);
}

TEST_F(BertEngineTest, Int8StaysCloseToFp32WithAQuarterOfTheLinearWeightBytes) {
  auto f32 = Load(DType::kF32);
  auto i8 = Load(DType::kI8);
  ASSERT_TRUE(f32 && i8);
  EXPECT_EQ(i8->dtype(), DType::kI8);
  EXPECT_EQ(i8->model().dtype(), DType::kF32);  // activations stay FP32
  BatchInput in = Inputs(2, 64);
  auto r32 = f32->Forward(in, {});
  auto r8 = i8->Forward(in, {});
  ASSERT_TRUE(r32.ok() && r8.ok()) << r8.status().ToString();
  EXPECT_GE(Cosine(r32->last_hidden_state, r8->last_hidden_state), 0.999);
  EXPECT_NE(r32->last_hidden_state, r8->last_hidden_state);
  // The Linear weights (N x K, every N a multiple of 16 here) go from 4 bytes a value to
  // 1, plus an FP32 scale and an int32 column sum per output channel.
  const int64_t H = 128, I = 512, L = 2;
  const int64_t linear = L * (3 * H * H + H * H + 2 * H * I) + H * H;  // with the pooler
  const int64_t channels = L * (3 * H + H + I + H) + H;
  EXPECT_EQ(f32->memory().weight_bytes - i8->memory().weight_bytes, linear * 3 - channels * 8);
}

TEST_F(BertEngineTest, Int8StaysCloseToFp32OnEveryMicroKernelVariant) {
  // The host picks one variant; the others (AVX2's 7-bit weights, the 8-lane
  // dequantization) must hold the same bar where other CPUs pick them.
  auto f32 = Load(DType::kF32);
  ASSERT_NE(f32, nullptr);
  BatchInput in = Inputs(2, 64);
  auto r32 = f32->Forward(in, {});
  ASSERT_TRUE(r32.ok());
  for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) {
    ScopedInt8MicroKernels forced(v);
    auto i8 = Load(DType::kI8);
    ASSERT_NE(i8, nullptr);
    auto r8 = i8->Forward(in, {});
    ASSERT_TRUE(r8.ok()) << v.isa;
    const double cos = Cosine(r32->last_hidden_state, r8->last_hidden_state);
    std::cout << "INT8 " << v.isa << ": cosine " << cos << " to FP32\n";
    EXPECT_GE(cos, 0.999) << v.isa;
  }
}

// INT8 activations quantized by the op that produces them (the LayerNorms, the GELU
// Linear) give the outputs each Linear quantizing its own FP32 input gives, bit for bit,
// on every INT8 variant, for a padded batch (pooler and hidden states too) and a packed one.
TEST_F(BertEngineTest, Int8QuantizedInTheProducingOpGivesTheSameOutputsBitForBit) {
  BatchInput padded = Inputs(3, 37);
  padded.attention_mask.assign(3 * 37, 1);
  for (int64_t t = 30; t < 37; ++t) padded.attention_mask[37 + t] = 0;  // sample 1 padded
  const std::vector<int64_t> lens = {5, 40, 1};
  BatchInput packed{3, 40, BenchInputIds(29, 1, 46, 30522), {}, {}, lens};
  for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) {
    ScopedInt8MicroKernels forced(v);
    auto e = Load(DType::kI8);
    ASSERT_NE(e, nullptr);
    ASSERT_TRUE(e->model().quantizes_in_producer()) << v.isa;
    for (const BatchInput* in : {&padded, &packed}) {
      e->model().set_quantize_in_producer(true);
      auto fused = e->Forward(*in, {.pooler = in->seq_lens.empty(), .hidden_states = true});
      e->model().set_quantize_in_producer(false);
      ASSERT_FALSE(e->model().quantizes_in_producer());
      auto own = e->Forward(*in, {.pooler = in->seq_lens.empty(), .hidden_states = true});
      ASSERT_TRUE(fused.ok() && own.ok()) << v.isa << ": " << fused.status().ToString() << own.status().ToString();
      ExpectSameOutputs(*fused, *own, v.isa);
      EXPECT_FALSE(fused->last_hidden_state.empty());
    }
  }
}

// A batch run in row blocks (each block of samples or sequences through every layer, its
// outputs copied into the whole batch's) gives the unblocked outputs bit for bit, in every
// precision and on every INT8 variant: padded (blocks of 2, 2 and 1 samples; pooler and
// hidden states too) and packed (blocks of 45 and 43 tokens).
TEST_F(BertEngineTest, RowBlocksGiveTheWholeBatchOutputsBitForBit) {
  BatchInput padded = Inputs(5, 37);
  padded.attention_mask.assign(5 * 37, 1);
  for (int64_t t = 30; t < 37; ++t) padded.attention_mask[2 * 37 + t] = 0;  // sample 2 padded
  const std::vector<int64_t> lens = {5, 40, 1, 30, 12};
  BatchInput packed{5, 40, BenchInputIds(29, 1, 88, 30522), {}, {}, lens};
  auto check = [&](BertEngine& e, const std::string& what) {
    for (const BatchInput* in : {&padded, &packed}) {
      const bool is_packed = !in->seq_lens.empty();
      const ForwardOptions fo{.pooler = !is_packed, .hidden_states = true};
      e.model().set_row_block(0);
      auto whole = e.Forward(*in, fo);
      e.model().set_row_block(is_packed ? 45 : 2 * 37 + 5);
      auto up = e.model().Upload(*in);
      ASSERT_TRUE(up.ok()) << up.status().ToString();
      EXPECT_EQ(up->blocks.size(), is_packed ? 2u : 3u) << what;
      EXPECT_EQ(up->packed(), is_packed) << what;
      auto blocked = e.Forward(*in, fo);
      e.model().set_row_block(-1);
      ASSERT_TRUE(whole.ok() && blocked.ok()) << what << ": " << whole.status().ToString() << blocked.status().ToString();
      EXPECT_FALSE(whole->last_hidden_state.empty());
      ExpectSameOutputs(*whole, *blocked, what + (is_packed ? " packed" : " padded"));
      EXPECT_EQ(whole->offsets, blocked->offsets) << what;
    }
  };
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    auto e = Load(t);
    ASSERT_NE(e, nullptr);
    check(*e, std::string(DTypeName(t)));
  }
  for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) {
    ScopedInt8MicroKernels forced(v);
    auto e = Load(DType::kI8);
    ASSERT_NE(e, nullptr);
    check(*e, std::string("int8 ") + v.isa);
  }
}

// ForwardMemory's device bytes bound what a forward allocates beyond the weights, and
// say less where the batch runs in row blocks (one block's activations alive at a time),
// within 2x of the measured peak either way: FP32, FP16, BF16 (on AVX2 the first forward
// grows the workspace its 16-bit weights are widened into) and INT8, hidden states or not,
// padded and packed.
TEST_F(BertEngineTest, ForwardMemoryBoundsTheMeasuredPeakWithOrWithoutRowBlocks) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8}) {
    auto e = Load(t);
    ASSERT_NE(e, nullptr);
    for (bool hidden : {false, true}) {
      const ForwardOptions fo{.pooler = false, .hidden_states = hidden};
      const BatchInput in = Inputs(24, 64);
      double need[2], peak[2];
      for (int blocked = 0; blocked < 2; ++blocked) {
        e->model().set_row_block(blocked ? 4 * 64 : 0);
        auto n = e->ForwardMemory(24, 64, fo);
        ASSERT_TRUE(n.ok()) << n.status().ToString();
        need[blocked] = n->device;
        e->ResetPeakMemory();
        const int64_t before = e->memory().live_bytes;
        auto out = e->Forward(in, fo);
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        peak[blocked] = static_cast<double>(e->memory().peak_bytes - before);
      }
      const std::string what = std::string(DTypeName(t)) + (hidden ? " with hidden states" : "");
      for (int b = 0; b < 2; ++b) {
        EXPECT_GE(need[b], peak[b]) << what << (b ? " blocked" : " whole");
        EXPECT_LE(need[b], 2 * peak[b]) << what << (b ? " blocked" : " whole") << ": " << need[b] << " bytes said, " << peak[b] << " measured";
      }
      EXPECT_LT(need[1], need[0]) << what;
      EXPECT_LT(peak[1], peak[0]) << what;
    }
    // Packed, in blocks of at most 128 rows: 40 | 200 (longer, alone) | 16 + 90 | 60. The
    // bound takes the longest sequence's rows.
    const std::vector<int64_t> lens = {40, 200, 16, 90, 60};
    const BatchInput packed{5, 200, BenchInputIds(3, 1, 406, 30522), {}, {}, lens};
    double need[2], peak[2];
    for (int blocked = 0; blocked < 2; ++blocked) {
      e->model().set_row_block(blocked ? 128 : 0);
      auto n = e->ForwardMemory(packed, {});
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      need[blocked] = n->device;
      e->ResetPeakMemory();
      const int64_t before = e->memory().live_bytes;
      ASSERT_TRUE(e->Forward(packed, {}).ok());
      peak[blocked] = static_cast<double>(e->memory().peak_bytes - before);
      EXPECT_GE(need[blocked], peak[blocked]) << DTypeName(t) << " packed" << (blocked ? " blocked" : "");
      EXPECT_LE(need[blocked], 2 * peak[blocked]) << DTypeName(t) << " packed" << (blocked ? " blocked" : "");
    }
    EXPECT_LT(need[1], need[0]) << DTypeName(t) << " packed";
    // A few tokens: the INT8 codes' rows are padded to whole 16-row tiles.
    for (const int64_t seq : {int64_t{1}, int64_t{5}, int64_t{17}}) {
      auto n = e->ForwardMemory(1, seq, {});
      ASSERT_TRUE(n.ok());
      e->ResetPeakMemory();
      const int64_t before = e->memory().live_bytes;
      ASSERT_TRUE(e->Forward(Inputs(1, seq), {}).ok());
      const double peak = static_cast<double>(e->memory().peak_bytes - before);
      EXPECT_GE(n->device, peak) << DTypeName(t) << " 1 x " << seq;
      EXPECT_LE(n->device, 4 * peak) << DTypeName(t) << " 1 x " << seq;
    }
  }
}

// The CPU runs a batch beyond its caches in row blocks sized for the model's widest
// activation (the tiny model's intermediate: 512 FP32 a row), and TIERSCOPE_ROW_BLOCK sets
// them ("off": none) where no option does, a bad value being a one-line error.
TEST_F(BertEngineTest, CpuSplitsABigBatchIntoRowBlocksAndTheEnvironmentSetsThem) {
  ScopedEnv unset("TIERSCOPE_ROW_BLOCK", nullptr);
  auto e = Load(DType::kF32);
  ASSERT_NE(e, nullptr);
  const int64_t rows = e->model().row_block_rows();
  EXPECT_EQ(rows, CpuRowBlockRows(2, 512 * 4, e->model().linear_weight_bytes()));
  BatchInput big = Inputs(3 * rows / 64 + 1, 64);
  auto up = e->model().Upload(big);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(static_cast<int64_t>(up->blocks.size()), (big.batch + rows / 64 - 1) / (rows / 64));
  auto small = e->model().Upload(Inputs(2, 64));
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(small->blocks.empty());

  std::unique_ptr<BertEngine> off, fixed, option;
  {
    ScopedEnv env("TIERSCOPE_ROW_BLOCK", "off");
    off = Load(DType::kF32);
  }
  {
    ScopedEnv env("TIERSCOPE_ROW_BLOCK", "128");
    fixed = Load(DType::kF32);
  }
  {
    ScopedEnv env("TIERSCOPE_ROW_BLOCK", "not-read");  // the option wins, and the variable is not parsed
    EngineOptions o;
    o.threads = 2;
    o.row_block = "256";
    auto l = BertEngine::Load(*dir_, o);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    option = std::move(l).value();
  }
  EXPECT_EQ(option->model().row_block_rows(), 256);
  ASSERT_NE(off, nullptr);
  ASSERT_NE(fixed, nullptr);
  EXPECT_EQ(off->model().row_block_rows(), 0);
  EXPECT_EQ(fixed->model().row_block_rows(), 128);
  auto none = off->model().Upload(big);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->blocks.empty());

  ScopedEnv env("TIERSCOPE_ROW_BLOCK", "lots");
  EngineOptions o;
  o.threads = 2;
  auto bad = BertEngine::Load(*dir_, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TIERSCOPE_ROW_BLOCK=lots"), std::string::npos) << bad.status().ToString();
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);
}

// An INT8 run's attention computes in BF16 where the BF16 dot kernels run, in FP32 where
// they do not (the fp32 variant, forced): both stay within the INT8 bar of FP32.
TEST_F(BertEngineTest, Int8WithBf16OrFp32AttentionStaysCloseToFp32OnEveryBf16Variant) {
  auto f32 = Load(DType::kF32);
  ASSERT_NE(f32, nullptr);
  BatchInput in = Inputs(2, 64);
  auto r32 = f32->Forward(in, {});
  ASSERT_TRUE(r32.ok());
  std::vector<float> bf16_attention, fp32_attention;
  for (const Bf16Kernels& v : AvailableBf16Kernels()) {
    ScopedBf16Kernels forced(v);
    auto i8 = Load(DType::kI8);
    ASSERT_NE(i8, nullptr);
    auto r8 = i8->Forward(in, {});
    ASSERT_TRUE(r8.ok()) << v.isa;
    (v.dot() ? bf16_attention : fp32_attention) = r8->last_hidden_state;
    const double cos = Cosine(r32->last_hidden_state, r8->last_hidden_state);
    std::cout << "INT8 with " << (v.dot() ? "BF16" : "FP32") << " attention (" << v.isa << "): cosine " << cos
              << " to FP32\n";
    EXPECT_GE(cos, 0.999) << v.isa;
  }
  // Where the dot kernels run, the INT8 run's attention is theirs: not FP32's outputs.
  if (!bf16_attention.empty()) EXPECT_NE(bf16_attention, fp32_attention);
}

TEST_F(BertEngineTest, Fp32AndSixteenBitRunsAgreeOnEveryMicroKernelVariant) {
  // The host picks one FP32 micro-kernel variant; the others (AVX2 on an AVX-512 host,
  // the scalar fallback) carry FP32 and the 16-bit-weight runs where other CPUs pick them.
  // BF16 on its "fp32" variant here (weights widened on these kernels), as on CPUs
  // without BF16 arithmetic; its dot kernels are the next test's.
  ScopedBf16Kernels widen(AvailableBf16Kernels().back());
  ASSERT_STREQ(AvailableBf16Kernels().back().isa, "fp32");
  const BatchInput in = Inputs(2, 33);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    auto chosen = Load(t);
    ASSERT_NE(chosen, nullptr);
    auto want = chosen->Forward(in, {});
    ASSERT_TRUE(want.ok());
    for (const MicroKernelVariant& v : AvailableMicroKernels()) {
      ScopedMicroKernels forced(v.kernels);
      auto e = Load(t);
      ASSERT_NE(e, nullptr);
      auto got = e->Forward(in, {});
      ASSERT_TRUE(got.ok()) << v.isa << ": " << got.status().ToString();
      ASSERT_EQ(got->last_hidden_state.size(), want->last_hidden_state.size());
      for (size_t i = 0; i < got->last_hidden_state.size(); ++i) {
        // FP32 sums in another order (and, for 16-bit runs, the same widened weights).
        ASSERT_NEAR(got->last_hidden_state[i], want->last_hidden_state[i], 1e-4)
            << v.isa << " " << DTypeName(t) << " at " << i;
      }
    }
  }
}

TEST_F(BertEngineTest, Bf16OnEveryBf16VariantStaysWithinItsCosineOfFp32) {
  // BF16 arithmetic (AVX512_BF16's dot kernels: activations rounded to BF16 between ops,
  // probabilities too) and the widened "fp32" variant, each forced, against FP32; an odd
  // sequence length and padding reach the kernels' odd-key and masked paths.
  BatchInput in = Inputs(3, 37);
  in.attention_mask.assign(3 * 37, 1);
  for (int64_t s = 30; s < 37; ++s) in.attention_mask[2 * 37 + s] = 0;
  auto f32 = Load(DType::kF32);
  ASSERT_NE(f32, nullptr);
  auto want = f32->Forward(in, {});
  ASSERT_TRUE(want.ok());
  std::string tested;
  for (const Bf16Kernels& v : AvailableBf16Kernels()) {
    ScopedBf16Kernels forced(v);
    auto e = Load(DType::kBF16);
    ASSERT_NE(e, nullptr);
    auto got = e->Forward(in, {});
    ASSERT_TRUE(got.ok()) << v.isa << ": " << got.status().ToString();
    const double cos = Cosine(want->last_hidden_state, got->last_hidden_state);
    std::cout << "BF16 " << v.isa << ": cosine " << cos << " to FP32\n";
    EXPECT_GE(cos, 0.999) << v.isa;
    tested += std::string(tested.empty() ? "" : ", ") + v.isa;
  }
  RecordProperty("bf16_variants", tested);
}

TEST_F(BertEngineTest, Int8OffTheCpuIsRefusedBeforeAnythingLoads) {
  EngineOptions o;
  o.dtype = DType::kI8;
  o.device = "cuda";
  auto e = BertEngine::Load("/nonexistent-model-dir", o);  // refused before the directory is read
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("--dtype int8 (batch-int8) runs on the CPU only"), std::string::npos)
      << e.status().message();
}

TEST_F(BertEngineTest, FlopsPerSampleSumsTheCostModelOfEveryOp) {
  auto e = Load(DType::kF32);
  ASSERT_NE(e, nullptr);
  // The tiny model at 128 tokens: the GEMMs (2 x 128 x (384 + 128 + 512) x 128 + 2 x 128
  // x 128 x 512 a layer) and attention (4 x 128^2 x 128 a layer) are DESIGN.md's 117.4
  // MFLOP; biases, GELU (8 a value), LayerNorms (8 a value) and the embedding sum (2 a
  // value) add the rest.
  const double S = 128, H = 128, I = 512;
  const double gemm = 2 * S * (3 * H * H + H * H + H * I + I * H);
  const double attention = 4 * S * S * H;
  const double extras = S * (3 * H + H + I + H) + 8 * S * I + 2 * 8 * S * H;
  const double want = 2 * (gemm + attention + extras) + 2 * S * H + 8 * S * H;
  EXPECT_DOUBLE_EQ(e->model().FlopsPerSample(128), want);
  EXPECT_NEAR(2 * (gemm + attention), 117.44e6, 0.01e6);
}

TEST_F(BertEngineTest, HiddenStatesAndPoolerHaveHuggingFaceShapes) {
  auto e = Load(DType::kF32);
  ASSERT_NE(e, nullptr);
  ForwardOptions fo;
  fo.pooler = true;
  fo.hidden_states = true;
  auto r = e->Forward(Inputs(3, 10), fo);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->hidden_states.size(), 3u);  // embeddings + 2 layers
  EXPECT_EQ(r->hidden_states.back(), r->last_hidden_state);
  ASSERT_EQ(r->pooler_output.size(), 3u * 128);
  for (float v : r->pooler_output) EXPECT_LE(std::fabs(v), 1.0f);
}

TEST_F(BertEngineTest, InvalidInputsAreRejectedWithTheirPosition) {
  auto e = Load(DType::kF32);
  ASSERT_NE(e, nullptr);
  BatchInput bad_id = Inputs(2, 4);
  bad_id.input_ids[5] = 30522;
  auto s = e->Validate(bad_id);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(Contains(s.message(), "input_ids[1][1] = 30522")) << s.message();
  EXPECT_TRUE(Contains(e->Validate(Inputs(1, 513)).message(), "max_position_embeddings 512"));
  BatchInput bad_type = Inputs(1, 4);
  bad_type.token_type_ids = {0, 0, 2, 0};
  EXPECT_TRUE(Contains(e->Validate(bad_type).message(), "token_type_ids[0][2] = 2"));
  BatchInput bad_mask = Inputs(1, 4);
  bad_mask.attention_mask = {1, 1, 2, 0};
  EXPECT_FALSE(e->Validate(bad_mask).ok());
  BatchInput short_ids = Inputs(1, 4);
  short_ids.input_ids.pop_back();
  EXPECT_FALSE(e->Forward(short_ids, {}).ok());
}

TEST_F(BertEngineTest, TruncatedWeightsFileFailsToLoadNamingTheFile) {
  testing::TempDir dir;
  for (const char* f : {"config.json", "vocab.txt"}) {
    testing::WriteBytes(dir.file(f), testing::ReadBytes(*dir_ + "/" + f));
  }
  std::string weights = testing::ReadBytes(*dir_ + "/model.safetensors");
  testing::WriteBytes(dir.file("model.safetensors"), weights.substr(0, weights.size() / 2));
  auto e = BertEngine::Load(dir.path(), {});
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(Contains(e.status().message(), dir.file("model.safetensors")));
}

}  // namespace
}  // namespace tierscope
