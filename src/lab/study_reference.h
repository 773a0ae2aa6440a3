// The reference study's published figures (DESIGN.md: google/bert_uncased_L-2_H-128_A-2,
// 64 x 128 tokens a unit, on a Moore Threads MTT S5000) beside a lab's own, for a model of
// the study's shape and the study's workload: the report shows both, so a user sees how
// their device and engine compare with the study's at every step.
#ifndef TIERSCOPE_LAB_STUDY_REFERENCE_H_
#define TIERSCOPE_LAB_STUDY_REFERENCE_H_

#include <optional>

#include <nlohmann/json.hpp>

#include "model/encoder_shape.h"

namespace tierscope {

// {"source", "device", "rows": [{"measure", "study", "yours"}]} when the model has the
// study's shape and the lab ran the study's batch (64) and sequence length (128); nullopt
// otherwise. `summary` is the lab's (headline, tier1, validation filled in).
std::optional<nlohmann::json> StudyComparison(const EncoderShape& model, int64_t batch_size, int64_t seq_len,
                                              const nlohmann::json& summary);

}  // namespace tierscope

#endif  // TIERSCOPE_LAB_STUDY_REFERENCE_H_
