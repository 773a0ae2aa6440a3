// The public engine API: load a Hugging Face BERT directory and run the encoder.
#ifndef TIERSCOPE_ENGINE_H_
#define TIERSCOPE_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tierscope/dtype.h"
#include "tierscope/status.h"

namespace tierscope {

// The fields of a Hugging Face BertConfig that the encoder uses, with HF's defaults.
struct BertConfig {
  std::string model_type = "bert";
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  int64_t pad_token_id = 0;
  std::string position_embedding_type = "absolute";
};

// Parses config.json text; `source` names the file in errors.
StatusOr<BertConfig> ParseBertConfig(const std::string& json_text, const std::string& source);
StatusOr<BertConfig> LoadBertConfig(const std::string& path);

struct EngineOptions {
  // Precision of weights and activations; kI8 is dynamic quantization: the Linear
  // weights int8 per output channel, activations FP32, quantized per row at run time
  // (CPU only).
  DType dtype = DType::kF32;
  int threads = 0;            // 0: all hardware threads (CPU)
  std::string device = "cpu";  // cpu | cuda | cuda:N
  // Row blocks (a batch run a block of samples at a time through every layer, while its
  // activations stay in cache): auto (the backend's choice) | off | a count of token rows;
  // empty: TIERSCOPE_ROW_BLOCK's setting, else auto.
  std::string row_block;
};

// Token ids for a [batch, seq_len] batch, row-major. attention_mask and token_type_ids
// may be empty (all ones / all zeros).
//
// Packed (no padding): seq_lens holds each sequence's length and input_ids (and the
// mask and types) the sequences back to back, Σ seq_lens tokens; batch is the number of
// sequences and seq_len the longest. Attention stays within each sequence and positions
// restart at 0 in each, so every sequence's output equals its output alone.
struct BatchInput {
  int64_t batch = 0;
  int64_t seq_len = 0;
  std::vector<int64_t> input_ids;
  std::vector<int64_t> attention_mask;
  std::vector<int64_t> token_type_ids;
  std::vector<int64_t> seq_lens;  // empty: a padded [batch, seq_len] batch (last: brace-init order)
};

struct ForwardOptions {
  bool pooler = false;         // also compute pooler_output
  bool hidden_states = false;  // also return the embeddings and every layer's output
};

// Outputs in FP32 on the host.
struct ForwardOutput {
  int64_t batch = 0, seq_len = 0, hidden = 0;
  // [batch, seq_len, hidden]; packed: [Σ seq_lens, hidden], sequence b from row offsets[b].
  std::vector<float> last_hidden_state;
  std::vector<float> pooler_output;               // [batch, hidden] when asked
  // layers+1 x [batch, seq_len, hidden]; packed: x [Σ seq_lens, hidden].
  std::vector<std::vector<float>> hidden_states;
  std::vector<int64_t> offsets;  // packed: batch + 1 row offsets; else empty (last: brace-init order)
};

// Bytes a piece of work needs, on the device and on the host (the same memory on a CPU).
struct MemoryNeed {
  double device = 0, host = 0;
};

struct EngineMemory {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t weight_bytes = 0;
};

class BertModel;
class Backend;

class BertEngine {
 public:
  // Loads config.json and model.safetensors (or pytorch_model.bin) from `model_dir`.
  static StatusOr<std::unique_ptr<BertEngine>> Load(const std::string& model_dir,
                                                    const EngineOptions& options);
  ~BertEngine();

  const BertConfig& config() const;
  DType dtype() const;
  int threads() const;
  // Whether Forward takes packed sequences (BatchInput::seq_lens) on this backend.
  bool packs_sequences() const;
  const std::string& model_dir() const { return model_dir_; }
  std::string device_name() const;

  // Checks shapes, ids and masks of `input` against the model.
  Status Validate(const BatchInput& input) const;
  // Checks that the forward fits in memory (CheckMemory) before running it; a size no
  // larger than one that fitted before is not checked again.
  StatusOr<ForwardOutput> Forward(const BatchInput& input, const ForwardOptions& options);

  // What a forward of [batch, seq_len] needs beyond the weights: on the device, the
  // inputs and the activations at their peak (one layer's live tensors, of one row block
  // where the batch runs in blocks, and the hidden states when asked); on the host, the
  // staged inputs and the FP32 outputs.
  // InvalidArgument when batch x seq_len is not a positive size or overflows.
  StatusOr<MemoryNeed> ForwardMemory(int64_t batch, int64_t seq_len,
                                     const ForwardOptions& options) const;
  // The same for `input` itself, padded or packed (a packed batch's row blocks are bounded
  // by its longest sequence).
  StatusOr<MemoryNeed> ForwardMemory(const BatchInput& input, const ForwardOptions& options) const;
  // ResourceExhausted, one line naming `what`, how much it needs and how much the device
  // (and the host) has available, when `need` cannot fit; OK when it fits or the
  // available memory is unknown.
  Status CheckMemory(const MemoryNeed& need, const std::string& what) const;

  EngineMemory memory() const;
  void ResetPeakMemory();

  // Internal access for the lab drivers.
  BertModel& model() { return *model_; }
  const BertModel& model() const { return *model_; }
  Backend& backend() { return *backend_; }

 private:
  BertEngine() = default;
  // ForwardMemory of `tokens` token rows, act_tokens of them (one row block's) alive in a
  // layer at a time, and `pooled` pooler rows; `size` names the batch in errors.
  StatusOr<MemoryNeed> NeedOf(double tokens, double act_tokens, int64_t pooled, const ForwardOptions& options,
                              const std::string& size) const;
  std::string model_dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<BertModel> model_;
  double fitted_bytes_ = 0;  // the largest forward CheckMemory let through
};

// The directory of the built-in default model (bert_uncased_L-2_H-128_A-2's shape with
// deterministic synthetic weights), written on first use under the user's cache dir.
StatusOr<std::string> EnsureDefaultModel();

}  // namespace tierscope

#endif  // TIERSCOPE_ENGINE_H_
