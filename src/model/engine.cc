// BertEngine: the public façade that loads a model directory onto a backend (CPU, or
// CUDA where built and present) and runs forwards with host inputs and outputs.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <string>

#include "backend/backend.h"
#include "core/cpu_info.h"
#include "core/int_math.h"
#include "model/bert.h"
#include "model/checkpoint.h"
#include "model/row_blocks.h"
#include "tierscope/engine.h"

namespace tierscope {

StatusOr<std::unique_ptr<BertEngine>> BertEngine::Load(const std::string& model_dir,
                                                       const EngineOptions& options) {
  if (options.dtype == DType::kI8 && options.device != "cpu") {
    return InvalidArgument("--dtype int8 (batch-int8) runs on the CPU only: the " + options.device +
                           " backend has no INT8 GEMM; on a GPU use fp16 or bf16 (tensor cores)");
  }
  TS_ASSIGN_OR_RETURN(BertConfig config, LoadBertConfig(model_dir + "/config.json"));
  TS_ASSIGN_OR_RETURN(Checkpoint ck, Checkpoint::Open(model_dir));
  std::unique_ptr<BertEngine> e(new BertEngine());
  e->model_dir_ = model_dir;
  TS_ASSIGN_OR_RETURN(e->backend_, CreateBackend(options.device, options.threads));
  TS_ASSIGN_OR_RETURN(e->model_, BertModel::Create(*e->backend_, config, ck, options.dtype));
  if (const std::vector<std::string> unused = ck.Unused(); !unused.empty()) {
    // As Hugging Face's from_pretrained does: it runs, and says what it left out (once a
    // checkpoint in this process: the lab and the sweep load one many times).
    static std::mutex mu;
    static std::set<std::string> said;
    std::lock_guard<std::mutex> lock(mu);
    if (said.insert(ck.source()).second) {
      std::cerr << "tierscope: warning: " << ck.source() << ": " << unused.size()
                << " weight(s) of the checkpoint are not used by config.json's model, e.g. '" << unused.front()
                << "'\n";
    }
  }
  // The option, else TIERSCOPE_ROW_BLOCK, else the backend's choice.
  const char* env = std::getenv("TIERSCOPE_ROW_BLOCK");
  const bool option = !options.row_block.empty();
  if (option || env != nullptr) {
    TS_ASSIGN_OR_RETURN(const int64_t rows, ParseRowBlockSetting(option ? options.row_block : env,
                                                                 option ? "--row-block" : "TIERSCOPE_ROW_BLOCK"));
    e->model_->set_row_block(rows);
  }
  return e;
}

BertEngine::~BertEngine() {
  model_.reset();  // frees weights through the backend before it goes
  backend_.reset();
}

const BertConfig& BertEngine::config() const { return model_->config(); }
DType BertEngine::dtype() const { return model_->precision(); }
int BertEngine::threads() const { return backend_->props().compute_units; }
std::string BertEngine::device_name() const { return backend_->props().name; }
bool BertEngine::packs_sequences() const { return backend_->kernels().SupportsPackedSequences(); }

Status BertEngine::Validate(const BatchInput& input) const { return model_->Validate(input); }

StatusOr<MemoryNeed> BertEngine::ForwardMemory(int64_t batch, int64_t seq_len,
                                                const ForwardOptions& options) const {
  if (batch < 1 || seq_len < 1) {
    return InvalidArgument("batch " + std::to_string(batch) + " x seq_len " +
                           std::to_string(seq_len) + " is not a positive size");
  }
  const double tokens = static_cast<double>(batch) * static_cast<double>(seq_len);
  // Row blocks (model/row_blocks.h): the largest holds ceil(batch / blocks) samples.
  const int64_t blocks = PaddedBlockCount(batch, seq_len, model_->row_block_rows());
  const double act_tokens = static_cast<double>((batch + blocks - 1) / blocks) * static_cast<double>(seq_len);
  return NeedOf(tokens, act_tokens, batch, options,
                "batch " + std::to_string(batch) + " x seq_len " + std::to_string(seq_len));
}

StatusOr<MemoryNeed> BertEngine::ForwardMemory(const BatchInput& input, const ForwardOptions& options) const {
  if (input.seq_lens.empty()) return ForwardMemory(input.batch, input.seq_len, options);
  // Packed: blocks of whole sequences of at most the block's rows, or one longer sequence.
  const double tokens = static_cast<double>(std::max<size_t>(input.input_ids.size(), 1));
  const int64_t limit = model_->row_block_rows();
  double act_tokens = tokens;
  if (limit > 0 && tokens > static_cast<double>(limit)) {
    const int64_t longest = *std::max_element(input.seq_lens.begin(), input.seq_lens.end());
    act_tokens = std::min(tokens, static_cast<double>(std::max(limit, longest)));
  }
  TS_ASSIGN_OR_RETURN(MemoryNeed need, NeedOf(tokens, act_tokens, 1, options,
                                              std::to_string(input.seq_lens.size()) + " packed sequences of " +
                                                  std::to_string(input.input_ids.size()) + " tokens"));
  // Each token's position, and each block's sequence offsets (at most one block a sequence).
  need.device += tokens * 4 + 8 * static_cast<double>(input.seq_lens.size() + 1);
  return need;
}

StatusOr<MemoryNeed> BertEngine::NeedOf(double tokens, double act_tokens, int64_t pooled,
                                        const ForwardOptions& options, const std::string& size) const {
  const BertConfig& c = config();
  const double es = static_cast<double>(DTypeSize(model_->dtype()));
  const double H = static_cast<double>(c.hidden_size), I = static_cast<double>(c.intermediate_size);
  // The forward's peak is inside a layer: the embedding output, the layer input, qkv
  // (3H), the attention context, its projection, the first LayerNorm, the intermediate
  // (I), the output projection and the layer's result are all alive together (the two
  // projections' own outputs only where the backend does not fuse them), for the
  // act_tokens of one row block; the whole batch's output (where it runs in blocks) and
  // hidden states are alive throughout. Requested bytes, as the live and peak accounting
  // counts them: the CPU's size classes (backend/memory.h) reserve up to a quarter more
  // address space, whose untouched pages take no memory.
  double whole = act_tokens < tokens ? H : 0;  // each block's output copied into the batch's
  double host_out = H;  // last_hidden_state in FP32
  if (options.hidden_states) {
    whole += static_cast<double>(c.num_hidden_layers + 1) * H;
    host_out += static_cast<double>(c.num_hidden_layers + 1) * H;
  }
  MemoryNeed need;
  // Activations, ids, types and mask (every block's uploaded before the first runs, each
  // of its input tensors rounded up to whole 64-byte lines).
  const double blocks = std::ceil(tokens / act_tokens);
  // The residual add and LayerNorm in the projections' epilogue: neither projection's
  // output is made apart (2H fewer).
  const double layer = model_->fuses_add_layer_norm() ? 8 * H + I : 10 * H + I;
  // INT8 with activations quantized where they are produced: the codes of the layer's
  // input, h1, the intermediate and the output are alive together (one byte a value, rows
  // padded to 64 bytes, a scale and a zero point a row), each buffer's rows padded to whole
  // 16-row tiles; the FP32 intermediate counted above is written only for rows too few for
  // whole-row tasks.
  const bool codes = model_->quantizes_in_producer();
  need.device = act_tokens * layer * es + tokens * (whole * es + 3 * 4) + blocks * 5 * 64;
  if (codes) {
    const int64_t code_row = 3 * RoundUp(c.hidden_size, 64) + RoundUp(c.intermediate_size, 64) + 4 * 8;
    need.device += (act_tokens + 16) * static_cast<double>(code_row);
  } else if (dtype() == DType::kI8) {  // a Linear's input's codes
    const int64_t code_row = RoundUp(std::max(c.hidden_size, c.intermediate_size), 64) + 8;
    need.device += (act_tokens + 16) * static_cast<double>(code_row);
  }
  need.host = tokens * (3 * 4 + host_out * (4 + es));  // staged inputs, raw + FP32 outputs
  if (options.pooler) need.device += static_cast<double>(pooled) * H * es;
  // A workspace a Linear keeps from its first run on (the CPU's 16-bit panels widened), as
  // far as it is still to grow.
  need.device += static_cast<double>(
      model_->linear_workspace_growth(static_cast<int64_t>(act_tokens), options.pooler ? pooled : 0));
  if (!(need.device + need.host < 0x1p62)) return InvalidArgument(size + " is too large to address");
  return need;
}

Status BertEngine::CheckMemory(const MemoryNeed& need, const std::string& what) const {
  const bool cpu = backend_->props().kind == "cpu";
  const int64_t device = backend_->AvailableMemory();
  const int64_t host = cpu ? device : AvailableMemoryBytes();
  const double on_device = cpu ? need.device + need.host : need.device;
  std::string short_of;
  if (device >= 0 && on_device > static_cast<double>(device)) {
    short_of = "needs about " + FormatBytes(on_device) + (cpu ? "" : " of device memory") +
               " and " + FormatBytes(static_cast<double>(device)) + " " +
               (cpu ? "is available on this machine" : "is free on " + backend_->props().name);
  } else if (!cpu && host >= 0 && need.host > static_cast<double>(host)) {
    short_of = "needs about " + FormatBytes(need.host) + " of host memory and " +
               FormatBytes(static_cast<double>(host)) + " is available";
  }
  if (short_of.empty()) return OkStatus();
  return ResourceExhausted(what + " " + short_of + "; make it smaller");
}

StatusOr<ForwardOutput> BertEngine::Forward(const BatchInput& input,
                                            const ForwardOptions& options) {
  if (options.pooler && !model_->has_pooler()) {
    return FailedPrecondition(model_dir_ + ": the checkpoint has no pooler weights");
  }
  const bool packed = !input.seq_lens.empty();
  if (packed && options.pooler) {
    return InvalidArgument("the pooler reads each sequence's first token of a padded batch; "
                           "it is not computed for packed sequences");
  }
  TS_ASSIGN_OR_RETURN(MemoryNeed need, ForwardMemory(input, options));
  if (need.device + need.host > fitted_bytes_) {  // once per new high: no I/O per batch
    TS_RETURN_IF_ERROR(CheckMemory(need, "a forward of batch " + std::to_string(input.batch) +
                                             " x seq_len " + std::to_string(input.seq_len)));
    fitted_bytes_ = need.device + need.host;
  }
  TS_ASSIGN_OR_RETURN(BertModel::Inputs in, model_->Upload(input));
  std::vector<Tensor> hidden;
  TS_ASSIGN_OR_RETURN(Tensor last, model_->Forward(in, options.hidden_states ? &hidden : nullptr));
  TS_RETURN_IF_ERROR(backend_->Synchronize());
  ForwardOutput out;
  out.batch = input.batch;
  out.seq_len = input.seq_len;
  out.hidden = config().hidden_size;
  if (packed) {
    out.offsets.assign(1, 0);
    for (int64_t len : input.seq_lens) out.offsets.push_back(out.offsets.back() + len);
  }
  TS_RETURN_IF_ERROR(CopyToHostFloats(*backend_, last, &out.last_hidden_state));
  if (options.pooler) {
    TS_ASSIGN_OR_RETURN(Tensor pooled, model_->Pooler(last));
    TS_RETURN_IF_ERROR(CopyToHostFloats(*backend_, pooled, &out.pooler_output));
  }
  for (const Tensor& h : hidden) {
    out.hidden_states.emplace_back();
    TS_RETURN_IF_ERROR(CopyToHostFloats(*backend_, h, &out.hidden_states.back()));
  }
  return out;
}

EngineMemory BertEngine::memory() const {
  MemoryStats s = backend_->memory_stats();
  return EngineMemory{s.live_bytes, s.peak_bytes, model_->weight_bytes()};
}

void BertEngine::ResetPeakMemory() { backend_->ResetPeakMemory(); }

}  // namespace tierscope
