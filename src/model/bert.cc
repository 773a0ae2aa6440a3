// The BERT encoder forward pass, expressed as backend op calls.
#include "model/bert.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "model/row_blocks.h"

namespace tierscope {
namespace {

std::string LayerKey(int64_t i, const std::string& rest) {
  return "encoder.layer." + std::to_string(i) + "." + rest;
}

// Concatenates q, k, v weights [H, H] (or biases [H]) along dim 0, in FP32.
HostTensor Concat3(const HostTensor* a, const HostTensor* b, const HostTensor* c,
                   std::vector<float>& storage) {
  const int64_t n = a->numel();
  storage.resize(static_cast<size_t>(3 * n));
  ToFloat(a->dtype, a->data, storage.data(), n);
  ToFloat(b->dtype, b->data, storage.data() + n, n);
  ToFloat(c->dtype, c->data, storage.data() + 2 * n, n);
  HostTensor t;
  t.dtype = DType::kF32;
  t.shape = a->shape;
  t.shape[0] *= 3;
  t.data = reinterpret_cast<const std::byte*>(storage.data());
  t.bytes = storage.size() * sizeof(float);
  return t;
}

}  // namespace

StatusOr<Tensor> BertModel::Upload(const HostTensor& t, DType dtype) {
  TS_ASSIGN_OR_RETURN(Tensor d, Tensor::Empty(backend_, dtype, t.shape));
  std::vector<float> f(static_cast<size_t>(t.numel()));
  ToFloat(t.dtype, t.data, f.data(), f.size());
  std::vector<std::byte> conv(d.bytes());
  FromFloat(f.data(), dtype, conv.data(), f.size());
  TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.data(), conv.data(), conv.size()));
  weight_bytes_ += static_cast<int64_t>(d.bytes());
  return d;
}

