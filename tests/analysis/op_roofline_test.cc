// The per-op roofline on built traces: leaf time under the nearest modelled op, a graph's
// replay under its launch, the roof at the op's intensity, and figures above the roof
// flagged as impossible and never concluded from.
#include "analysis/op_roofline.h"

#include <gtest/gtest.h>

#include "trace_builder.h"

namespace tierscope {
namespace {

void Args(Builder& b, const std::string& args) { b.trace().events.back().args = b.trace().strings.Intern(args); }

// aten::linear (ext 1) over aten::addmm (ext 2) launching a GEMM kernel of `kernel_ns`;
// then aten::layer_norm over aten::native_layer_norm, whose own model is used.
Trace Traced(int64_t kernel_ns) {
  Builder b;
  b.trace().device_name = "NVIDIA H100 80GB HBM3";
  b.Op("aten::linear", 0, 100, 1);
  Args(b, R"("Input Dims": [[1024, 1024], [1024, 1024], [1024]], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])");
  b.Op("aten::addmm", 10, 80, 2);
  Args(b, R"("Input Dims": [[1024], [1024, 1024], [1024, 1024], [], []], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])");
  b.Launch("cudaLaunchKernel", "gemm_kernel", 20, 10, 200, kernel_ns, 2);
  b.Op("aten::relu", 300, 10, 3);  // no kernel: not a row
  Args(b, R"("Input Dims": [[1024]], "Input type": ["float"])");
  // A graph replay: kernels with no External id, launched by cudaGraphLaunch.
  b.Launch("cudaGraphLaunch", "graph_kernel", 400, 5, 500, 7000, 0);
  return std::move(b.trace());
}

TEST(OpRoofline, TimeGoesToTheNearestModelledOpAndAGraphToItsLaunch) {
  const Trace t = Traced(100'000);
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const OpRoofline r = AnalyzeOpRoofline(x, std::nullopt);
  ASSERT_TRUE(r.device);
  EXPECT_EQ(r.device->name, "NVIDIA H100 SXM5 80GB");
  ASSERT_EQ(r.rows.size(), 2u);
  const OpRooflineRow& gemm = r.rows[0];
  EXPECT_EQ(gemm.name, "aten::addmm");  // the leaf has a model: its parent linear is not the row
  EXPECT_EQ(gemm.calls, 1);
  EXPECT_DOUBLE_EQ(gemm.kernel_ns, 100'000);
  EXPECT_EQ(gemm.top_kernel, "gemm_kernel");
  const double flops = 2.0 * 1024 * 1024 * 1024 + 1024 * 1024;
  EXPECT_DOUBLE_EQ(gemm.flops, flops);
  // Intensity ~ 340 FLOP/B, above the H100's ridge (989.5 / 3.35 = 295): the compute roof.
  EXPECT_DOUBLE_EQ(gemm.roof_flops, 989.5e12);
  EXPECT_NEAR(gemm.percent_of_roof, 100.0 * flops / 100e-6 / 989.5e12, 1e-9);
  EXPECT_NEAR(gemm.saving_ns, 100'000 - 1e9 * flops / (0.8 * 989.5e12), 1e-6);
  EXPECT_EQ(r.rows[1].name, "cudaGraphLaunch");
  EXPECT_EQ(r.rows[1].category, "graph");
  EXPECT_DOUBLE_EQ(r.attributed_ns, r.kernel_ns);
  const std::optional<Finding> f = RooflineFinding(r);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "roofline");
  EXPECT_NE(f->next_step.find("ncu --clock-control none"), std::string::npos) << f->next_step;
  EXPECT_NE(f->next_step.find("--kernel-name-base demangled -k gemm_kernel -c 1"), std::string::npos) << f->next_step;
}

TEST(OpRoofline, AFigureAboveTheRoofIsImpossibleAndNotConcludedFrom) {
  // The same GEMM in 1 us would be 2,100 TFLOP/s: above the H100's BF16 peak.
  const Trace t = Traced(1'000);
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const OpRoofline r = AnalyzeOpRoofline(x, std::nullopt);
  const OpRooflineRow& gemm = r.rows[1].name == "aten::addmm" ? r.rows[1] : r.rows[0];
  EXPECT_TRUE(gemm.impossible);
  EXPECT_GT(gemm.percent_of_roof, 100);
  EXPECT_EQ(gemm.saving_ns, 0);
  EXPECT_FALSE(RooflineFinding(r));  // nothing else to save: no finding from an impossible row
  const Table table = OpRooflineTable(r);
  bool flagged = false;
  for (const auto& row : table.rows) {
    if (const auto* s = std::get_if<std::string>(&row[8])) flagged |= s->find("IMPOSSIBLE") != std::string::npos;
  }
  EXPECT_TRUE(flagged);
  EXPECT_NE(table.notes.back().find("IMPOSSIBLE figures"), std::string::npos);
}

TEST(OpRoofline, AnUnknownDeviceHasNoRoofUntilASpecIsGiven) {
  Trace t = Traced(100'000);
  t.device_name = "Mystery Accelerator";
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const OpRoofline none = AnalyzeOpRoofline(x, std::nullopt);
  EXPECT_FALSE(none.device);
  EXPECT_NE(none.device_note.find("--device-spec"), std::string::npos);
  EXPECT_EQ(none.rows[0].roof_flops, 0);
  EXPECT_GT(none.rows[0].flops, 0);  // the work is still counted
  const auto spec = ParseDeviceSpec(R"({"name": "Mystery", "bf16": 100, "memory_tbps": 1})", "m.json");
  ASSERT_TRUE(spec.ok());
  const OpRoofline given = AnalyzeOpRoofline(x, *spec);
  EXPECT_DOUBLE_EQ(given.rows[0].roof_flops, 100e12);
  const Table sum = RooflineSumTable(given);
  ASSERT_FALSE(sum.rows.empty());
  EXPECT_EQ(std::get<std::string>(sum.rows[0].back()), "GEMM");
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

TEST(OpRoofline, KernelsNameWorkWithNoShapesAndTheEnginesOwnCountsMeetCalibratedPeaks) {
  Builder b;
  b.trace().device_name = "NVIDIA H100 80GB HBM3";
  // A graph replay of a cuBLAS GEMM: category and dtype from the name, no FLOPs, no roof.
  b.Launch("cudaGraphLaunch", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_cublas", 0, 5, 10, 5000, 0);
  // An op with no shape model whose kernel recorded its own work (tierscope's engine).
  b.Op("tierscope::add_layer_norm", 100, 50, 4);
  b.Launch("cudaLaunchKernel", "cpu_layer_norm_f32_r16", 110, 5, 120, 10'000, 4);
  b.trace().events.back().v0 = 8e6;
  b.trace().events.back().v1 = 16e6;
  // An INT8 run's attention where there is no BF16 arithmetic: FP32 math, its output rows
  // also written as INT8 codes ("_u8out"), so FP32's roof, not INT8's.
  b.Op("tierscope::attention_codes", 200, 50, 6);
  b.Launch("cudaLaunchKernel", "cpu_attn_softmax_f32_u8out_q32", 210, 5, 220, 10'000, 6);
  b.trace().events.back().v0 = 400e6;
  b.trace().events.back().v1 = 1e6;
  const Trace t = std::move(b.trace());
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  DeviceSpec cpu;
  cpu.name = "calibrated";
  cpu.fp32 = cpu.fp32_vector = 1;  // TFLOP/s
  cpu.memory_tbps = 0.032;
  const OpRoofline r = AnalyzeOpRoofline(x, cpu);
  ASSERT_EQ(r.rows.size(), 3u);
  const OpRooflineRow& norm = r.rows[0];
  EXPECT_EQ(norm.name, "tierscope::add_layer_norm");
  EXPECT_TRUE(norm.modelled);
  EXPECT_EQ(norm.params, "recorded by its kernels");
  EXPECT_EQ(norm.category, "NORM_fwd");
  // 16 MB in 10 us is 1.6 TB/s: far above a 32 GB/s memory roof — impossible, not concluded from.
  EXPECT_NEAR(norm.percent_of_roof, 100.0 * 16e6 / 10e-6 / 0.032e12, 1e-6);
  EXPECT_TRUE(norm.impossible);
  // This device has no INT8 peak at all: an INT8 reading would leave the attention no roof.
  const OpRooflineRow& codes = r.rows[1];
  EXPECT_EQ(codes.name, "tierscope::attention_codes");
  EXPECT_EQ(codes.category, "SDPA_fwd");
  EXPECT_DOUBLE_EQ(codes.roof_flops, 1e12);  // 400 FLOP a byte: the FP32 matrix peak
  const OpRooflineRow& graph = r.rows[2];
  EXPECT_EQ(graph.category, "GEMM");
  EXPECT_FALSE(graph.modelled);
  EXPECT_EQ(graph.roof_flops, 0);
  EXPECT_NE(graph.params.find("cuBLAS GEMM bf16 tile 64x64x64"), std::string::npos) << graph.params;
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

TEST(OpRoofline, SplitWorkIsNotLiftedToTheOpAroundIt) {
  // Math-path attention: SDPA (modelled) around bmm (modelled, its own row) and an
  // unmodelled masked_fill. The fill's time stays its own: SDPA's whole FLOPs over the
  // fill's time alone would be a figure far above any roof.
  Builder b;
  b.trace().device_name = "NVIDIA H100 80GB HBM3";
  b.Op("aten::scaled_dot_product_attention", 0, 1000, 1);
  Args(b, R"("Input Dims": [[1, 8, 512, 64], [1, 8, 512, 64], [1, 8, 512, 64], [], [], [], [], []],
      "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "", "Scalar"],
      "Concrete Inputs": ["", "", "", "", "0.", "False", "", "False"])");
  b.Op("aten::bmm", 10, 100, 2);
  Args(b, R"("Input Dims": [[8, 512, 64], [8, 64, 512]], "Input type": ["c10::BFloat16", "c10::BFloat16"])");
  b.Launch("cudaLaunchKernel", "bmm_kernel", 20, 5, 2000, 20'000, 2);
  b.Op("aten::masked_fill", 200, 100, 3);
  b.Launch("cudaLaunchKernel", "fill_kernel", 210, 5, 30'000, 3'000, 3);
  const Trace t = std::move(b.trace());
  const OpRoofline r = AnalyzeOpRoofline(BuildIndex(t, AnalysisOptions{}), std::nullopt);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].name, "aten::bmm");
  EXPECT_EQ(r.rows[1].name, "aten::masked_fill");
  EXPECT_FALSE(r.rows[1].modelled);
  EXPECT_DOUBLE_EQ(r.attributed_ns, r.kernel_ns);
}

TEST(OpRoofline, AnOpsNameSettlesItsCategoryBeforeItsTopKernelDoes) {
  // No shapes recorded (HTA's NCCL trace): a cuDNN convolution whose top kernel is a
  // CUTLASS implicit GEMM stays a convolution, a batch norm's backward is a norm's, and an
  // op no family names takes its category from ATen's own elementwise kernel.
  Builder b;
  b.trace().device_name = "NVIDIA A100-SXM4-40GB";
  b.Op("aten::cudnn_convolution", 0, 100, 1);
  b.Launch("cudaLaunchKernel", "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1", 10,
           5, 1000, 40'000, 1);
  b.Op("aten::cudnn_batch_norm_backward", 200, 100, 2);
  b.Launch("cudaLaunchKernel", "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>", 210, 5,
           50'000, 30'000, 2);
  b.Op("aten::hardtanh_", 400, 100, 3);
  b.Launch("cudaLaunchKernel", "void at::native::vectorized_elementwise_kernel<4, at::native::hardtanh_functor>",
           410, 5, 90'000, 20'000, 3);
  b.Op("aten::max_pool2d_with_indices", 600, 100, 4);
  b.Launch("cudaLaunchKernel", "void at::native::max_pool_forward_nchw<float, float>", 610, 5, 120'000, 10'000, 4);
  const Trace t = std::move(b.trace());
  const OpRoofline r = AnalyzeOpRoofline(BuildIndex(t, AnalysisOptions{}), std::nullopt);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].name, "aten::cudnn_convolution");
  EXPECT_EQ(r.rows[0].category, "CONV_fwd");
  EXPECT_NE(r.rows[0].params.find("kernel name:"), std::string::npos) << r.rows[0].params;  // still described
  EXPECT_EQ(r.rows[1].category, "NORM_bwd");
  EXPECT_EQ(r.rows[2].category, "elementwise");
  EXPECT_EQ(r.rows[3].category, "other");  // ATen's, but neither elementwise nor a reduction
  for (const OpRooflineRow& row : r.rows) EXPECT_FALSE(row.modelled) << row.name;
}

}  // namespace
}  // namespace tierscope
