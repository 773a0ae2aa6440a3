// BertModel: the BERT encoder (embeddings, post-LN transformer layers, pooler) built
// from a Checkpoint on a Backend, holding its weights in the run's precision.
#ifndef TIERSCOPE_MODEL_BERT_H_
#define TIERSCOPE_MODEL_BERT_H_

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/kernels.h"
#include "model/checkpoint.h"
#include "profile/profiler.h"
#include "tierscope/engine.h"

namespace tierscope {

// The FLOPs of one sample of `seq_len` tokens through a BERT encoder of `config` in
// activation dtype `t` (no pooler), summed from the cost model (op_cost.h) of each op the
// native forward launches: one count for the native engine and for PyTorch's run of the
// same model.
double BertFlopsPerSample(const BertConfig& config, int64_t seq_len, DType t);

class BertModel {
 public:
  // Device-side inputs, I32 [B, S] each.
  // batch x seq_len is the tensors' shape: [1, T] for packed sequences, whose offsets
  // (I32 [sequences + 1], where each starts) and positions (I32 [1, T]) are then set.
  // A batch split into row blocks (row_block_rows()) holds its blocks' inputs instead, in
  // order; batch x seq_len is still the whole batch's.
  struct Inputs {
    Tensor ids, type_ids, mask;
    int64_t batch = 0, seq_len = 0;
    Tensor offsets, positions;
    std::vector<Inputs> blocks;
    bool packed() const { return offsets.data() != nullptr || (!blocks.empty() && blocks[0].packed()); }
  };

  static StatusOr<std::unique_ptr<BertModel>> Create(Backend& backend, const BertConfig& config,
                                                     const Checkpoint& checkpoint, DType dtype);

  const BertConfig& config() const { return config_; }
  // The activations' dtype (and the weights' outside the Linear layers): FP32 for an INT8
  // run, and for FP16/BF16 where the backend has no FP16/BF16 arithmetic (the CPU).
  DType dtype() const { return ActivationDType(precision_, backend_.props().HalfArithmetic(precision_)); }
  DType precision() const { return precision_; }  // the run's: dtype(), or kI8
  bool has_pooler() const { return pooler_w_ != nullptr; }
  int64_t weight_bytes() const { return weight_bytes_; }

  // The FLOPs of one sample of `seq_len` tokens through Forward (no pooler), summed from
  // the cost model (op_cost.h) of each op the forward launches: the figure a throughput
  // is held against the device's peak with.
  double FlopsPerSample(int64_t seq_len) const;

  // Checks `input` against the model (shapes, id ranges, mask values).
  Status Validate(const BatchInput& input) const;
  // Validates and copies `input` to the device, split into row blocks (row_blocks.h)
  // where it holds more than row_block_rows() token rows.
  StatusOr<Inputs> Upload(const BatchInput& input);
  // last_hidden_state [B, S, H] ([1, T, H] packed). When `hidden_states` is given it receives the
  // embedding output and each layer's output, as HF's output_hidden_states does. Row blocks
  // run in turn, each through every layer; their outputs are copied into the whole batch's.
  StatusOr<Tensor> Forward(const Inputs& in, std::vector<Tensor>* hidden_states = nullptr);
  // pooler_output [B, H] = tanh(dense(last_hidden[:, 0])).
  StatusOr<Tensor> Pooler(const Tensor& last_hidden);
  // dst[i] = src (an aten::copy_ into slice i of a [N, ...] output, as a serial loop's
  // concatenation does).
  Status CopyIntoSlice(const Tensor& src, Tensor& dst, int64_t index);

  // Operator events go to `profiler` (nullptr: none). The check is made once per call
  // of Forward / Pooler / CopyIntoSlice, never per op.
  void set_profiler(Profiler* profiler) { profiler_ = profiler; }
  Profiler* profiler() const { return profiler_; }

  // INT8 runs: whether each activation is quantized by the op that produces it (LayerNorm,
  // the GELU Linear) where the backend can (Kernels::QuantizesInProducer), or by each
  // Linear from FP32 rows. The two give the same outputs bit for bit; on by default.
  void set_quantize_in_producer(bool on) { quantize_in_producer_ = on; }
  bool quantizes_in_producer() const {
    return quantize_in_producer_ && precision_ == DType::kI8 && kernels_.QuantizesInProducer();
  }
  // Whether the projections take the residual add and LayerNorm into their epilogue
  // (Kernels::FusesAddLayerNorm): their own outputs are then never made.
  bool fuses_add_layer_norm() const { return kernels_.FusesAddLayerNorm(); }

  // Row blocks: -1 the backend's choice (Kernels::RowBlockRows; the default), 0 none, or a
  // count of token rows (BertEngine::Load sets EngineOptions::row_block or TIERSCOPE_ROW_BLOCK).
  // Blocked or not, the outputs are the same bit for bit.
  void set_row_block(int64_t setting) { row_block_ = setting; }
  // The token rows of a block under the current setting (0: none).
  int64_t row_block_rows() const;
  // The bytes of the Linears' packed weights, which every row block reads again.
  int64_t linear_weight_bytes() const;
  // The most bytes any of its Linears, over `rows` token rows (the pooler's over `pooled`;
  // 0: no pooler), may still add to the live bytes by growing a workspace the backend keeps
  // (Kernels::LinearWorkspaceGrowth).
  int64_t linear_workspace_growth(int64_t rows, int64_t pooled) const;