StatusOr<std::unique_ptr<BertModel>> BertModel::Create(Backend& backend, const BertConfig& config,
                                                       const Checkpoint& ck, DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16 && dtype != DType::kI8) {
    return InvalidArgument("unsupported run dtype " + std::string(DTypeName(dtype)));
  }
  std::unique_ptr<BertModel> m(new BertModel(backend, config, dtype));
  const int64_t H = config.hidden_size, I = config.intermediate_size;
  auto upload = [&](const std::string& name, const std::vector<int64_t>& shape,
                    Tensor* out) -> Status {
    TS_ASSIGN_OR_RETURN(const HostTensor* t, ck.Get(name, shape));
    TS_ASSIGN_OR_RETURN(*out, m->Upload(*t));
    return OkStatus();
  };
  auto pack = [&](const HostTensor& t, std::unique_ptr<PackedWeight>* out) -> Status {
    TS_ASSIGN_OR_RETURN(*out, m->kernels_.PackWeight(t, dtype));
    m->weight_bytes_ += (*out)->bytes();
    return OkStatus();
  };
  // The embedding tables in the run's precision, also where the activations are FP32 (a
  // 16-bit run on a backend without 16-bit arithmetic): the largest weights stay halved.
  const DType table = dtype == DType::kF16 || dtype == DType::kBF16 ? dtype : m->dtype();
  auto upload_table = [&](const std::string& name, const std::vector<int64_t>& shape, Tensor* out) -> Status {
    TS_ASSIGN_OR_RETURN(const HostTensor* t, ck.Get(name, shape));
    TS_ASSIGN_OR_RETURN(*out, m->Upload(*t, table));
    return OkStatus();
  };
  TS_RETURN_IF_ERROR(upload_table("embeddings.word_embeddings.weight", {config.vocab_size, H}, &m->word_emb_));
  TS_RETURN_IF_ERROR(upload_table("embeddings.position_embeddings.weight", {config.max_position_embeddings, H},
                                  &m->pos_emb_));
  TS_RETURN_IF_ERROR(upload_table("embeddings.token_type_embeddings.weight", {config.type_vocab_size, H},
                                  &m->type_emb_));
  TS_RETURN_IF_ERROR(upload("embeddings.LayerNorm.weight", {H}, &m->emb_ln_g_));
  TS_RETURN_IF_ERROR(upload("embeddings.LayerNorm.bias", {H}, &m->emb_ln_b_));

  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    Layer L;
    const HostTensor* w[3];
    const HostTensor* b[3];
    const char* names[3] = {"query", "key", "value"};
    for (int j = 0; j < 3; ++j) {
      const std::string base = LayerKey(i, std::string("attention.self.") + names[j]);
      TS_ASSIGN_OR_RETURN(w[j], ck.Get(base + ".weight", {H, H}));
      TS_ASSIGN_OR_RETURN(b[j], ck.Get(base + ".bias", {H}));
    }
    std::vector<float> wstore, bstore;
    TS_RETURN_IF_ERROR(pack(Concat3(w[0], w[1], w[2], wstore), &L.qkv_w));
    TS_ASSIGN_OR_RETURN(L.qkv_b, m->Upload(Concat3(b[0], b[1], b[2], bstore)));

    TS_ASSIGN_OR_RETURN(const HostTensor* ao, ck.Get(LayerKey(i, "attention.output.dense.weight"), {H, H}));
    TS_RETURN_IF_ERROR(pack(*ao, &L.attn_out_w));
    TS_RETURN_IF_ERROR(upload(LayerKey(i, "attention.output.dense.bias"), {H}, &L.attn_out_b));
    TS_RETURN_IF_ERROR(upload(LayerKey(i, "attention.output.LayerNorm.weight"), {H}, &L.attn_ln_g));
    TS_RETURN_IF_ERROR(upload(LayerKey(i, "attention.output.LayerNorm.bias"), {H}, &L.attn_ln_b));
    TS_ASSIGN_OR_RETURN(const HostTensor* iw, ck.Get(LayerKey(i, "intermediate.dense.weight"), {I, H}));
    TS_RETURN_IF_ERROR(pack(*iw, &L.inter_w));
    TS_RETURN_IF_ERROR(upload(LayerKey(i, "intermediate.dense.bias"), {I}, &L.inter_b));
    TS_ASSIGN_OR_RETURN(const HostTensor* ow, ck.Get(LayerKey(i, "output.dense.weight"), {H, I}));
    TS_RETURN_IF_ERROR(pack(*ow, &L.out_w));
    TS_RETURN_IF_ERROR(upload(LayerKey(i, "output.dense.bias"), {H}, &L.out_b));
    TS_RETURN_IF_ERROR(upload(LayerKey(i, "output.LayerNorm.weight"), {H}, &L.out_ln_g));
    TS_RETURN_IF_ERROR(upload(LayerKey(i, "output.LayerNorm.bias"), {H}, &L.out_ln_b));
    m->layers_.push_back(std::move(L));
  }
  // The pooler is optional in a checkpoint (add_pooling_layer=False leaves it out).
  if (ck.Has("pooler.dense.weight")) {
    TS_ASSIGN_OR_RETURN(const HostTensor* pw, ck.Get("pooler.dense.weight", {H, H}));
    TS_RETURN_IF_ERROR(pack(*pw, &m->pooler_w_));
    TS_RETURN_IF_ERROR(upload("pooler.dense.bias", {H}, &m->pooler_b_));
  }
  return m;
}

