// The op models: each family's FLOPs and bytes against a hand count, and no number for
// shapes that do not fit the op.
#include "analysis/perf_model.h"

#include <gtest/gtest.h>

namespace tierscope {
namespace {

OpInputs In(std::string args) {
  std::optional<OpInputs> in = ReadOpInputs(args);
  EXPECT_TRUE(in.has_value()) << args;
  return in.value_or(OpInputs{});
}

OpWork Work(const char* name, const std::string& args) {
  std::optional<OpWork> w = ModelOp(name, In(args));
  EXPECT_TRUE(w.has_value()) << name << " " << args;
  return w.value_or(OpWork{});
}

TEST(PerfModel, GemmFamilyCountsTwoFlopsAMultiplyAddAndTheBias) {
  // addmm(bias[512], A[141, 512], B[512, 512]) in BF16: 2MNK + MN; A, B, C and the bias.
  const OpWork addmm = Work("aten::addmm", R"("Input Dims": [[512], [141, 512], [512, 512], [], []],
      "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])");
  EXPECT_EQ(addmm.category, "GEMM");
  EXPECT_DOUBLE_EQ(addmm.flops, 2.0 * 141 * 512 * 512 + 141 * 512);
  EXPECT_DOUBLE_EQ(addmm.bytes, 2.0 * (141 * 512 + 512 * 512 + 141 * 512 + 512));
  EXPECT_TRUE(addmm.matrix);
  const OpWork bmm = Work("aten::bmm", R"("Input Dims": [[8, 64, 32], [8, 32, 16]], "Input type": ["float", "float"])");
  EXPECT_DOUBLE_EQ(bmm.flops, 8 * 2.0 * 64 * 16 * 32);
  EXPECT_DOUBLE_EQ(bmm.bytes, 8 * 4.0 * (64 * 32 + 32 * 16 + 64 * 16));
  const OpWork linear = Work("aten::linear", R"("Input Dims": [[2, 10, 64], [128, 64], [128]],
      "Input type": ["float", "float", "float"])");
  EXPECT_DOUBLE_EQ(linear.flops, 2.0 * 20 * 128 * 64 + 20 * 128);
  const OpWork matmul = Work("aten::matmul", R"("Input Dims": [[4, 8, 16], [16, 32]], "Input type": ["float", "float"])");
  EXPECT_DOUBLE_EQ(matmul.flops, 2.0 * 32 * 32 * 16);
  // Inner sizes that do not match: no number.
  EXPECT_FALSE(ModelOp("aten::mm", In(R"("Input Dims": [[4, 8], [9, 2]], "Input type": ["float", "float"])")));
  EXPECT_FALSE(ModelOp("aten::mm", In(R"("Input Dims": [[4, 8], [8, 2]], "Input type": ["mystery", "float"])")));
}

TEST(PerfModel, AttentionCountsBothProductsHalvesCausalAndReadsGqaHeads) {
  const std::string q = R"([2, 16, 128, 64])", kv = R"([2, 4, 128, 64])";
  const OpWork full = Work("aten::_scaled_dot_product_flash_attention",
                           R"("Input Dims": [)" + q + ", " + kv + ", " + kv + R"(, [], [], [], []],
      "Input type": ["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar", "Scalar", "Scalar"],
      "Concrete Inputs": ["", "", "", "0.", "False", "False", ""])");
  EXPECT_EQ(full.category, "SDPA_fwd");
  EXPECT_DOUBLE_EQ(full.flops, 2.0 * 16 * 4 * 128 * 128 * 64);
  EXPECT_DOUBLE_EQ(full.bytes, 2.0 * (2 * 16 * 128 * 64 * 2 + 2 * 4 * 128 * 64 * 2));
  const OpWork causal = Work("aten::_scaled_dot_product_flash_attention",
                             R"("Input Dims": [)" + q + ", " + kv + ", " + kv + R"(, [], [], [], []],
      "Input type": ["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar", "Scalar", "Scalar"],
      "Concrete Inputs": ["", "", "", "0.", "True", "False", ""])");
  EXPECT_DOUBLE_EQ(causal.flops, full.flops / 2);
  // FP32 attention moves 4 bytes an element (TraceLens counts 2 whatever the dtype).
  const OpWork f32 = Work("aten::_scaled_dot_product_efficient_attention",
                          R"("Input Dims": [[1, 2, 8, 4], [1, 2, 8, 4], [1, 2, 8, 4], [], [], [], [], []],
      "Input type": ["float", "float", "float", "", "Scalar", "Scalar", "Scalar", ""],
      "Concrete Inputs": ["", "", "", "", "True", "0.", "False", ""])");
  EXPECT_DOUBLE_EQ(f32.bytes, 4.0 * 4 * 64);
  // Query heads not a multiple of the key heads: not attention as modelled.
  EXPECT_FALSE(ModelOp("aten::_scaled_dot_product_flash_attention",
                       In(R"("Input Dims": [[1, 6, 8, 4], [1, 4, 8, 4], [1, 4, 8, 4]],
      "Input type": ["float", "float", "float"])")));
}

TEST(PerfModel, NormsElementwiseReductionsSoftmaxEmbeddingConvolution) {
  const OpWork ln = Work("aten::native_layer_norm", R"("Input Dims": [[1, 141, 512], [], [512], [512], []],
      "Input type": ["c10::BFloat16", "", "c10::BFloat16", "c10::BFloat16", "Scalar"],
      "Concrete Inputs": ["", "[512]", "", "", "1e-12"])");
  EXPECT_DOUBLE_EQ(ln.flops, 5.0 * 72192 + 6 * 512);  // TraceLens's count
  EXPECT_DOUBLE_EQ(ln.bytes, 2.0 * (2 * 72192 + 6 * 512));
  const OpWork add = Work("aten::add", R"("Input Dims": [[4, 8], [8], []], "Input type": ["float", "c10::Half", "Scalar"])");
  EXPECT_DOUBLE_EQ(add.flops, 32);
  EXPECT_DOUBLE_EQ(add.bytes, 32 * 4.0 + 8 * 2.0 + 32 * 4.0);
  const OpWork sum = Work("aten::sum", R"("Input Dims": [[4, 8, 16], [], [], []],
      "Input type": ["float", "", "Scalar", ""], "Concrete Inputs": ["", "[-1]", "False", ""])");
  EXPECT_DOUBLE_EQ(sum.bytes, 4.0 * (512 + 32));  // the real output, 4 x 8
  const OpWork all = Work("aten::sum", R"("Input Dims": [[4, 8]], "Input type": ["float"], "Concrete Inputs": [""])");
  EXPECT_DOUBLE_EQ(all.bytes, 4.0 * (32 + 1));
  const OpWork softmax = Work("aten::_softmax", R"("Input Dims": [[2, 10], [], []], "Input type": ["c10::Half", "Scalar",
      "Scalar"], "Concrete Inputs": ["", "-1", "True"])");
  EXPECT_DOUBLE_EQ(softmax.bytes, 20 * 2.0 + 20 * 4.0);  // half in, float out
  const OpWork emb = Work("aten::embedding", R"("Input Dims": [[30522, 128], [2, 16]], "Input type": ["float", "long int"])");
  EXPECT_DOUBLE_EQ(emb.bytes, 2 * 32 * 128 * 4.0 + 32 * 8.0);
  EXPECT_DOUBLE_EQ(emb.flops, 0);
  // conv2d 3x3, stride 1, padding 1, on [1, 3, 8, 8] to 16 channels, with a bias.
  const OpWork conv = Work("aten::convolution", R"("Input Dims": [[1, 3, 8, 8], [16, 3, 3, 3], [16], [], [], [], [], [], []],
      "Input type": ["float", "float", "float", "", "", "", "Scalar", "", "Scalar"],
      "Concrete Inputs": ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])");
  EXPECT_DOUBLE_EQ(conv.flops, 16 * 64 * (2.0 * 3 * 9 + 1));
  EXPECT_DOUBLE_EQ(conv.bytes, 4.0 * (192 + 432 + 16 + 16 * 64));
  EXPECT_FALSE(ModelOp("aten::convolution",
                       In(R"("Input Dims": [[1, 3, 8, 8], [16, 3, 3, 3], [16], [], [], [], [], [], []],
      "Input type": ["float", "float", "float", "", "", "", "Scalar", "", "Scalar"],
      "Concrete Inputs": ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"])")));  // transposed
  // cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark, ...): the
  // 7x7 stride-2 pad-3 stem of a ResNet on 224 x 224 gives 112 x 112 outputs, no bias.
  const OpWork stem = Work("aten::cudnn_convolution", R"("Input Dims": [[2, 3, 224, 224], [64, 3, 7, 7], [], [], [], [],
      [], [], []], "Input type": ["c10::Half", "c10::Half", "", "", "", "Scalar", "Scalar", "Scalar", "Scalar"],
      "Concrete Inputs": ["", "", "[3, 3]", "[2, 2]", "[1, 1]", "1", "True", "False", "True"])");
  EXPECT_DOUBLE_EQ(stem.flops, 2.0 * 64 * 112 * 112 * 2 * 3 * 49);
  // No Concrete Inputs (an older trace): stride and padding unknown, no number.
  EXPECT_FALSE(ModelOp("aten::convolution", In(R"("Input Dims": [[1, 3, 8, 8], [16, 3, 3, 3], [16]],
      "Input type": ["float", "float", "float"])")));
}

TEST(PerfModel, MalformedInputsGiveNoModel) {
  EXPECT_FALSE(ReadOpInputs(R"("Input type": ["float"])"));
  EXPECT_FALSE(ReadOpInputs(R"("Input Dims": [[-1, 4]])"));
  EXPECT_FALSE(ReadOpInputs(R"("Input Dims": [[1e99]])"));
  EXPECT_FALSE(ReadOpInputs(R"("Input Dims": "[[1]]")"));
  EXPECT_FALSE(ModelOp("aten::unknown_op", In(R"("Input Dims": [[4]], "Input type": ["float"])")));
  EXPECT_FALSE(ModelOp("aten::addmm", In(R"("Input Dims": [[4]], "Input type": ["float"])")));
  EXPECT_EQ(ElementBytes("c10::Float8_e4m3fn"), 1);
  EXPECT_EQ(ElementBytes("bool"), 1);
  EXPECT_EQ(ElementBytes("Scalar"), 0);
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

TEST(PerfModel, GroupedGemmCountsTheWholeProblemOnce) {
  // 2-d x 3-d: 96 routed tokens over 8 experts, K 64, N 128: 2·96·128·64 FLOPs, all experts read.
  const OpWork g = Work("aten::_grouped_mm", R"("Input Dims": [[96, 64], [8, 64, 128], [8]],
      "Input type": ["c10::BFloat16", "c10::BFloat16", "int"])");
  EXPECT_EQ(g.category, "GEMM");
  EXPECT_DOUBLE_EQ(g.flops, 2.0 * 96 * 128 * 64);
  EXPECT_DOUBLE_EQ(g.bytes, 2.0 * (96 * 64 + 8 * 64 * 128 + 96 * 128));
  // 3-d x 3-d: G separate problems.
  EXPECT_DOUBLE_EQ(Work("aten::_grouped_mm", R"("Input Dims": [[4, 16, 32], [4, 32, 8]],
      "Input type": ["float", "float"])").flops, 4 * 2.0 * 16 * 8 * 32);
  // Scaled (FP8 in, BF16 out), offs at input 4.
  const OpWork s = Work("aten::_scaled_grouped_mm", R"("Input Dims": [[96, 64], [8, 64, 128], [96], [8, 128], [8]],
      "Input type": ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "int"])");
  EXPECT_DOUBLE_EQ(s.bytes, 96 * 64 + 8 * 64 * 128 + 2.0 * 96 * 128);
  EXPECT_EQ(s.dtype, "c10::Float8_e4m3fn");
  EXPECT_FALSE(ModelOp("aten::_grouped_mm", In(R"("Input Dims": [[96, 64], [8, 65, 128]],
      "Input type": ["float", "float"])")));
}

TEST(PerfModel, AttentionBackwardIsTorchsFiveProductsAndReadsItsOwnArgumentOrder) {
  // flash backward (grad_out, q, k, v, out, lse, cum_q, cum_k, max_q, max_k, dropout, is_causal).
  const char* bwd = R"("Input Dims": [[2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64],
      [2, 8, 128, 64], [2, 8, 128], [], [], [], [], [], [], [], [], []],
      "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float",
                     "", "", "Scalar", "Scalar", "Scalar", "Scalar", "", "", ""],
      "Concrete Inputs": ["", "", "", "", "", "", "", "", "128", "128", "0.", "True", "", "", ""])";
  const OpWork b = Work("aten::_scaled_dot_product_flash_attention_backward", bwd);
  const double forward = 2 * 8 * (2.0 * 128 * 128 * 64 * 2) / 2;  // causal
  EXPECT_EQ(b.category, "SDPA_bwd");
  EXPECT_DOUBLE_EQ(b.flops, 2.5 * forward);  // scores recomputed, dP, dV, dQ, dK
  EXPECT_DOUBLE_EQ(b.bytes, 2.0 * (2 * 3 * 2 * 8 * 128 * 64 + 2 * 2 * 8 * 128 * 64));
  EXPECT_NE(b.params.find("causal"), std::string::npos);
  // xformers' efficient attention: causal from custom_mask_type (input 9), [B, N, H, d].
  const OpWork e = Work("aten::_efficient_attention_forward", R"("Input Dims": [[2, 128, 8, 64], [2, 128, 8, 64],
      [2, 128, 8, 64], [], [], [], [], [], [], []],
      "Input type": ["float", "float", "float", "", "", "", "Scalar", "Scalar", "Scalar", "Scalar"],
      "Concrete Inputs": ["", "", "", "", "", "", "", "", "0.", "1"])");
  EXPECT_DOUBLE_EQ(e.flops, forward);
  // Causality not recorded (no Concrete Inputs): no number rather than full attention's.
  EXPECT_FALSE(ModelOp("aten::_scaled_dot_product_flash_attention_backward", In(R"("Input Dims": [[2, 8, 128, 64],
      [2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64]], "Input type": ["float", "float", "float", "float"])")));
  // A sliding window (flash_attn's window_size_left, input 6) is local attention: no number.
  EXPECT_FALSE(ModelOp("flash_attn::_flash_attn_forward", In(R"("Input Dims": [[2, 128, 8, 64], [2, 128, 8, 64],
      [2, 128, 8, 64], [], [], [], [], []], "Input type": ["float", "float", "float", "Scalar", "Scalar", "Scalar",
      "Scalar", "Scalar"], "Concrete Inputs": ["", "", "", "0.", "0.125", "False", "64", "0"])")));
}

TEST(PerfModel, VarlenAttentionOnlyWhereTheShapesDetermineTheLengths) {
  // flash_attn varlen: q [T, H, d], cu_seqlens [B + 1], max lengths 5 and 6.
  const auto varlen = [](const char* total, const char* max_q) {
    return std::string(R"("Input Dims": [[)") + total + R"(, 8, 64], [)" + total + R"(, 2, 64], [)" + total +
           R"(, 2, 64], [5], [5], [], [], [], [], []],
      "Input type": ["c10::Half", "c10::Half", "c10::Half", "int", "int", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"],
      "Concrete Inputs": ["", "", "", "", "", ")" + max_q + R"(", ")" + max_q + R"(", "0.", "0.125", "False"])";
  };
  // Four sequences of 256: exact, with GQA (8 query heads on 2 key heads).
  const OpWork w = Work("flash_attn::_flash_attn_varlen_forward", varlen("1024", "256"));
  EXPECT_DOUBLE_EQ(w.flops, 4 * 8 * (2.0 * 256 * 256 * 64 * 2));
  EXPECT_NE(w.params.find("varlen"), std::string::npos);
  // 1000 tokens with a maximum of 256: the lengths are not recorded, so no number.
  EXPECT_FALSE(ModelOp("flash_attn::_flash_attn_varlen_forward", In(varlen("1000", "256"))));
}

TEST(PerfModel, ConvolutionBackwardCountsEachGradientItsMaskAsksFor) {
  // convolution_backward(grad_out [8,16,30,30], input [8,3,32,32], weight [16,3,3,3], bias_sizes,
  // stride 1, padding 0, dilation 1, transposed, output_padding, groups 1, mask).
  const auto conv_bwd = [](const char* mask) {
    return std::string(R"("Input Dims": [[8, 16, 30, 30], [8, 3, 32, 32], [16, 3, 3, 3], [], [], [], [], [], [], [], []],
      "Input type": ["float", "float", "float", "", "", "", "", "Scalar", "", "Scalar", ""],
      "Concrete Inputs": ["", "", "", "[16]", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1", ")") + mask + R"("])";
  };
  const double outputs = 8.0 * 16 * 30 * 30, macs = outputs * 3 * 9;
  const OpWork both = Work("aten::convolution_backward", conv_bwd("[True, True, True]"));
  EXPECT_EQ(both.category, "CONV_bwd");
  EXPECT_DOUBLE_EQ(both.flops, 4 * macs + outputs);
  const OpWork weight_only = Work("aten::convolution_backward", conv_bwd("[False, True, False]"));
  EXPECT_DOUBLE_EQ(weight_only.flops, 2 * macs);
  EXPECT_DOUBLE_EQ(weight_only.bytes, 4 * (outputs + 8.0 * 3 * 32 * 32 + 16 * 3 * 9));
  EXPECT_FALSE(ModelOp("aten::convolution_backward", In(conv_bwd("[False, False, False]"))));
  EXPECT_FALSE(ModelOp("aten::convolution_backward", In(conv_bwd("[True]"))));
}

TEST(PerfModel, AnOpsCategoryFollowsFromItsNameAloneAsItsModelWouldGiveIt) {
  // Each family's own name: the category ModelOp gives the op with shapes.
  EXPECT_EQ(OpCategory("aten::addmm"), "GEMM");
  EXPECT_EQ(OpCategory("aten::_grouped_mm"), "GEMM");
  EXPECT_EQ(OpCategory("aten::_flash_attention_forward"), "SDPA_fwd");
  EXPECT_EQ(OpCategory("flash_attn::_flash_attn_varlen_backward"), "SDPA_bwd");
  EXPECT_EQ(OpCategory("aten::cudnn_convolution"), "CONV_fwd");
  EXPECT_EQ(OpCategory("aten::convolution_backward"), "CONV_bwd");
  EXPECT_EQ(OpCategory("aten::native_layer_norm"), "NORM_fwd");
  EXPECT_EQ(OpCategory("aten::cudnn_batch_norm"), "NORM_fwd");
  EXPECT_EQ(OpCategory("aten::native_layer_norm_backward"), "NORM_bwd");
  EXPECT_EQ(OpCategory("aten::add_"), "elementwise");
  EXPECT_EQ(OpCategory("aten::threshold_backward"), "elementwise");
  EXPECT_EQ(OpCategory("aten::cumsum"), "reduce");
  EXPECT_EQ(OpCategory("aten::_log_softmax"), "softmax");
  EXPECT_EQ(OpCategory("aten::embedding"), "embedding");
  EXPECT_EQ(OpCategory("aten::max_pool2d_with_indices"), "");
  EXPECT_EQ(OpCategory("my::custom_op"), "");
  // The model agrees where shapes are there: cuDNN's batch norm (training) is modelled too.
  OpInputs in;
  in.dims = {{8, 64, 32, 32}, {64}, {64}, {64}, {64}, {}, {}, {}};
  in.types = {"float", "float", "float", "float", "float", "Scalar", "Scalar", "Scalar"};
  in.concrete = {"", "", "", "", "", "True", "0.1", "1e-05"};
  const std::optional<OpWork> w = ModelOp("aten::cudnn_batch_norm", in);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->category, OpCategory("aten::cudnn_batch_norm"));
}

}  // namespace
}  // namespace tierscope
