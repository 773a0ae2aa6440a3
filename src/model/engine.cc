// BertEngine: the public façade that loads a model directory onto a backend (CPU, or
// CUDA where built and present) and runs forwards with host inputs and outputs.
#include <string>

#include "backend/backend.h"
#include "model/bert.h"
#include "model/checkpoint.h"
#include "tierscope/engine.h"

namespace tierscope {

StatusOr<std::unique_ptr<BertEngine>> BertEngine::Load(const std::string& model_dir,
                                                       const EngineOptions& options) {
  TS_ASSIGN_OR_RETURN(BertConfig config, LoadBertConfig(model_dir + "/config.json"));
  TS_ASSIGN_OR_RETURN(Checkpoint ck, Checkpoint::Open(model_dir));
  std::unique_ptr<BertEngine> e(new BertEngine());
  e->model_dir_ = model_dir;
  TS_ASSIGN_OR_RETURN(e->backend_, CreateBackend(options.device, options.threads));
  TS_ASSIGN_OR_RETURN(e->model_, BertModel::Create(*e->backend_, config, ck, options.dtype));
  return e;
}

BertEngine::~BertEngine() {
  model_.reset();  // frees weights through the backend before it goes
  backend_.reset();
}

const BertConfig& BertEngine::config() const { return model_->config(); }
DType BertEngine::dtype() const { return model_->dtype(); }
int BertEngine::threads() const { return backend_->props().compute_units; }
std::string BertEngine::device_name() const { return backend_->props().name; }

Status BertEngine::Validate(const BatchInput& input) const { return model_->Validate(input); }

StatusOr<ForwardOutput> BertEngine::Forward(const BatchInput& input,
                                            const ForwardOptions& options) {
  if (options.pooler && !model_->has_pooler()) {
    return FailedPrecondition(model_dir_ + ": the checkpoint has no pooler weights");
  }
  TS_ASSIGN_OR_RETURN(BertModel::Inputs in, model_->Upload(input));
  std::vector<Tensor> hidden;
  TS_ASSIGN_OR_RETURN(Tensor last, model_->Forward(in, options.hidden_states ? &hidden : nullptr));
  TS_RETURN_IF_ERROR(backend_->Synchronize());
  auto to_host = [&](const Tensor& t, std::vector<float>* out) -> Status {
    std::vector<std::byte> raw(t.bytes());
    TS_RETURN_IF_ERROR(backend_->CopyDeviceToHost(raw.data(), t.data(), raw.size()));
    out->resize(static_cast<size_t>(t.numel()));
    ToFloat(t.dtype(), raw.data(), out->data(), out->size());
    return OkStatus();
  };
  ForwardOutput out;
  out.batch = input.batch;
  out.seq_len = input.seq_len;
  out.hidden = config().hidden_size;
  TS_RETURN_IF_ERROR(to_host(last, &out.last_hidden_state));
  if (options.pooler) {
    TS_ASSIGN_OR_RETURN(Tensor pooled, model_->Pooler(last));
    TS_RETURN_IF_ERROR(to_host(pooled, &out.pooler_output));
  }
  for (const Tensor& h : hidden) {
    out.hidden_states.emplace_back();
    TS_RETURN_IF_ERROR(to_host(h, &out.hidden_states.back()));
  }
  return out;
}

EngineMemory BertEngine::memory() const {
  MemoryStats s = backend_->memory_stats();
  return EngineMemory{s.live_bytes, s.peak_bytes, model_->weight_bytes()};
}

void BertEngine::ResetPeakMemory() { backend_->ResetPeakMemory(); }

}  // namespace tierscope
