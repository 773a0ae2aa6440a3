// An event's args: the JSON members of Kineto's "args" object, without the braces, as the
// importers keep them. One reader of them for every report, whatever whitespace the trace
// was written with (PyTorch pretty-prints lists one number per line), and the one-line
// forms the reports show.
#ifndef TIERSCOPE_TRACE_ARGS_H_
#define TIERSCOPE_TRACE_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tierscope {

// The JSON text of member `key`'s value ("" when absent or malformed), without the
// whitespace around it: ArgValue(R"("grid": [30, 4, 1], "block": [128])", "grid") is
// "[30, 4, 1]". Only top-level members match; a key inside a string or a nested object
// does not.
std::string_view ArgValue(std::string_view args, std::string_view key);

// Member `key` as text: a string's contents without its quotes (escapes kept as
// written), any other value as ArgValue gives it; "" when absent.
std::string_view ArgText(std::string_view args, std::string_view key);

// Member `key` as a number (written as a number or as a quoted one), or nullopt when it is
// absent or not wholly a finite number.
std::optional<double> ArgNumber(std::string_view args, std::string_view key);

// Member `key` as a list of 1 to 3 non-negative sizes ("grid": [30, 4, 1]), however it is
// spaced; empty when absent, malformed, or a size above 2^40.
std::vector<int64_t> ArgDims(std::string_view args, std::string_view key);

// `json` with every whitespace character outside strings removed ("[\n 30,\n 4 ]" ->
// "[30,4]"); strings keep their bytes. Text with an unclosed string is kept as written.
std::string CompactJson(std::string_view json);
// The same, appended to *out (the importers' path: no allocation per event).
void CompactJsonInto(std::string_view json, std::string* out);

// A list of tensor shapes ("Input Dims") as one short line: each shape compact, joined by
// 'x' ("[[8944, 1024], [1024, 2816]]" -> "[8944,1024]x[1024,2816]"; a non-tensor input is
// "[]"). Text that is not a list comes back compacted.
std::string ShapesText(std::string_view input_dims);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_ARGS_H_
