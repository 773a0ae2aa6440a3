// OpenAI's embeddings API (POST /v1/embeddings), which most applications and RAG
// frameworks call: its request parsed into a ServeRequest, its response and its error
// shape written.
#ifndef TIERSCOPE_SERVE_OPENAI_API_H_
#define TIERSCOPE_SERVE_OPENAI_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "serve/api.h"
#include "serve/service.h"
#include "text/wordpiece.h"

namespace tierscope {

// What the response needs from the request.
struct OpenAiCall {
  std::string model;
  bool base64 = false;        // encoding_format "base64": little-endian float32 bytes
  int64_t prompt_tokens = 0;  // every input's tokens, [CLS] and [SEP] included
};

// {"input": "text" | ["text", ...] | [id, ...] | [[id, ...], ...], "model": name,
// "encoding_format": "float" | "base64", "user": any}. Token arrays are this model's
// WordPiece ids, taken as they are (as /tokenize gives them, [CLS] and [SEP] included).
// `dimensions` is refused: the model has one output size. Embeddings are pooled as the
// model directory says and L2-normalised, as OpenAI's are. `tokenizer` may be null (a
// directory without vocab.txt): then only token arrays are accepted.
std::optional<ApiError> ParseOpenAiEmbeddingsRequest(std::string_view body, const ApiLimits& limits,
                                                     const WordPieceTokenizer* tokenizer, Pooling pooling,
                                                     const std::string& model_name, ServeRequest* out,
                                                     OpenAiCall* call);

// {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": ...}],
// "model": ..., "usage": {"prompt_tokens": n, "total_tokens": n}}.
std::string OpenAiEmbeddingsResponse(const OpenAiCall& call, const ServeResult& result);

// OpenAI's error shape: {"error": {"message", "type", "param", "code"}}, and the status
// OpenAI answers with (400 where the other formats say 422).
std::string OpenAiErrorBody(const ApiError& e);
int OpenAiErrorStatus(const ApiError& e);

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_OPENAI_API_H_
