// Reads Nsight Compute CSV output (`ncu --csv --page details`, also the wide
// `--page raw` layout) into per-kernel metric lists for the tier-3 kernel inspector.
// This is not a timeline: nothing here goes into a Trace.
#ifndef TIERSCOPE_TRACE_NCU_IMPORT_H_
#define TIERSCOPE_TRACE_NCU_IMPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

// One "Metric Name"/"Metric Value" row. `raw` is the value as written ("1,234.56",
// "n/a", "CachePreferNone", "(256, 1, 1)"); `value` is it parsed when it is a number
// (thousands separators and a trailing '%' allowed), and then has_value is true.
struct NcuMetric {
  std::string section, name, unit, raw;
  double value = 0;
  bool has_value = false;
  bool set_aside = false;  // a number outside what the counter can take (NcuReport::implausible)
};

// A rule result row (Rule Name / Rule Type / Rule Description), e.g. SOLBottleneck.
struct NcuRule {
  std::string section, name, type, description;
  std::string speedup_type;  // "global", "local" or ""
  double speedup = 0;        // estimated speedup, %
  bool has_speedup = false;
};

// One profiled kernel launch (one "ID").
struct NcuKernel {
  int64_t id = 0;
  std::string name;
  std::string block_size, grid_size, device, cc;  // as written: "(256, 1, 1)", "8.0"
  int64_t process_id = 0;
  std::string process_name, context, stream;
  std::vector<NcuMetric> metrics;
  std::vector<NcuRule> rules;

  // First metric called `metric_name` (in any section), or nullptr.
  const NcuMetric* Find(std::string_view metric_name) const;
  // The metric in that section, or nullptr.
  const NcuMetric* Find(std::string_view section, std::string_view metric_name) const;
  // The metric's numeric value; nullopt when absent or not a number ("n/a").
  std::optional<double> Value(std::string_view metric_name) const;
};

struct NcuReport {
  std::string source;
  std::vector<NcuKernel> kernels;  // in order of first appearance
  int64_t rows = 0;                // data rows read (log lines and blank lines excluded)
  int64_t malformed = 0;           // rows skipped
  // Values no counter can take (NaN, a negative time, size or cycle count) or outside
  // their logical range (a share past 100%: ncu does not clamp): kept as written for
  // display, has_value false, so nothing is concluded from them.
  int64_t implausible = 0;
  std::vector<std::string> notes;  // why rows were skipped or values set aside (first few), layout remarks

  const NcuKernel* FindKernel(int64_t id) const;
};

// Reads the file at `path`. Errors: unreadable file; no ncu CSV header in it.
StatusOr<NcuReport> ImportNcuCsv(const std::string& path);

// Parses CSV text; `source` names it in errors and in NcuReport::source. Lines before
// the header that are not CSV (==PROF== logs, the program's own output) are skipped, as
// are ==...== lines after it. A row whose fields do not fit the header is counted in
// `malformed`, never fatal.
StatusOr<NcuReport> ParseNcuCsv(std::string_view text, const std::string& source);

// "1,234.56" -> 1234.56, "87.5%" -> 87.5, "-3", "1e+06"; false for "n/a", "", "1,5",
// "(256, 1, 1)" and anything else that is not wholly a finite number.
bool ParseNcuNumber(std::string_view raw, double* out);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_NCU_IMPORT_H_