Status BertModel::Validate(const BatchInput& in) const {
  if (in.batch <= 0) return InvalidArgument("batch size must be >= 1, got " + std::to_string(in.batch));
  if (in.seq_len <= 0) return InvalidArgument("seq_len must be >= 1, got " + std::to_string(in.seq_len));
  if (in.seq_len > config_.max_position_embeddings) {
    return InvalidArgument("seq_len " + std::to_string(in.seq_len) +
                           " exceeds the model's max_position_embeddings " +
                           std::to_string(config_.max_position_embeddings));
  }
  const bool packed = !in.seq_lens.empty();
  size_t n = static_cast<size_t>(in.batch * in.seq_len);
  if (packed) {
    if (static_cast<int64_t>(in.seq_lens.size()) != in.batch) {
      return InvalidArgument("seq_lens has " + std::to_string(in.seq_lens.size()) + " lengths for a batch of " +
                             std::to_string(in.batch) + " sequences");
    }
    int64_t longest = 0;
    n = 0;
    for (size_t b = 0; b < in.seq_lens.size(); ++b) {
      const int64_t len = in.seq_lens[b];
      if (len < 1 || len > config_.max_position_embeddings) {
        return InvalidArgument("packed sequence " + std::to_string(b) + " has " + std::to_string(len) +
                               " tokens; each needs 1 to max_position_embeddings (" +
                               std::to_string(config_.max_position_embeddings) + ")");
      }
      longest = std::max(longest, len);
      n += static_cast<size_t>(len);
    }
    if (n > static_cast<size_t>(INT32_MAX)) {
      return InvalidArgument("a packed batch of " + std::to_string(n) + " tokens: at most " +
                             std::to_string(INT32_MAX) + " (its offsets are 32-bit)");
    }
    if (longest != in.seq_len) {
      return InvalidArgument("seq_len " + std::to_string(in.seq_len) + " is not the longest packed sequence (" +
                             std::to_string(longest) + ")");
    }
    if (in.input_ids.size() != n) {
      return InvalidArgument("input_ids has " + std::to_string(in.input_ids.size()) +
                             " ids, expected the sum of seq_lens = " + std::to_string(n));
    }
  } else if (in.input_ids.size() != n) {
    return InvalidArgument("input_ids has " + std::to_string(in.input_ids.size()) +
                           " ids, expected batch x seq_len = " + std::to_string(n));
  }
  // Where token i is, for errors: [row][column], or [token] of the packed batch.
  auto at = [&](size_t i) {
    return packed ? "[" + std::to_string(i) + "]"
                  : "[" + std::to_string(i / in.seq_len) + "][" + std::to_string(i % in.seq_len) + "]";
  };
  if (!in.attention_mask.empty() && in.attention_mask.size() != n) {
    return InvalidArgument("attention_mask does not match input_ids' shape");
  }
  if (!in.token_type_ids.empty() && in.token_type_ids.size() != n) {
    return InvalidArgument("token_type_ids does not match input_ids' shape");
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = in.input_ids[i];
    if (id < 0 || id >= config_.vocab_size) {
      return OutOfRange("input_ids" + at(i) + " = " + std::to_string(id) +
                        " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) + ")");
    }
    if (!in.token_type_ids.empty()) {
      const int64_t t = in.token_type_ids[i];
      if (t < 0 || t >= config_.type_vocab_size) {
        return OutOfRange("token_type_ids" + at(i) + " = " + std::to_string(t) +
                          " is outside [0, " + std::to_string(config_.type_vocab_size) + ")");
      }
    }
    if (!in.attention_mask.empty() && in.attention_mask[i] != 0 && in.attention_mask[i] != 1) {
      return InvalidArgument("attention_mask values must be 0 or 1, got " +
                             std::to_string(in.attention_mask[i]));
    }
  }
  return OkStatus();
}

// The device tensors' [batch, seq_len]: the input's, or [1, T] for packed sequences.
static void SetDeviceShape(const BatchInput& in, BertModel::Inputs* d) {
  const bool packed = !in.seq_lens.empty();
  d->batch = packed ? 1 : in.batch;
  d->seq_len = packed ? static_cast<int64_t>(in.input_ids.size()) : in.seq_len;
}

int64_t BertModel::row_block_rows() const {
  if (row_block_ >= 0) return row_block_;
  // The largest activation a row: Q, K and V, or the intermediate (FP32 in an INT8 run).
  const int64_t widest = std::max(3 * config_.hidden_size, config_.intermediate_size);
  return kernels_.RowBlockRows(widest * static_cast<int64_t>(DTypeSize(dtype())), linear_weight_bytes());
}

int64_t BertModel::linear_weight_bytes() const {
  int64_t bytes = 0;
  for (const Layer& L : layers_) {
    for (const auto* w : {L.qkv_w.get(), L.attn_out_w.get(), L.inter_w.get(), L.out_w.get()}) {
      if (w != nullptr) bytes += w->bytes();
    }
  }
  return bytes;
}

int64_t BertModel::linear_workspace_growth(int64_t rows, int64_t pooled) const {
  int64_t bytes = pooler_w_ != nullptr && pooled > 0 ? kernels_.LinearWorkspaceGrowth(pooled, *pooler_w_) : 0;
  for (const Layer& L : layers_) {
    for (const auto* w : {L.qkv_w.get(), L.attn_out_w.get(), L.inter_w.get(), L.out_w.get()}) {
      if (w != nullptr) bytes = std::max(bytes, kernels_.LinearWorkspaceGrowth(rows, *w));
    }
  }
  return bytes;
}

StatusOr<BertModel::Inputs> BertModel::Upload(const BatchInput& in) {
  TS_RETURN_IF_ERROR(Validate(in));
  const std::vector<RowBlock> blocks = SplitRowBlocks(in, row_block_rows());
  if (blocks.size() <= 1) return UploadValidated(in);
  Inputs all;
  SetDeviceShape(in, &all);
  for (const RowBlock& b : blocks) {
    TS_ASSIGN_OR_RETURN(Inputs d, UploadValidated(SliceBatch(in, b)));
    all.blocks.push_back(std::move(d));
  }
  return all;
}

