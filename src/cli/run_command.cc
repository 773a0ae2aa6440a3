// `tierscope run`: JSON inputs in, last_hidden_state (+ pooler, hidden states) out.
#include "cli/run_command.h"

#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/json_text.h"
#include "core/npy.h"
#include "core/paths.h"
#include "workload/bench.h"

namespace tierscope {
namespace {

using nlohmann::json;

// Reads a [rows][cols] integer matrix from `j[key]`; cols is fixed by the first row
// (or must equal *cols when already set).
Status ReadMatrix(const json& j, const char* key, const std::string& src, bool required,
                  int64_t* rows, int64_t* cols, std::vector<int64_t>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return InvalidArgument(src + ": missing '" + key + "'");
    return OkStatus();
  }
  if (!it->is_array() || it->empty()) {
    return InvalidArgument(src + ": '" + key + "' must be a non-empty list of lists of integers");
  }
  if (*rows >= 0 && static_cast<int64_t>(it->size()) != *rows) {
    return InvalidArgument(src + ": '" + key + "' has " + std::to_string(it->size()) +
                           " rows, input_ids has " + std::to_string(*rows));
  }
  *rows = static_cast<int64_t>(it->size());
  for (size_t r = 0; r < it->size(); ++r) {
    const json& row = (*it)[r];
    if (!row.is_array() || row.empty()) {
      return InvalidArgument(src + ": '" + key + "'[" + std::to_string(r) +
                             "] must be a non-empty list of integers");
    }
    if (*cols < 0) *cols = static_cast<int64_t>(row.size());
    if (static_cast<int64_t>(row.size()) != *cols) {
      return InvalidArgument(src + ": '" + key + "'[" + std::to_string(r) + "] has length " +
                             std::to_string(row.size()) + ", expected " + std::to_string(*cols) +
                             " (all rows must have equal length)");
    }
    for (size_t c = 0; c < row.size(); ++c) {
      int64_t v = 0;
      if (!row[c].is_number_integer() || !JsonWholeNumber(row[c], &v)) {
        const std::string why = row[c].is_number_integer() ? " (beyond 64 bits)"
                                : row[c].is_number()       ? " (ids are written without a decimal point or exponent)"
                                                           : "";
        return InvalidArgument(src + ": '" + key + "'[" + std::to_string(r) + "][" + std::to_string(c) +
                               "] is not an integer: " + JsonExcerpt(row[c]) + why);
      }
      out->push_back(v);
    }
  }
  return OkStatus();
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Nests a flat array as JSON lists of the given shape.
json Nest(const float* data, const std::vector<int64_t>& shape, size_t dim = 0) {
  json a = json::array();
  if (dim + 1 == shape.size()) {
    for (int64_t i = 0; i < shape[dim]; ++i) a.push_back(data[i]);
    return a;
  }
  int64_t stride = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
  for (int64_t i = 0; i < shape[dim]; ++i) a.push_back(Nest(data + i * stride, shape, dim + 1));
  return a;
}

}  // namespace

StatusOr<BatchInput> ParseInputsJson(const std::string& text, const std::string& src) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(src + ": not valid JSON");
  if (!j.is_object()) return InvalidArgument(src + ": expected a JSON object with 'input_ids'");
  for (auto it = j.begin(); it != j.end(); ++it) {  // a misspelt mask would otherwise be ignored
    if (it.key() != "input_ids" && it.key() != "attention_mask" && it.key() != "token_type_ids") {
      return InvalidArgument(src + ": unknown key " + JsonExcerpt(json(it.key())) +
                             " (the keys are input_ids, attention_mask and token_type_ids)");
    }
  }
  BatchInput in;
  int64_t rows = -1, cols = -1;
  TS_RETURN_IF_ERROR(ReadMatrix(j, "input_ids", src, true, &rows, &cols, &in.input_ids));
  TS_RETURN_IF_ERROR(ReadMatrix(j, "attention_mask", src, false, &rows, &cols, &in.attention_mask));
  TS_RETURN_IF_ERROR(ReadMatrix(j, "token_type_ids", src, false, &rows, &cols, &in.token_type_ids));
  in.batch = rows;
  in.seq_len = cols;
  return in;
}

