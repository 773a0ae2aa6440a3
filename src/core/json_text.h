// JSON values as error messages quote them, and JSON numbers read as whole numbers: one
// definition for every reader of user files and requests. A quoted value is short and
// safe whatever it holds (nested 100,000 deep, megabytes long, invalid UTF-8).
#ifndef TIERSCOPE_CORE_JSON_TEXT_H_
#define TIERSCOPE_CORE_JSON_TEXT_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace tierscope {

// `v` as JSON text for an error message: at most about 64 characters, nested values past
// the third level and long strings cut with "...", invalid UTF-8 replaced.
std::string JsonExcerpt(const nlohmann::json& v);

// `v` as an int64 when it is a whole number: an integer within int64, or a float with no
// fraction below 2^53 in magnitude (1e300 and 2^64 are not); false otherwise.
bool JsonWholeNumber(const nlohmann::json& v, int64_t* out);
// Why JsonWholeNumber refused `v`, for an error message: "has a fraction", "is beyond
// 2^53, where a JSON float stops holding every integer" (floats), "is beyond 64 bits"
// (integers), "is not a number".
std::string NotWholeBecause(const nlohmann::json& v);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_JSON_TEXT_H_