 private:
  struct Layer {
    std::unique_ptr<PackedWeight> qkv_w, attn_out_w, inter_w, out_w;
    Tensor qkv_b, attn_out_b, attn_ln_g, attn_ln_b, inter_b, out_b, out_ln_g, out_ln_b;
  };
  BertModel(Backend& backend, const BertConfig& config, DType precision)
      : backend_(backend),
        kernels_(backend.kernels()),
        config_(config),
        precision_(precision) {}
  StatusOr<Tensor> Upload(const HostTensor& t) { return Upload(t, dtype()); }
  StatusOr<Tensor> Upload(const HostTensor& t, DType dtype);
  template <bool kOn>
  StatusOr<Tensor> Empty(Shape shape, DType dtype);
  template <bool kOn>
  StatusOr<Tensor> Empty(Shape shape) { return Empty<kOn>(std::move(shape), dtype()); }
  template <bool kOn>
  StatusOr<Tensor> LinearOp(const Tensor& x, int64_t rows, int64_t stride, const PackedWeight& w,
                            const Tensor& bias, Epilogue epilogue, Shape out_shape);
  // An INT8 Linear over rows its producer quantized (x_shape: theirs, for the profile):
  // into `out_shape` rows of out_dtype (FP32, or BF16 where Kernels::Int8RunsBf16Rows), or
  // quantized into *y_codes (then the Tensor returned is empty).
  template <bool kOn>
  StatusOr<Tensor> LinearCodesOp(const QuantizedRows& x, const Shape& x_shape, const PackedWeight& w,
                                 const Tensor& bias, Epilogue epilogue, Shape out_shape,
                                 QuantizedRows* y_codes = nullptr, DType out_dtype = DType::kF32);
  // A post-LN block's projection, then the residual add and LayerNorm: one op where the
  // backend runs them in the Linear's epilogue (Kernels::FusesAddLayerNorm), else the
  // Linear's and the LayerNorm's. From FP32 or 16-bit rows, or from rows an INT8 run's
  // producer quantized, the output rows then also quantized into *codes (made here) where
  // codes is given.
  template <bool kOn>
  StatusOr<Tensor> LinearAddLayerNormOp(const Tensor& x, int64_t rows, int64_t stride, const PackedWeight& w,
                                        const Tensor& bias, const Tensor& residual, const Tensor& g,
                                        const Tensor& b);
  template <bool kOn>
  StatusOr<Tensor> LinearAddLayerNormOp(const QuantizedRows& x, const Shape& x_shape, const PackedWeight& w,
                                        const Tensor& bias, const Tensor& residual, const Tensor& g,
                                        const Tensor& b, QuantizedRows* codes = nullptr);
  // `codes`: the output rows also quantized into *codes (made here) for an INT8 Linear.
  template <bool kOn>
  StatusOr<Tensor> LayerNormOp(const Tensor& x, const Tensor* residual, const Tensor& g,
                               const Tensor& b, QuantizedRows* codes = nullptr);
  template <bool kOn>
  StatusOr<Tensor> CopyOp(const Tensor& t);
  // dst[byte_offset ..] = src, as an aten::copy_ into a slice.
  template <bool kOn>
  Status CopyAtOp(const Tensor& src, Tensor& dst, size_t byte_offset);
  StatusOr<Inputs> UploadValidated(const BatchInput& input);
  // x_codes: x quantized by its producer, or null (the Linear quantizes x itself).
  // out_codes: the layer's output quantized too, for the next layer, or null.
  template <bool kOn>
  StatusOr<Tensor> RunLayer(const Layer& layer, const Tensor& x, const QuantizedRows* x_codes, const Inputs& in,
                            QuantizedRows* out_codes);
  // `hidden_at`: null, each hidden state pushed onto *hidden_states as a copy of its own;
  // else *hidden_states holds the whole batch's (a row block's: ForwardBlocks), each copied
  // into at that byte offset.
  template <bool kOn>
  StatusOr<Tensor> ForwardImpl(const Inputs& in, std::vector<Tensor>* hidden_states, const size_t* hidden_at = nullptr);
  template <bool kOn>
  StatusOr<Tensor> ForwardBlocks(const Inputs& in, std::vector<Tensor>* hidden_states);
  template <bool kOn>
  StatusOr<Tensor> PoolerImpl(const Tensor& last_hidden);

  Backend& backend_;
  Kernels& kernels_;
  BertConfig config_;
  DType precision_;  // the Linear weights'
  Tensor word_emb_, pos_emb_, type_emb_, emb_ln_g_, emb_ln_b_;
  std::vector<Layer> layers_;
  std::unique_ptr<PackedWeight> pooler_w_;
  Tensor pooler_b_;
  int64_t weight_bytes_ = 0;
  Profiler* profiler_ = nullptr;
  bool quantize_in_producer_ = true;
  int64_t row_block_ = -1;
};

}  // namespace tierscope

#endif  // TIERSCOPE_MODEL_BERT_H_
