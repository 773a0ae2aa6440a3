// The BERT encoder forward pass, expressed as backend op calls.
#include "model/bert.h"

#include <cstring>
#include <string>

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

StatusOr<Tensor> BertModel::Upload(const HostTensor& t) {
  TS_ASSIGN_OR_RETURN(Tensor d, Tensor::Empty(backend_, dtype_, t.shape));
  std::vector<float> f(static_cast<size_t>(t.numel()));
  ToFloat(t.dtype, t.data, f.data(), f.size());
  std::vector<std::byte> conv(d.bytes());
  FromFloat(f.data(), dtype_, conv.data(), f.size());
  TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.data(), conv.data(), conv.size()));
  weight_bytes_ += static_cast<int64_t>(d.bytes());
  return d;
}

StatusOr<std::unique_ptr<BertModel>> BertModel::Create(Backend& backend, const BertConfig& config,
                                                       const Checkpoint& ck, DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
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
    m->weight_bytes_ += static_cast<int64_t>(t.numel() * DTypeSize(dtype));
    return OkStatus();
  };
  TS_RETURN_IF_ERROR(upload("embeddings.word_embeddings.weight", {config.vocab_size, H},
                            &m->word_emb_));
  TS_RETURN_IF_ERROR(upload("embeddings.position_embeddings.weight",
                            {config.max_position_embeddings, H}, &m->pos_emb_));
  TS_RETURN_IF_ERROR(upload("embeddings.token_type_embeddings.weight",
                            {config.type_vocab_size, H}, &m->type_emb_));
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
  const size_t n = static_cast<size_t>(in.batch * in.seq_len);
  if (in.input_ids.size() != n) {
    return InvalidArgument("input_ids has " + std::to_string(in.input_ids.size()) +
                           " ids, expected batch x seq_len = " + std::to_string(n));
  }
  if (!in.attention_mask.empty() && in.attention_mask.size() != n) {
    return InvalidArgument("attention_mask does not match input_ids' shape");
  }
  if (!in.token_type_ids.empty() && in.token_type_ids.size() != n) {
    return InvalidArgument("token_type_ids does not match input_ids' shape");
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = in.input_ids[i];
    if (id < 0 || id >= config_.vocab_size) {
      return OutOfRange("input_ids[" + std::to_string(i / in.seq_len) + "][" +
                        std::to_string(i % in.seq_len) + "] = " + std::to_string(id) +
                        " is outside the vocabulary [0, " + std::to_string(config_.vocab_size) + ")");
    }
    if (!in.token_type_ids.empty()) {
      const int64_t t = in.token_type_ids[i];
      if (t < 0 || t >= config_.type_vocab_size) {
        return OutOfRange("token_type_ids[" + std::to_string(i / in.seq_len) + "][" +
                          std::to_string(i % in.seq_len) + "] = " + std::to_string(t) +
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

StatusOr<BertModel::Inputs> BertModel::Upload(const BatchInput& in) {
  TS_RETURN_IF_ERROR(Validate(in));
  const size_t n = static_cast<size_t>(in.batch * in.seq_len);
  std::vector<int32_t> ids(n), types(n, 0), mask(n, 1);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = static_cast<int32_t>(in.input_ids[i]);
    if (!in.token_type_ids.empty()) types[i] = static_cast<int32_t>(in.token_type_ids[i]);
    if (!in.attention_mask.empty()) mask[i] = static_cast<int32_t>(in.attention_mask[i]);
  }
  Inputs d;
  d.batch = in.batch;
  d.seq_len = in.seq_len;
  TS_ASSIGN_OR_RETURN(d.ids, Tensor::Empty(backend_, DType::kI32, {in.batch, in.seq_len}));
  TS_ASSIGN_OR_RETURN(d.type_ids, Tensor::Empty(backend_, DType::kI32, {in.batch, in.seq_len}));
  TS_ASSIGN_OR_RETURN(d.mask, Tensor::Empty(backend_, DType::kI32, {in.batch, in.seq_len}));
  TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.ids.data(), ids.data(), n * 4));
  TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.type_ids.data(), types.data(), n * 4));
  TS_RETURN_IF_ERROR(backend_.CopyHostToDevice(d.mask.data(), mask.data(), n * 4));
  return d;
}

