// Reading vendor kernel names: one parser a library's naming scheme.
#include "analysis/kernel_names.h"

#include <cctype>
#include <cstdlib>
#include <initializer_list>

namespace tierscope {
namespace {

bool Has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

std::string KinetoDtypeName(std::string_view t) {
  if (t.starts_with("bf16") || t.starts_with("bfloat16")) return "c10::BFloat16";
  if (t.starts_with("tf32") || t.starts_with("xf32")) return "tf32";
  if (t.starts_with("f16") || t.starts_with("fp16") || t.starts_with("half") || t.starts_with("h")) return "c10::Half";
  if (t.starts_with("e4m3") || t.starts_with("e5m2") || t.starts_with("fp8") || t.starts_with("f8")) {
    return "c10::Float8_e4m3fn";
  }
  if (t.starts_with("i8") || t.starts_with("s8") || t.starts_with("int8")) return "signed char";
  if (t.starts_with("f32") || t.starts_with("fp32") || t.starts_with("s")) return "float";
  if (t.starts_with("f64") || t.starts_with("fp64") || t.starts_with("d")) return "double";
  return "";
}

namespace {

// The first "AxB" (or "AxBxC") at or after `from`; false when there is none.
bool Tile(std::string_view s, size_t from, int64_t& m, int64_t& n, int64_t* k) {
  for (size_t p = from; p < s.size(); ++p) {
    if (!std::isdigit(static_cast<unsigned char>(s[p])) || (p > 0 && std::isdigit(static_cast<unsigned char>(s[p - 1])))) {
      continue;
    }
    const std::string rest(s.substr(p, 40));
    char* end = nullptr;
    const long a = std::strtol(rest.c_str(), &end, 10);
    if (*end != 'x' || !std::isdigit(static_cast<unsigned char>(end[1]))) continue;
    const long b = std::strtol(end + 1, &end, 10);
    m = a, n = b;
    if (k != nullptr && *end == 'x' && std::isdigit(static_cast<unsigned char>(end[1]))) *k = std::strtol(end + 1, &end, 10);
    return a > 0 && b > 0;
  }
  return false;
}

// The first of a template's type arguments that is a floating type: cuBLAS's gemv and gemmk1.
std::string TemplateDtype(std::string_view s) {
  size_t best = std::string_view::npos;
  std::string out;
  for (const auto& [token, dtype] : std::initializer_list<std::pair<std::string_view, const char*>>{
           {"__nv_bfloat16", "c10::BFloat16"}, {"__hip_bfloat16", "c10::BFloat16"}, {"__half", "c10::Half"},
           {"half", "c10::Half"}, {"float", "float"}, {"double", "double"}}) {
    const size_t p = s.find(token);
    if (p < best) best = p, out = dtype;
  }
  return out;
}

std::optional<KernelName> Make(const char* category, const char* library, std::string dtype) {
  KernelName k;
  k.category = category;
  k.library = library;
  k.dtype = std::move(dtype);
  return k;
}

// hipBLASLt/Tensile: Cijk_Alik_Bljk_BBS_BH_..._MT32x32x256_... (types: B bf16, H half, S
// float, D double, X xf32, F8/B8 fp8, I8 int8 — the first is A's).
std::optional<KernelName> Tensile(std::string_view s) {
  size_t p = 0;
  for (int field = 0; field < 3 && p != std::string_view::npos; ++field) p = s.find('_', p + 1);
  if (p == std::string_view::npos) return std::nullopt;
  const std::string_view t = s.substr(p + 1, 2);
  std::string dtype = t == "F8" || t == "B8" ? "c10::Float8_e4m3fn"
                      : t == "I8"            ? "signed char"
                      : t[0] == 'B'          ? "c10::BFloat16"
                      : t[0] == 'H'          ? "c10::Half"
                      : t[0] == 'S'          ? "float"
                      : t[0] == 'D'          ? "double"
                      : t[0] == 'X'          ? "tf32"
                                             : "";
  std::optional<KernelName> k = Make("GEMM", "hipBLASLt/Tensile", dtype);
  if (const size_t mt = s.find("_MT"); mt != std::string_view::npos) Tile(s, mt + 3, k->tile_m, k->tile_n, &k->tile_k);
  return k;
}

// cuBLAS's xmma kernels and cuDNN's implicit-GEMM convolutions:
// sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_..., sm80_xmma_fprop_implicit_gemm_tf32f32_....
std::optional<KernelName> Xmma(std::string_view s) {
  const char* category = Has(s, "_fprop") ? "CONV_fwd" : Has(s, "_dgrad") ? "CONV_bwd_data"
                       : Has(s, "_wgrad") ? "CONV_bwd_weight" : "GEMM";
  size_t p = s.find("gemm_");
  if (p == std::string_view::npos) return std::nullopt;
  p += 5;
  // The type block "<A><B>_<compute><acc>_<out>" after options ("indexed_", "wo_smem_"):
  // A's type, unless the compute field says TF32 (sm90_xmma_gemm_f32f32_tf32f32_f32_...).
  const auto typed = [](std::string_view t) {
    for (const char* prefix : {"bf16", "tf32", "f16", "f32", "f64", "e4m3", "e5m2", "i8", "s8"}) {
      if (t.starts_with(prefix)) return true;
    }
    return false;
  };
  while (p < s.size() && !typed(s.substr(p))) {
    const size_t next = s.find('_', p);
    if (next == std::string_view::npos) return Make(category, category[0] == 'G' ? "cuBLAS" : "cuDNN", "");
    p = next + 1;
  }
  const size_t block_end = std::min(s.size(), s.find('_', s.find('_', p) + 1));
  const std::string dtype = Has(s.substr(p, block_end - p), "tf32") ? "tf32" : KinetoDtypeName(s.substr(p));
  std::optional<KernelName> k = Make(category, category[0] == 'G' ? "cuBLAS" : "cuDNN", dtype);
  if (const size_t t = s.find("tilesize"); t != std::string_view::npos) Tile(s, t, k->tile_m, k->tile_n, &k->tile_k);
  return k;
}

// CUTLASS (and cuDNN's CUTLASS kernels): cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2,
// cutlass_tensorop_s1688fprop_optimized_tf32_64x64_16x10_nhwc_align4.
std::optional<KernelName> Cutlass(std::string_view s) {
  const char* category = Has(s, "fprop") ? "CONV_fwd" : Has(s, "dgrad") ? "CONV_bwd_data"
                       : Has(s, "wgrad") ? "CONV_bwd_weight" : Has(s, "Convolution") ? "CONV"
                       : Has(s, "gemm") ? "GEMM" : nullptr;
  if (category == nullptr) return std::nullopt;
  // A's type: the earliest type token (CUTLASS 3.x lists A, B, accumulator, C, D).
  std::string dtype;
  size_t first = std::string_view::npos;
  for (const char* t : {"_bf16", "_tf32", "_f16", "_e4m3", "_e5m2", "_i8", "_s8", "_f32"}) {
    if (const size_t at = s.find(t); at < first) first = at, dtype = KinetoDtypeName(std::string_view(t + 1));
  }
  std::optional<KernelName> k = Make(category, Has(s, "cudnn") ? "cuDNN (CUTLASS)" : "CUTLASS", dtype);
  size_t from = s.find("gemm");
  if (from == std::string_view::npos) from = s.find("prop");
  if (from == std::string_view::npos) from = s.find("grad");
  int64_t k_tile = 0, stages = 0;
  if (from != std::string_view::npos && Tile(s, from, k->tile_m, k->tile_n, &k->tile_k) && k->tile_k > 0) {
    // CUTLASS 3.x: "128x128x64_1x1x1" is the M x N x K tile, then the cluster.
  } else if (from != std::string_view::npos && Tile(s, from, k->tile_m, k->tile_n, nullptr)) {
    // "256x128_64x3": the K tile and the stages follow the M x N tile.
    const size_t next = s.find('_', s.find(std::to_string(k->tile_m) + "x" + std::to_string(k->tile_n), from));
    if (next != std::string_view::npos && Tile(s.substr(0, next + 12), next, k_tile, stages, nullptr)) k->tile_k = k_tile;
  }
  return k;
}

// cuBLAS's older kernels: volta_sgemm_128x64_nn, ampere_bf16_s16816gemm_bf16_128x128_ldg8_...,
// turing_fp16_s1688gemm_fp16_..., volta_h884gemm_....
std::optional<KernelName> CublasArch(std::string_view s) {
  const size_t us = s.find('_');
  const size_t g = s.find("gemm");
  if (us == std::string_view::npos || g == std::string_view::npos) return std::nullopt;
  std::string_view kind = s.substr(us + 1, g - us - 1);  // "s", "bf16_s16816", "h884", "fp16_s1688"
  std::optional<KernelName> k = Make("GEMM", "cuBLAS", KinetoDtypeName(kind));
  if (kind.starts_with("i") || Has(kind, "i8")) k->dtype = "signed char";
  Tile(s, g, k->tile_m, k->tile_n, nullptr);
  return k;
}

}  // namespace

std::string KernelName::Label() const {
  std::string out = library.empty() ? category : library + " " + category;
  if (!dtype.empty()) {
    out += " ";
    out += dtype == "c10::BFloat16" ? "bf16" : dtype == "c10::Half" ? "fp16" : dtype == "float" ? "fp32"
         : dtype == "double" ? "fp64" : dtype == "signed char" ? "int8" : dtype.starts_with("c10::Float8") ? "fp8"
         : dtype;
  }
  if (tile_m > 0) {
    out += " tile " + std::to_string(tile_m) + "x" + std::to_string(tile_n);
    if (tile_k > 0) out += "x" + std::to_string(tile_k);
  }
  return out;
}

std::optional<KernelName> ParseKernelName(std::string_view s) {
  if (s.starts_with("void ")) s.remove_prefix(5);
  if (s.starts_with("Cijk_")) return Tensile(s);
  if (s.starts_with("_matmul_ogs_")) {  // triton_kernels: _matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1
    const size_t p = s.find('_', 12);
    std::optional<KernelName> k =
        Make("grouped GEMM", "Triton matmul_ogs", p == std::string_view::npos ? "" : KinetoDtypeName(s.substr(p + 1)));
    const size_t t = s.find('_', p == std::string_view::npos ? 12 : p + 1);
    if (t != std::string_view::npos) Tile(s, t, k->tile_m, k->tile_n, &k->tile_k);
    return k;
  }
  if (s.starts_with("igemm_")) {  // MIOpen: igemm_{fwd,bwd,wrw}_gtcx2_nhwc_bf16_..._bt32x256x32_...
    const char* category = s.starts_with("igemm_fwd") ? "CONV_fwd" : s.starts_with("igemm_bwd") ? "CONV_bwd_data"
                         : s.starts_with("igemm_wrw") ? "CONV_bwd_weight" : "CONV";
    std::string dtype;
    for (const char* t : {"_bf16_", "_fp16_", "_fp32_", "_int8_"}) {
      if (Has(s, t)) dtype = KinetoDtypeName(std::string_view(t + 1));
    }
    std::optional<KernelName> k = Make(category, "MIOpen", dtype);
    if (const size_t bt = s.find("_bt"); bt != std::string_view::npos) Tile(s, bt, k->tile_m, k->tile_n, &k->tile_k);
    return k;
  }
  if (s.starts_with("musa_asm_") && Has(s, "gemm")) {  // musa_asm_bf16bf16bf16bf16gemm_nt_tce_768_256x384B128_...
    std::optional<KernelName> k = Make("GEMM", "MUSA", KinetoDtypeName(s.substr(9)));
    Tile(s, s.find("gemm"), k->tile_m, k->tile_n, nullptr);
    return k;
  }
  if (s.starts_with("bmm_") && Has(s, "_t") && Has(s, "_sm1")) {
    // TensorRT-LLM's generated batched GEMMs (FlashInfer's MoE on Blackwell):
    // bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_..._dynBatch_sm100: A's type first.
    std::string_view a = s.substr(4, s.find('_', 4) - 4);
    if (a.starts_with("Mx")) a.remove_prefix(2);
    const std::string dtype = a == "Bfloat16" ? "c10::BFloat16" : a == "Fp16" ? "c10::Half"
                            : a == "E4m3" || a == "E5m2" ? "c10::Float8_e4m3fn" : a == "E2m1" ? "fp4"
                            : a == "Fp32" ? "float" : "";
    std::optional<KernelName> k = Make(Has(s, "dynBatch") ? "grouped GEMM" : "GEMM", "TensorRT-LLM", dtype);
    Tile(s, s.find("_t") + 2, k->tile_m, k->tile_n, &k->tile_k);
    return k;
  }
  if (s.starts_with("nvjet_")) {  // cuBLASLt's nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT
    std::optional<KernelName> k = Make("GEMM", "cuBLASLt (nvjet)", "");
    Tile(s, 6, k->tile_m, k->tile_n, nullptr);
    return k;
  }
  if (Has(s, "flash_fwd") || Has(s, "flash_bwd") || Has(s, "FlashAttn") || Has(s, "fmha") ||
      Has(s, "paged_attention") || Has(s, "attention_kernel") || Has(s, "unified_attention") || Has(s, "_sdpa") ||
      Has(s, "attn_fwd") || Has(s, "attn_bwd")) {
    return Make("attention", "", "");
  }
  if (Has(s, "_xmma_") && Has(s, "gemm")) return Xmma(s);
  if (Has(s, "cutlass") && !Has(s, "ReduceSplitK")) {
    if (std::optional<KernelName> k = Cutlass(s)) return k;
  }
  for (const char* arch : {"volta_", "ampere_", "turing_", "maxwell_", "hopper_", "sm50_", "sm60_", "sm70_"}) {
    if (s.starts_with(arch) && Has(s, "gemm")) return CublasArch(s);
  }
  if (s.starts_with("implicit_convolve_sgemm") || s.starts_with("explicit_convolve_sgemm")) {
    return Make("CONV", "cuDNN", "float");
  }
  if (s.starts_with("gemv") || s.starts_with("internal::gemvx") || Has(s, "::gemvx::") ||
      s.find("gemv") < s.find('<')) {
    if (!Has(s, "fbgemm")) return Make("GEMV", "cuBLAS", TemplateDtype(s));
  }
  if (s.starts_with("gemmk1_kernel") || s.starts_with("gemmSN_")) return Make("GEMM", "cuBLAS", TemplateDtype(s));
  if (s.starts_with("magma_") && Has(s, "gemm")) return Make("GEMM", "MAGMA", KinetoDtypeName(s.substr(6)));
  if (s.starts_with("wvSplitK")) return Make("GEMM", "vLLM wvSplitK", TemplateDtype(s));
  return std::nullopt;
}

}  // namespace tierscope
