// Splitting a batch into row blocks (see row_blocks.h).
#include "model/row_blocks.h"

#include <algorithm>
#include <charconv>

namespace tierscope {

int64_t PaddedBlockCount(int64_t batch, int64_t seq_len, int64_t rows) {
  if (rows <= 0 || batch <= 1) return 1;
  const int64_t per = std::max<int64_t>(1, rows / std::max<int64_t>(1, seq_len));
  return (batch + per - 1) / per;
}

std::vector<RowBlock> SplitRowBlocks(const BatchInput& in, int64_t rows) {
  const bool packed = !in.seq_lens.empty();
  const int64_t units = packed ? static_cast<int64_t>(in.seq_lens.size()) : in.batch;
  if (rows <= 0 || units <= 1) return {RowBlock{0, units}};
  std::vector<RowBlock> blocks;
  if (!packed) {  // as few blocks as hold them, the samples shared out evenly
    const int64_t n = PaddedBlockCount(units, in.seq_len, rows);
    for (int64_t i = 0; i < n; ++i) blocks.push_back({units * i / n, units * (i + 1) / n - units * i / n});
    return blocks;
  }
  RowBlock cur;
  int64_t cur_rows = 0;
  for (int64_t s = 0; s < units; ++s) {
    const int64_t len = in.seq_lens[static_cast<size_t>(s)];
    if (cur.count > 0 && cur_rows + len > rows) {
      blocks.push_back(cur);
      cur = RowBlock{s, 0};
      cur_rows = 0;
    }
    ++cur.count;
    cur_rows += len;
  }
  blocks.push_back(cur);
  return blocks;
}

BatchInput SliceBatch(const BatchInput& in, const RowBlock& block) {
  BatchInput out;
  size_t begin = 0, end = 0;
  if (in.seq_lens.empty()) {
    out.batch = block.count;
    out.seq_len = in.seq_len;
    begin = static_cast<size_t>(block.first * in.seq_len);
    end = static_cast<size_t>((block.first + block.count) * in.seq_len);
  } else {
    out.batch = block.count;
    for (int64_t s = 0; s < block.first; ++s) begin += static_cast<size_t>(in.seq_lens[static_cast<size_t>(s)]);
    end = begin;
    out.seq_lens.assign(in.seq_lens.begin() + block.first, in.seq_lens.begin() + block.first + block.count);
    for (int64_t len : out.seq_lens) {
      end += static_cast<size_t>(len);
      out.seq_len = std::max(out.seq_len, len);  // the longest, as a packed batch's seq_len is
    }
  }
  auto slice = [&](const std::vector<int64_t>& v) {
    return v.empty() ? std::vector<int64_t>() : std::vector<int64_t>(v.begin() + begin, v.begin() + end);
  };
  out.input_ids = slice(in.input_ids);
  out.attention_mask = slice(in.attention_mask);
  out.token_type_ids = slice(in.token_type_ids);
  return out;
}

StatusOr<int64_t> ParseRowBlockSetting(const std::string& value, const std::string& what) {
  if (value.empty() || value == "auto") return int64_t{-1};
  if (value == "off") return int64_t{0};
  int64_t rows = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, rows);
  if (ec != std::errc() || ptr != end || rows <= 0) {
    return InvalidArgument(what + "=" + value +
                           ": expected auto, off or a positive count of token rows");
  }
  return rows;
}

}  // namespace tierscope
