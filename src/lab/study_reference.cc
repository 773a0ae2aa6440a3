// The study's figures, and the lab's own read from its summary beside them.
#include "lab/study_reference.h"

namespace tierscope {
namespace {

// The summary's value at `path` ("/headline/batch_samples_per_s"), or null.
nlohmann::json At(const nlohmann::json& summary, const char* path) {
  const nlohmann::json::json_pointer p(path);
  return summary.contains(p) ? summary.at(p) : nlohmann::json();
}

}  // namespace

std::optional<nlohmann::json> StudyComparison(const EncoderShape& m, int64_t batch_size, int64_t seq_len,
                                              const nlohmann::json& s) {
  const bool study_model = m.hidden_size == 128 && m.layers == 2 && m.heads == 2 && m.intermediate_size == 512 &&
                           m.vocab_size == 30522;
  if (!study_model || batch_size != 64 || seq_len != 128) return std::nullopt;
  nlohmann::json rows = nlohmann::json::array();
  const auto row = [&](const char* measure, double study, nlohmann::json yours) {
    rows.push_back({{"measure", measure}, {"study", study}, {"yours", std::move(yours)}});
  };
  row("serial FP32 samples/s", 450.34, At(s, "/headline/baseline_samples_per_s"));
  row("batch FP32 samples/s", 28065.69, At(s, "/headline/batch_samples_per_s"));
  row("batch FP16 samples/s", 28607.44, At(s, "/headline/fp16_samples_per_s"));
  row("batch FP32 peak memory (MiB)", 64.86, At(s, "/baseline/batch-fp32/max_memory_mb"));
  row("batch FP16 peak memory (MiB)", 33.05, At(s, "/baseline/batch-fp16/max_memory_mb"));
  row("launches per unit, serial", 2768, At(s, "/tier1/serial/per_unit/launches"));
  row("launches per unit, batched", 45, At(s, "/tier1/batch/per_unit/launches"));
  row("aten::linear per unit, serial", 832, At(s, "/tier1/serial/per_unit/operators/aten::linear"));
  row("aten::linear per unit, batched", 13, At(s, "/tier1/batch/per_unit/operators/aten::linear"));
  row("FP16 vs FP32 cosine", 0.99999913, At(s, "/validation/fp16/cosine"));
  row("FP16 vs FP32 mean abs error", 0.00111, At(s, "/validation/fp16/mean_abs"));
  row("FP16 vs FP32 max abs error", 0.0158, At(s, "/validation/fp16/max_abs"));
  return nlohmann::json{{"source", "the reference study (DESIGN.md): google/bert_uncased_L-2_H-128_A-2, 64 x 128 "
                                   "tokens a unit, PyTorch on a Moore Threads MTT S5000 (MUSA)"},
                        {"device", "MTT S5000"},
                        {"rows", std::move(rows)}};
}

}  // namespace tierscope
