// What the server's wire formats (api.cc: TEI and KServe v2; openai_api.cc: OpenAI)
// share: JSON parsing into an error, tokenizing with a length budget, float output.
#ifndef TIERSCOPE_SERVE_API_UTIL_H_
#define TIERSCOPE_SERVE_API_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/api.h"
#include "text/wordpiece.h"

namespace tierscope {

// A 422 Validation error (the formats map it to their own codes).
ApiError InvalidRequest(std::string message);
// Parses `body` as a JSON object, or says why it is not one.
std::optional<ApiError> ParseJsonObject(std::string_view body, nlohmann::json* out);
// j.dump() where invalid UTF-8 becomes U+FFFD rather than an exception.
std::string DumpJson(const nlohmann::json& j);
// The ids of `text` ([CLS] ... [SEP]), at most limits.max_input_length of them: longer
// input is an error naming input `index`, or with `truncate` cut as Hugging Face does
// (the first max-1 tokens, then [SEP]).
// With `offsets`, each id's code points of the text as well ({-1, -1} for [CLS], [SEP]).
// `can_truncate`: the API has a "truncate" field, which the error then offers (OpenAI's has none).
std::optional<ApiError> EncodeInput(const WordPieceTokenizer& tokenizer, std::string_view text,
                                    const ApiLimits& limits, bool truncate, size_t index,
                                    std::vector<int32_t>* ids,
                                    std::vector<std::pair<int64_t, int64_t>>* offsets = nullptr,
                                    bool can_truncate = true);
// [v0,v1,...] with each float as AppendFloat writes it.
void AppendFloats(const std::vector<float>& v, std::string* out);

}  // namespace tierscope

#endif  // TIERSCOPE_SERVE_API_UTIL_H_
