// Vendor kernel names: each library's scheme read for its operation, dtype and tile, on
// names taken from the corpus traces (and MUSA's from its users' reports).
#include "analysis/kernel_names.h"

#include <gtest/gtest.h>

namespace tierscope {
namespace {

KernelName Parse(const char* name) {
  std::optional<KernelName> k = ParseKernelName(name);
  EXPECT_TRUE(k.has_value()) << name;
  return k.value_or(KernelName{});
}

TEST(KernelNames, GemmLibrariesGiveDtypeAndTile) {
  const KernelName tensile = Parse(
      "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_GRVWA8_ISA942_IU1_K1");
  EXPECT_EQ(tensile.Label(), "hipBLASLt/Tensile GEMM bf16 tile 32x32x256");
  EXPECT_EQ(tensile.dtype, "c10::BFloat16");
  EXPECT_EQ(Parse("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off"
                  "_kernel__5x_cublas").Label(),
            "cuBLAS GEMM bf16 tile 64x64x64");
  EXPECT_EQ(Parse("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2>"
                  "(cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2::Params)").Label(),
            "CUTLASS GEMM bf16 tile 256x128x64");
  EXPECT_EQ(Parse("volta_sgemm_128x64_nn").Label(), "cuBLAS GEMM fp32 tile 128x64");
  // FP32 data on TF32 units: the compute field says so, not A's type.
  EXPECT_EQ(Parse("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k"
                  "_off_kernel__5x_cublas").dtype, "tf32");
  EXPECT_EQ(Parse("sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x16x32"
                  "_stage4_warpsize4x1x1_g1_tensor16x8x8_alignc4_execute_kernel__5x_cudnn").dtype, "tf32");
  // CUTLASS 3.x: A's type first (not the output's), the M x N x K tile before the cluster.
  EXPECT_EQ(Parse("cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_void_f16_128x128x64_1x1x1_0_tnn_align16_warpspecialized"
                  "_cooperative_epi_tma").Label(),
            "CUTLASS GEMM fp8 tile 128x128x64");
  EXPECT_EQ(Parse("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT").Label(), "cuBLASLt (nvjet) GEMM tile 64x64");
  EXPECT_EQ(Parse("musa_asm_bf16bf16bf16bf16gemm_nt_tce_768_256x384B128_squad_level_epilogue").Label(),
            "MUSA GEMM bf16 tile 256x384");
  EXPECT_EQ(Parse("musa_asm_hhhhssgemm_nt_tce_128_32x128B128_epilogue").dtype, "c10::Half");
  EXPECT_EQ(Parse("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu").Label(),
            "Triton matmul_ogs grouped GEMM bf16 tile 16x128x256");
  EXPECT_EQ(Parse("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut"
                  "_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f").Label(),
            "TensorRT-LLM grouped GEMM fp8 tile 128x16x256");
  EXPECT_EQ(Parse("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>").Label(),
            "cuBLAS GEMV fp32");
}

TEST(KernelNames, ConvolutionKernelsSayTheirDirection) {
  EXPECT_EQ(Parse("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_wt32x32x8_ws2x1_wr2x2_gkgs").Label(),
            "MIOpen CONV_bwd_weight bf16 tile 256x128x16");
  EXPECT_EQ(Parse("igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt32x256x32_wt16x64x4_ws1x1_wr1x2_gkgs").category, "CONV_fwd");
  const KernelName dgrad = Parse("sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x64x16_"
                                 "stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn");
  EXPECT_EQ(dgrad.category, "CONV_bwd_data");
  EXPECT_EQ(dgrad.dtype, "tf32");  // FP32 data on TF32 units: the TF32 roof
  EXPECT_EQ(Parse("void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_64x64_16x10_nhwc_align4>"
                  "(cutlass_tensorop_s1688fprop_optimized_tf32_64x64_16x10_nhwc_align4::Params)").Label(),
            "cuDNN (CUTLASS) CONV_fwd tf32 tile 64x64x16");
}

TEST(KernelNames, OtherKernelsAreNotGemms) {
  // fbgemm's embedding kernels, CUTLASS types in a non-GEMM kernel, elementwise: nothing.
  EXPECT_FALSE(ParseKernelName("void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int*)"));
  EXPECT_FALSE(ParseKernelName("void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<"
                               "cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true> >"));
  EXPECT_FALSE(ParseKernelName("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"));
  EXPECT_FALSE(ParseKernelName(""));
  EXPECT_FALSE(ParseKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_FALSE(ParseKernelName("triton_poi_fused_add_mul_0"));
  EXPECT_EQ(Parse("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
                  "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>, cutlass::bfloat16_t>>>>").category,
            "attention");
  EXPECT_EQ(Parse("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, "
                  "false, false, cutlass::bfloat16_t>>").category,
            "attention");
}

}  // namespace
}  // namespace tierscope