StatusOr<BertModel::Inputs> BertModel::UploadValidated(const BatchInput& in) {
  const size_t n = in.input_ids.size();
  std::vector<int32_t> ids(n), types(n, 0), mask(n, 1);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = static_cast<int32_t>(in.input_ids[i]);
    if (!in.token_type_ids.empty()) types[i] = static_cast<int32_t>(in.token_type_ids[i]);
    if (!in.attention_mask.empty()) mask[i] = static_cast<int32_t>(in.attention_mask[i]);
  }
  Inputs d;
  const bool packed = !in.seq_lens.empty();
  SetDeviceShape(in, &d);
  if (packed) {
    if (!kernels_.SupportsPackedSequences()) {
      return Unimplemented("packed sequences: the " + backend_.props().kind + " backend has no packed kernels");
    }
    std::vector<int32_t> offsets(in.seq_lens.size() + 1, 0), positions(n);
    for (size_t b = 0; b < in.seq_lens.size(); ++b) {
      offsets[b + 1] = offsets[b] + static_cast<int32_t>(in.seq_lens[b]);
      for (int32_t t = 0; t < in.seq_lens[b]; ++t) positions[offsets[b] + t] = t;
    }
    TS_ASSIGN_OR_RETURN(d.offsets, Tensor::Empty(backend_, DType::kI32, {in.batch + 1}));
    TS_ASSIGN_OR_RETURN(d.positions, Tensor::Empty(backend_, DType::kI32, {1, d.seq_len}));
    TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.offsets.data(), offsets.data(), offsets.size() * 4));
    TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.positions.data(), positions.data(), n * 4));
  }
  TS_ASSIGN_OR_RETURN(d.ids, Tensor::Empty(backend_, DType::kI32, {d.batch, d.seq_len}));
  TS_ASSIGN_OR_RETURN(d.type_ids, Tensor::Empty(backend_, DType::kI32, {d.batch, d.seq_len}));
  TS_ASSIGN_OR_RETURN(d.mask, Tensor::Empty(backend_, DType::kI32, {d.batch, d.seq_len}));
  TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.ids.data(), ids.data(), n * 4));
  TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.type_ids.data(), types.data(), n * 4));
  TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.mask.data(), mask.data(), n * 4));
  return d;
}

// A dtype as PyTorch's profiler spells it in "Input type".
static std::string TorchTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "\"float\"";
    case DType::kF16: return "\"c10::Half\"";
    case DType::kBF16: return "\"c10::BFloat16\"";
    case DType::kI32: return "\"int\"";
    case DType::kI64: return "\"long int\"";
    case DType::kI8: return "\"signed char\"";
    default: return "\"" + std::string(DTypeName(t)) + "\"";
  }
}

// "Input Dims"/"Input type" args for an operator, in PyTorch's spelling.
static std::string ShapeArgs(std::initializer_list<const Tensor*> inputs) {
  std::string dims = "\"Input Dims\": [", types = "\"Input type\": [";
  bool first = true;
  for (const Tensor* t : inputs) {
    if (!first) {
      dims += ", ";
      types += ", ";
    }
    first = false;
    if (t == nullptr) {
      dims += "[]";
      types += "\"\"";
      continue;
    }
    dims += ShapeString(t->shape());
    types += TorchTypeName(t->dtype());
  }
  return dims + "], " + types + "]";
}

template <bool kOn>
StatusOr<Tensor> BertModel::Empty(Shape shape, DType dtype) {
  OpScope<kOn> op(profiler_, "aten::empty", [&] {
    return "\"Input Dims\": [[], [], [], [], []], \"Concrete Inputs\": [\"" + ShapeString(shape) +
           "\", \"\", \"\", \"\", \"\"]";
  });
  return Tensor::Empty(backend_, dtype, std::move(shape));
}

// aten::linear's arguments: input x of `x_shape` and `x_dtype`, weight w, bias.
std::string LinearArgs(const Shape& x_shape, DType x_dtype, const PackedWeight& w, const Tensor& bias) {
  return "\"Input Dims\": [" + ShapeString(x_shape) + ", [" + std::to_string(w.n()) + ", " + std::to_string(w.k()) +
         "], " + ShapeString(bias.shape()) + "], \"Input type\": [" + TorchTypeName(x_dtype) + ", " +
         TorchTypeName(w.dtype()) + ", " + TorchTypeName(bias.dtype()) + "]";
}

