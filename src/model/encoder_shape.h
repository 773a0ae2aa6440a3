// The shape of any Hugging Face encoder's config.json (BERT, DistilBERT, RoBERTa, ...),
// read under the names each family gives its fields, for the PyTorch engine and the lab:
// the native engine runs BERT only (LoadBertConfig); PyTorch runs whatever transformers
// loads, and the lab still says what it ran and counts its FLOPs where the layers are BERT's.
#ifndef TIERSCOPE_MODEL_ENCODER_SHAPE_H_
#define TIERSCOPE_MODEL_ENCODER_SHAPE_H_

#include <cstdint>
#include <string>

#include "tierscope/engine.h"
#include "tierscope/status.h"

namespace tierscope {

struct EncoderShape {
  std::string model_type;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t intermediate_size = 0;  // 0: the config does not say
  int64_t positions = 0;          // the longest input the position table allows; 0: unbounded
  // The layers are BERT's (fused QKV-equivalent projections, attention, output projection,
  // LayerNorm, GELU feed-forward, LayerNorm): BertFlopsPerSample counts them.
  bool bert_layers = false;
};

// Parses config.json text; `source` names the file in errors. The vocabulary, hidden size,
// layer and head counts are required (under any of their usual names).
StatusOr<EncoderShape> ParseEncoderShape(const std::string& json_text, const std::string& source);
StatusOr<EncoderShape> LoadEncoderShape(const std::string& path);

// FLOPs of one sample of seq_len tokens by the one FLOP count (BertFlopsPerSample) when the
// layers are BERT's; 0 (not counted) otherwise.
double EncoderFlopsPerSample(const EncoderShape& shape, int64_t seq_len, DType t);

}  // namespace tierscope

#endif  // TIERSCOPE_MODEL_ENCODER_SHAPE_H_
