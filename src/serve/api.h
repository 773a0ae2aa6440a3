// The server's wire formats: POST /embed in text-embeddings-inference's shape and the
// KServe v2 (Triton) inference protocol's JSON, parsed and validated into ServeRequests
// (with the HTTP status to answer when they are bad), and their responses written.
#ifndef TIERSCOPE_SERVE_API_H_
#define TIERSCOPE_SERVE_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/service.h"
#include "text/wordpiece.h"
#include "tierscope/engine.h"

namespace tierscope {

struct ApiError {
  int code = 422;
  std::string message;
  std::string type = "Validation";  // TEI's error_type: Validation, Overloaded, Backend, ...
};

struct ApiLimits {
  int64_t max_client_batch_size = 32;  // inputs per request (more: 413)
  int64_t max_input_length = 512;      // tokens per input, [CLS] and [SEP] included
  int64_t vocab_size = 0;
  int64_t type_vocab_size = 2;
};

// `{"error": ..., "error_type": ...}`.
std::string ErrorBody(const ApiError& e);

// POST /embed: {"inputs": "text" | ["text", ...], "normalize": bool = true,
// "truncate": bool = false}. Fills `out` with the tokenized inputs.
std::optional<ApiError> ParseEmbedRequest(std::string_view body, const ApiLimits& limits,
                                          const WordPieceTokenizer& tokenizer, Pooling pooling,
                                          ServeRequest* out);
// [[floats], ...], one embedding per input.
std::string EmbedResponse(const ServeResult& result);

// The parts of a v2 infer request the response needs.
struct InferCall {
  std::string id;                     // echoed when given
  int64_t batch = 0, seq_len = 0;
  std::vector<std::string> outputs;  // last_hidden_state, pooler_output
};
// POST /v2/models/{name}/infer: INT64 (or INT32) input_ids, optional attention_mask and
// token_type_ids, all [batch, seq_len], data flat or nested; optional "outputs".
std::optional<ApiError> ParseInferRequest(std::string_view body, const ApiLimits& limits,
                                          bool has_pooler, ServeRequest* out, InferCall* call);
std::string InferResponse(const std::string& model_name, const InferCall& call,
                          const ServeResult& result);

// GET /v2/models/{name}: name, versions, platform, inputs and outputs with their shapes.
std::string ModelMetadata(const std::string& model_name, const BertConfig& config,
                          bool has_pooler);

// The pooling a sentence-transformers directory asks for (1_Pooling/config.json), or
// nullopt when the directory has no such file. DataLoss when the file is unreadable.
StatusOr<std::optional<Pooling>> PoolingFromModelDir(const std::string& dir);
// sentence_bert_config.json's max_seq_length, or 0 when absent.
int64_t MaxSeqLengthFromModelDir(const std::string& dir);
// tokenizer_config.json's do_lower_case (default true).
bool LowerCaseFromModelDir(const std::string& dir);

// Appends `v` as the shortest JSON number that reads back as the same float.
void AppendFloat(float v, std::string* out);

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_API_H_