template <bool kOn>
StatusOr<Tensor> BertModel::LinearOp(const Tensor& x, int64_t rows, int64_t stride,
                                     const PackedWeight& w, const Tensor& bias, Epilogue epilogue,
                                     Shape out_shape) {
  // The weight is pre-packed; its logical shape is [N, K] as nn.Linear stores it.
  // The weight's own dtype: 16-bit (or INT8) under FP32 activations where it differs.
  OpScope<kOn> op(profiler_, "aten::linear", [&] { return LinearArgs(x.shape(), x.dtype(), w, bias); });
  TS_ASSIGN_OR_RETURN(Tensor y, Empty<kOn>(std::move(out_shape)));
  TS_RETURN_IF_ERROR(kernels_.Linear(x, rows, stride, w, &bias, epilogue, y));
  return y;
}

template <bool kOn>
StatusOr<Tensor> BertModel::LinearCodesOp(const QuantizedRows& x, const Shape& x_shape, const PackedWeight& w,
                                          const Tensor& bias, Epilogue epilogue, Shape out_shape,
                                          QuantizedRows* y_codes, DType out_dtype) {
  OpScope<kOn> op(profiler_, "aten::linear", [&] { return LinearArgs(x_shape, DType::kF32, w, bias); });
  if (y_codes != nullptr) {
    TS_ASSIGN_OR_RETURN(*y_codes, kernels_.NewQuantizedRows(x.rows, w.n()));
    TS_RETURN_IF_ERROR(kernels_.LinearInt8(x, w, &bias, epilogue, nullptr, y_codes));
    return Tensor();
  }
  TS_ASSIGN_OR_RETURN(Tensor y, Empty<kOn>(std::move(out_shape), out_dtype));
  TS_RETURN_IF_ERROR(kernels_.LinearInt8(x, w, &bias, epilogue, &y, nullptr));
  return y;
}

template <bool kOn>
StatusOr<Tensor> BertModel::LayerNormOp(const Tensor& x, const Tensor* residual, const Tensor& g,
                                        const Tensor& b, QuantizedRows* codes) {
  // With a residual the add is fused into the LayerNorm kernel; the operator says so.
  OpScope<kOn> op(profiler_, residual ? "tierscope::add_layer_norm" : "aten::layer_norm",
                  [&] { return residual ? ShapeArgs({&x, residual, &g, &b}) : ShapeArgs({&x, &g, &b}); });
  TS_ASSIGN_OR_RETURN(Tensor y, Empty<kOn>(x.shape()));
  const auto eps = static_cast<float>(config_.layer_norm_eps);
  if (codes != nullptr) {
    TS_ASSIGN_OR_RETURN(*codes, kernels_.NewQuantizedRows(x.numel() / x.dim(-1), x.dim(-1)));
    TS_RETURN_IF_ERROR(kernels_.LayerNormQuantized(x, residual, g, b, eps, y, *codes));
    return y;
  }
  TS_RETURN_IF_ERROR(kernels_.LayerNorm(x, residual, g, b, eps, y));
  return y;
}

// tierscope::linear_add_layer_norm's arguments: the Linear's (x, weight, bias), then the
// residual's, gamma's and beta's.
static std::string LinearAddLayerNormArgs(const Shape& x_shape, DType x_dtype, const PackedWeight& w,
                                          std::initializer_list<const Tensor*> rest) {
  std::string dims = "\"Input Dims\": [" + ShapeString(x_shape) + ", [" + std::to_string(w.n()) + ", " +
                     std::to_string(w.k()) + "]";
  std::string types = "\"Input type\": [" + TorchTypeName(x_dtype) + ", " + TorchTypeName(w.dtype());
  for (const Tensor* t : rest) {
    dims += ", " + ShapeString(t->shape());
    types += ", " + TorchTypeName(t->dtype());
  }
  return dims + "], " + types + "]";
}

template <bool kOn>
StatusOr<Tensor> BertModel::LinearAddLayerNormOp(const Tensor& x, int64_t rows, int64_t stride, const PackedWeight& w,
                                                 const Tensor& bias, const Tensor& residual, const Tensor& g,
                                                 const Tensor& b) {
  if (!kernels_.FusesAddLayerNorm()) {
    TS_ASSIGN_OR_RETURN(Tensor y, LinearOp<kOn>(x, rows, stride, w, bias, Epilogue::kNone, residual.shape()));
    return LayerNormOp<kOn>(y, &residual, g, b);
  }
  OpScope<kOn> op(profiler_, "tierscope::linear_add_layer_norm",
                  [&] { return LinearAddLayerNormArgs(x.shape(), x.dtype(), w, {&bias, &residual, &g, &b}); });
  TS_ASSIGN_OR_RETURN(Tensor y, Empty<kOn>(residual.shape()));
  TS_RETURN_IF_ERROR(kernels_.LinearAddLayerNorm(x, rows, stride, w, &bias, residual, g, b,
                                                 static_cast<float>(config_.layer_norm_eps), y));
  return y;
}