StatusOr<Tensor> BertModel::RunLayer(const Layer& L, const Tensor& x, const Tensor& mask) {
  const int64_t B = x.dim(0), S = x.dim(1), H = config_.hidden_size;
  const int64_t rows = B * S;
  TS_ASSIGN_OR_RETURN(Tensor qkv, Empty({B, S, 3 * H}));
  TS_RETURN_IF_ERROR(kernels_.Linear(x, rows, H, *L.qkv_w, &L.qkv_b, Epilogue::kNone, qkv));
  TS_ASSIGN_OR_RETURN(Tensor ctx, Empty({B, S, H}));
  TS_RETURN_IF_ERROR(kernels_.Attention(qkv, mask, static_cast<int>(config_.num_attention_heads), ctx));
  TS_ASSIGN_OR_RETURN(Tensor attn, Empty({B, S, H}));
  TS_RETURN_IF_ERROR(kernels_.Linear(ctx, rows, H, *L.attn_out_w, &L.attn_out_b, Epilogue::kNone, attn));
  TS_ASSIGN_OR_RETURN(Tensor h1, Empty({B, S, H}));
  const float eps = static_cast<float>(config_.layer_norm_eps);
  TS_RETURN_IF_ERROR(kernels_.LayerNorm(attn, &x, L.attn_ln_g, L.attn_ln_b, eps, h1));
  TS_ASSIGN_OR_RETURN(Tensor inter, Empty({B, S, config_.intermediate_size}));
  TS_RETURN_IF_ERROR(kernels_.Linear(h1, rows, H, *L.inter_w, &L.inter_b, Epilogue::kGelu, inter));
  TS_ASSIGN_OR_RETURN(Tensor out, Empty({B, S, H}));
  TS_RETURN_IF_ERROR(kernels_.Linear(inter, rows, config_.intermediate_size, *L.out_w, &L.out_b,
                                     Epilogue::kNone, out));
  TS_ASSIGN_OR_RETURN(Tensor y, Empty({B, S, H}));
  TS_RETURN_IF_ERROR(kernels_.LayerNorm(out, &h1, L.out_ln_g, L.out_ln_b, eps, y));
  return y;
}

StatusOr<Tensor> BertModel::Forward(const Inputs& in, std::vector<Tensor>* hidden_states) {
  const int64_t B = in.batch, S = in.seq_len, H = config_.hidden_size;
  TS_ASSIGN_OR_RETURN(Tensor emb, Empty({B, S, H}));
  TS_RETURN_IF_ERROR(kernels_.EmbeddingSum(in.ids, in.type_ids, word_emb_, pos_emb_, type_emb_, emb));
  TS_ASSIGN_OR_RETURN(Tensor x, Empty({B, S, H}));
  TS_RETURN_IF_ERROR(kernels_.LayerNorm(emb, nullptr, emb_ln_g_, emb_ln_b_,
                                        static_cast<float>(config_.layer_norm_eps), x));
  auto keep = [&](const Tensor& t) -> Status {
    if (hidden_states == nullptr) return OkStatus();
    TS_ASSIGN_OR_RETURN(Tensor copy, Empty(t.shape()));
    TS_RETURN_IF_ERROR(kernels_.CopyInto(t, copy, 0));
    hidden_states->push_back(std::move(copy));
    return OkStatus();
  };
  TS_RETURN_IF_ERROR(keep(x));
  for (const Layer& L : layers_) {
    TS_ASSIGN_OR_RETURN(x, RunLayer(L, x, in.mask));
    TS_RETURN_IF_ERROR(keep(x));
  }
  return x;
}

StatusOr<Tensor> BertModel::Pooler(const Tensor& last_hidden) {
  if (!has_pooler()) {
    return FailedPrecondition("the checkpoint has no pooler weights (pooler.dense.*)");
  }
  const int64_t B = last_hidden.dim(0), S = last_hidden.dim(1), H = config_.hidden_size;
  TS_ASSIGN_OR_RETURN(Tensor y, Empty({B, H}));
  // Rows b*S*H: the first token of each sample, read in place with a row stride.
  TS_RETURN_IF_ERROR(kernels_.Linear(last_hidden, B, S * H, *pooler_w_, &pooler_b_,
                                     Epilogue::kTanh, y));
  return y;
}

}  // namespace tierscope
