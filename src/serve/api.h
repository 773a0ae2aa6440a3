// The server's wire formats: POST /embed in text-embeddings-inference's shape and the
// KServe v2 (Triton) inference protocol's JSON, parsed and validated into ServeRequests
// (with the HTTP status to answer when they are bad), and their responses written.
#ifndef TIERSCOPE_SERVE_API_H_
#define TIERSCOPE_SERVE_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

// One input of a /tokenize request: its text, its tokens and their code-point offsets
// ({-1, -1} for the [CLS] and [SEP] the request asked for).
struct TokenizedInput {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<std::pair<int64_t, int64_t>> offsets;
};
// POST /tokenize (TEI): {"inputs": "text" | ["text", ...], "add_special_tokens": bool =
// true, "truncate": bool = false}; `out` gets each input's tokens. An input longer than
// the model takes is refused, or with "truncate" cut as /embed cuts it.
std::optional<ApiError> ParseTokenizeRequest(std::string_view body, const ApiLimits& limits,
                                             const WordPieceTokenizer& tokenizer, std::vector<TokenizedInput>* out);
// [[{"id", "text", "special", "start", "stop"}, ...], ...], TEI's shape: a token read
// from the text has its code-point offsets [start, stop) and, as text, those characters
// of the input (so "##ing" reads "ing", in the input's case); [CLS] and [SEP] are special,
// with their token as text and null offsets. (TEI's own offsets are UTF-8 bytes: equal
// on ASCII.)
std::string TokenizeResponse(const WordPieceTokenizer& tokenizer, const std::vector<TokenizedInput>& inputs);

// The parts of a v2 infer request the response needs.
struct InferCall {
  std::string id;                     // echoed when given
  int64_t batch = 0, seq_len = 0;
  std::vector<std::string> outputs;  // last_hidden_state, pooler_output
  std::vector<bool> binary;          // per output: in the binary tensor extension
};
// POST /v2/models/{name}/infer (kserve_api.cc): INT64 (or INT32) input_ids, optional
// attention_mask and token_type_ids, all [batch, seq_len], as JSON data (flat or nested)
// or, with the binary tensor extension, as little-endian bytes after a JSON header of
// `header_length` bytes (the Inference-Header-Content-Length header; 0: all JSON), each
// input's binary_data_size checked against its shape before anything is queued. Optional
// "outputs", each binary with parameters.binary_data, or all with the request's
// parameters.binary_data_output.
std::optional<ApiError> ParseInferRequest(std::string_view body, size_t header_length, const ApiLimits& limits,
                                          bool has_pooler, ServeRequest* out, InferCall* call);
// The value of an Inference-Header-Content-Length header ("" when absent: 0), which must
// be a whole number no larger than the body.
std::optional<ApiError> ParseInferHeaderLength(std::string_view value, size_t body_size, size_t* length);
// The response; binary outputs follow the JSON, whose length goes to `header_length`
// (0 when every output is JSON data) for the Inference-Header-Content-Length header.
std::string InferResponse(const std::string& model_name, const InferCall& call, const ServeResult& result,
                          size_t* header_length);

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