template <bool kOn>
StatusOr<Tensor> BertModel::LinearAddLayerNormOp(const QuantizedRows& x, const Shape& x_shape, const PackedWeight& w,
                                                 const Tensor& bias, const Tensor& residual, const Tensor& g,
                                                 const Tensor& b, QuantizedRows* codes) {
  if (!kernels_.FusesAddLayerNorm()) {
    TS_ASSIGN_OR_RETURN(Tensor y, LinearCodesOp<kOn>(x, x_shape, w, bias, Epilogue::kNone, residual.shape()));
    return LayerNormOp<kOn>(y, &residual, g, b, codes);
  }
  OpScope<kOn> op(profiler_, "tierscope::linear_add_layer_norm",
                  [&] { return LinearAddLayerNormArgs(x_shape, DType::kF32, w, {&bias, &residual, &g, &b}); });
  TS_ASSIGN_OR_RETURN(Tensor y, Empty<kOn>(residual.shape(), DType::kF32));
  if (codes != nullptr) {
    TS_ASSIGN_OR_RETURN(*codes, kernels_.NewQuantizedRows(x.rows, w.n()));
  }
  TS_RETURN_IF_ERROR(kernels_.LinearInt8AddLayerNorm(x, w, &bias, residual, g, b,
                                                     static_cast<float>(config_.layer_norm_eps), y, codes));
  return y;
}

template <bool kOn>
StatusOr<Tensor> BertModel::CopyOp(const Tensor& t) {
  OpScope<kOn> op(profiler_, "aten::clone", [&] { return ShapeArgs({&t}); });
  TS_ASSIGN_OR_RETURN(Tensor copy, Empty<kOn>(t.shape()));
  TS_RETURN_IF_ERROR(kernels_.CopyInto(t, copy, 0));
  return copy;
}

template <bool kOn>
Status BertModel::CopyAtOp(const Tensor& src, Tensor& dst, size_t byte_offset) {
  OpScope<kOn> op(profiler_, "aten::copy_", [&] { return ShapeArgs({&dst, &src}); });
  return kernels_.CopyInto(src, dst, byte_offset);
}