Status RunModel(const RunOptions& o) {
  TS_ASSIGN_OR_RETURN(DType dtype, ParseRunDType(o.dtype));
  const bool as_json = EndsWith(o.output_path, ".json");
  const bool as_npy = EndsWith(o.output_path, ".npy");
  const bool as_npz = EndsWith(o.output_path, ".npz");
  if (!as_json && !as_npy && !as_npz) {
    return InvalidArgument("--output " + o.output_path + ": the name must end in .json, .npy or .npz");
  }
  if (o.threads < 0) return InvalidArgument("--threads must be >= 0");
  TS_ASSIGN_OR_RETURN(std::string text, ReadFile(o.inputs_path));
  TS_ASSIGN_OR_RETURN(BatchInput in, ParseInputsJson(text, o.inputs_path));
  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  EngineOptions eo;
  eo.dtype = dtype;
  eo.threads = o.threads;
  eo.device = o.device;
  TS_ASSIGN_OR_RETURN(auto engine, BertEngine::Load(dir, eo));
  if (Status s = engine->Validate(in); !s.ok()) return s.WithContext(o.inputs_path);
  ForwardOptions fo;
  fo.pooler = o.pooler;
  fo.hidden_states = o.hidden_states;
  TS_ASSIGN_OR_RETURN(ForwardOutput out, engine->Forward(in, fo));

  const std::vector<int64_t> hshape = {out.batch, out.seq_len, out.hidden};
  const std::vector<int64_t> pshape = {out.batch, out.hidden};
  std::vector<float> stacked;
  std::vector<int64_t> sshape;
  if (o.hidden_states) {
    for (const auto& h : out.hidden_states) stacked.insert(stacked.end(), h.begin(), h.end());
    sshape = {static_cast<int64_t>(out.hidden_states.size()), out.batch, out.seq_len, out.hidden};
  }
  if (as_json) {
    json j;
    j["last_hidden_state"] = Nest(out.last_hidden_state.data(), hshape);
    if (o.pooler) j["pooler_output"] = Nest(out.pooler_output.data(), pshape);
    if (o.hidden_states) j["hidden_states"] = Nest(stacked.data(), sshape);
    return WriteFileAtomic(o.output_path, j.dump() + "\n");
  }
  if (as_npz) {
    std::vector<NpyArray> arrays = {{"last_hidden_state", hshape, out.last_hidden_state.data()}};
    if (o.pooler) arrays.push_back({"pooler_output", pshape, out.pooler_output.data()});
    if (o.hidden_states) arrays.push_back({"hidden_states", sshape, stacked.data()});
    return WriteNpz(o.output_path, arrays);
  }
  // .npy: one array per file; extras go beside it as <stem>.<name>.npy.
  const std::string stem = o.output_path.substr(0, o.output_path.size() - 4);
  TS_RETURN_IF_ERROR(WriteNpy(o.output_path, hshape, out.last_hidden_state.data()));
  if (o.pooler) TS_RETURN_IF_ERROR(WriteNpy(stem + ".pooler_output.npy", pshape, out.pooler_output.data()));
  if (o.hidden_states) TS_RETURN_IF_ERROR(WriteNpy(stem + ".hidden_states.npy", sshape, stacked.data()));
  return OkStatus();
}

namespace cli {

void RegisterRun(CLI::App& app, std::vector<Command>* out) {
  auto run = std::make_shared<RunOptions>();
  auto* r = app.add_subcommand("run", "Run the model on input ids from a JSON file");
  r->add_option("--model", run->model_dir, "Hugging Face model directory (default: the built-in model)");
  r->add_option("--inputs", run->inputs_path,
                "JSON with input_ids, optional attention_mask and token_type_ids (lists of lists)")
      ->required();
  r->add_option("--output", run->output_path, "output file: .json, .npy or .npz")->required();
  r->add_option("--dtype", run->dtype, "fp32 | fp16 | bf16 | int8 (CPU: dynamic quantization)")->capture_default_str();
  r->add_flag("--pooler", run->pooler, "also write pooler_output");
  r->add_flag("--hidden-states", run->hidden_states,
              "also write hidden_states [layers+1, B, S, H] (embeddings and every layer)");
  r->add_option("--threads", run->threads, "worker threads (0: all cores)")->capture_default_str();
  r->add_option("--device", run->device, "cpu | cuda | cuda:N")->capture_default_str();
  out->push_back({r, [run] {
                    Status s = RunModel(*run);
                    return s.ok() ? 0 : Fail(s);
                  }});
}

}  // namespace cli
}  // namespace tierscope