template <bool kOn>
StatusOr<Tensor> BertModel::RunLayer(const Layer& L, const Tensor& x, const QuantizedRows* x_codes, const Inputs& in,
                                     QuantizedRows* out_codes) {
  const Tensor& mask = in.mask;
  const int64_t B = x.dim(0), S = x.dim(1), H = config_.hidden_size, I = config_.intermediate_size;
  const int64_t rows = B * S;
  // Q, K and V projections run as one GEMM on the concatenated weight; quantized in the
  // producing op, in BF16 where attention then computes in BF16 (Kernels::Int8RunsBf16Rows).
  const DType qkv_dtype = kernels_.Int8RunsBf16Rows() ? DType::kBF16 : DType::kF32;
  TS_ASSIGN_OR_RETURN(Tensor qkv, x_codes != nullptr
                                      ? LinearCodesOp<kOn>(*x_codes, x.shape(), *L.qkv_w, L.qkv_b, Epilogue::kNone,
                                                           {B, S, 3 * H}, nullptr, qkv_dtype)
                                      : LinearOp<kOn>(x, rows, H, *L.qkv_w, L.qkv_b, Epilogue::kNone, {B, S, 3 * H}));
  Tensor ctx;
  QuantizedRows ctx_codes;  // INT8 quantized in the producing op: attention writes ctx's codes too
  {
    OpScope<kOn> op(profiler_, "aten::scaled_dot_product_attention",
                    [&] { return ShapeArgs({&qkv, &mask}); });
    TS_ASSIGN_OR_RETURN(ctx, Empty<kOn>({B, S, H}));  // FP32 in an INT8 run, whatever qkv's dtype
    const int heads = static_cast<int>(config_.num_attention_heads);
    // An INT8 run's attention in BF16 where the backend has BF16 arithmetic (its GEMMs are
    // INT8; so OpenVINO runs a quantized model on such a CPU), else in FP32.
    const AttentionMath math = precision_ == DType::kI8 ? AttentionMath::kBf16WhereNative
                                                        : AttentionMath::kInputDtype;
    if (x_codes != nullptr) {
      TS_ASSIGN_OR_RETURN(ctx_codes, kernels_.NewQuantizedRows(rows, H));
      TS_RETURN_IF_ERROR(
          kernels_.AttentionQuantized(qkv, mask, in.packed() ? &in.offsets : nullptr, heads, ctx, math, ctx_codes));
    } else {
      TS_RETURN_IF_ERROR(in.packed() ? kernels_.AttentionPacked(qkv, mask, in.offsets, heads, ctx, math)
                                     : kernels_.Attention(qkv, mask, heads, ctx, math));
    }
  }
  if (x_codes == nullptr) {
    TS_ASSIGN_OR_RETURN(Tensor h1, LinearAddLayerNormOp<kOn>(ctx, rows, H, *L.attn_out_w, L.attn_out_b, x,
                                                             L.attn_ln_g, L.attn_ln_b));
    ctx = Tensor();  // read by the projection alone: freed before the FFN's buffers are made
    // GELU is fused into the intermediate GEMM's epilogue.
    TS_ASSIGN_OR_RETURN(Tensor inter, LinearOp<kOn>(h1, rows, H, *L.inter_w, L.inter_b, Epilogue::kGelu, {B, S, I}));
    return LinearAddLayerNormOp<kOn>(inter, rows, I, *L.out_w, L.out_b, h1, L.out_ln_g, L.out_ln_b);
  }
  // INT8, quantized in the producing op: the projection's residual add and LayerNorm write
  // h1 and its codes (h1 is the FFN's residual), and the GELU Linear writes only codes, for
  // the output Linear.
  QuantizedRows h1_codes, inter_codes;
  const Shape ctx_shape = ctx.shape();
  ctx = Tensor();  // the projection reads its codes alone
  TS_ASSIGN_OR_RETURN(Tensor h1, LinearAddLayerNormOp<kOn>(ctx_codes, ctx_shape, *L.attn_out_w, L.attn_out_b, x,
                                                           L.attn_ln_g, L.attn_ln_b, &h1_codes));
  ctx_codes = QuantizedRows();  // freed before the FFN's buffers are made
  TS_RETURN_IF_ERROR(
      LinearCodesOp<kOn>(h1_codes, h1.shape(), *L.inter_w, L.inter_b, Epilogue::kGelu, {B, S, I}, &inter_codes)
          .status());
  return LinearAddLayerNormOp<kOn>(inter_codes, {B, S, I}, *L.out_w, L.out_b, h1, L.out_ln_g, L.out_ln_b, out_codes);
}

double BertModel::FlopsPerSample(int64_t S) const { return BertFlopsPerSample(config_, S, dtype()); }

double BertFlopsPerSample(const BertConfig& config, int64_t S, DType t) {
  const int64_t H = config.hidden_size, I = config.intermediate_size, heads = config.num_attention_heads;
  double layer = LinearCost(S, 3 * H, H, true, Epilogue::kNone, t).flops +
                 AttentionCost(1, S, heads, H / heads, t).flops +
                 LinearCost(S, H, H, true, Epilogue::kNone, t).flops + LayerNormCost(S, H, true, t).flops +
                 LinearCost(S, I, H, true, Epilogue::kGelu, t).flops +
                 LinearCost(S, H, I, true, Epilogue::kNone, t).flops + LayerNormCost(S, H, true, t).flops;
  return EmbeddingCost(S, H, t).flops + LayerNormCost(S, H, false, t).flops +
         static_cast<double>(config.num_hidden_layers) * layer;
}

template <bool kOn>
StatusOr<Tensor> BertModel::ForwardImpl(const Inputs& in, std::vector<Tensor>* hidden_states,
                                        const size_t* hidden_at) {
  const int64_t B = in.batch, S = in.seq_len, H = config_.hidden_size;
  Tensor emb;
  {
    // Word, position and token-type lookups and their sum run as one kernel.
    OpScope<kOn> op(profiler_, "aten::embedding",
                    [&] { return ShapeArgs({&word_emb_, &in.ids, &pos_emb_, &type_emb_, &in.type_ids}); });
    TS_ASSIGN_OR_RETURN(emb, Empty<kOn>({B, S, H}));
    TS_RETURN_IF_ERROR(in.packed() ? kernels_.EmbeddingSumAt(in.ids, in.type_ids, in.positions, word_emb_, pos_emb_,
                                                           type_emb_, emb)
                                 : kernels_.EmbeddingSum(in.ids, in.type_ids, word_emb_, pos_emb_, type_emb_, emb));
  }
  // INT8 quantized in the producing op: each LayerNorm ahead of a layer writes its codes.
  const bool codes = quantizes_in_producer();
  QuantizedRows x_codes;
  TS_ASSIGN_OR_RETURN(Tensor x, LayerNormOp<kOn>(emb, nullptr, emb_ln_g_, emb_ln_b_,
                                                 codes && !layers_.empty() ? &x_codes : nullptr));
  // Hidden state i: a copy of its own, or copied into the whole batch's at *hidden_at.
  size_t kept = 0;
  auto keep = [&]() -> Status {
    if (hidden_states == nullptr) return OkStatus();
    if (hidden_at != nullptr) return CopyAtOp<kOn>(x, (*hidden_states)[kept++], *hidden_at);
    TS_ASSIGN_OR_RETURN(Tensor c, CopyOp<kOn>(x));
    hidden_states->push_back(std::move(c));
    return OkStatus();
  };
  TS_RETURN_IF_ERROR(keep());
  for (size_t i = 0; i < layers_.size(); ++i) {
    QuantizedRows next_codes;
    const bool last = i + 1 == layers_.size();
    TS_ASSIGN_OR_RETURN(x, RunLayer<kOn>(layers_[i], x, codes ? &x_codes : nullptr, in,
                                         codes && !last ? &next_codes : nullptr));
    x_codes = std::move(next_codes);
    TS_RETURN_IF_ERROR(keep());
  }
  return x;
}

template <bool kOn>
StatusOr<Tensor> BertModel::ForwardBlocks(const Inputs& in, std::vector<Tensor>* hidden_states) {
  // The whole batch's output, and its hidden states (the embeddings' and each layer's),
  // each block's copied in at its rows.
  TS_ASSIGN_OR_RETURN(Tensor out, Empty<kOn>({in.batch, in.seq_len, config_.hidden_size}));
  std::vector<Tensor> hidden;
  for (size_t i = 0; hidden_states != nullptr && i <= layers_.size(); ++i) {
    TS_ASSIGN_OR_RETURN(Tensor whole, Empty<kOn>(out.shape()));
    hidden.push_back(std::move(whole));
  }
  size_t at = 0;  // bytes of the output written so far (each hidden state's alike)
  for (const Inputs& block : in.blocks) {
    TS_ASSIGN_OR_RETURN(Tensor y, ForwardImpl<kOn>(block, hidden_states != nullptr ? &hidden : nullptr, &at));
    TS_RETURN_IF_ERROR(CopyAtOp<kOn>(y, out, at));
    at += y.bytes();
  }
  if (hidden_states != nullptr) {
    for (Tensor& h : hidden) hidden_states->push_back(std::move(h));
  }
  return out;
}

StatusOr<Tensor> BertModel::Forward(const Inputs& in, std::vector<Tensor>* hidden_states) {
  if (!in.blocks.empty()) {
    if (profiler_ != nullptr) return ForwardBlocks<true>(in, hidden_states);
    return ForwardBlocks<false>(in, hidden_states);
  }
  if (profiler_ != nullptr) return ForwardImpl<true>(in, hidden_states);
  return ForwardImpl<false>(in, hidden_states);
}

template <bool kOn>
StatusOr<Tensor> BertModel::PoolerImpl(const Tensor& last_hidden) {
  const int64_t B = last_hidden.dim(0), S = last_hidden.dim(1), H = config_.hidden_size;
  // Rows b*S*H: the first token of each sample, read in place with a row stride; tanh
  // is fused into the GEMM's epilogue.
  return LinearOp<kOn>(last_hidden, B, S * H, *pooler_w_, pooler_b_, Epilogue::kTanh, {B, H});
}

StatusOr<Tensor> BertModel::Pooler(const Tensor& last_hidden) {
  if (!has_pooler()) {
    return FailedPrecondition("the checkpoint has no pooler weights (pooler.dense.*)");
  }
  if (profiler_ != nullptr) return PoolerImpl<true>(last_hidden);
  return PoolerImpl<false>(last_hidden);
}

Status BertModel::CopyIntoSlice(const Tensor& src, Tensor& dst, int64_t index) {
  const size_t at = static_cast<size_t>(index) * src.bytes();
  if (profiler_ == nullptr) return CopyAtOp<false>(src, dst, at);
  return CopyAtOp<true>(src, dst, at);
}

}  // namespace tierscope
