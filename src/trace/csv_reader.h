// CSV records (RFC 4180 quoting, fields spanning lines, CRLF) read from text with their
// line numbers: the one reader of the CSV files tierscope imports (ncu, torch_npu's
// kernel_details.csv, rocprofv3's traces).
#ifndef TIERSCOPE_TRACE_CSV_READER_H_
#define TIERSCOPE_TRACE_CSV_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tierscope {

// Reads CSV records from text, tracking 1-based line numbers.
class CsvReader {
 public:
  explicit CsvReader(std::string_view text) : text_(text) {}

  bool AtEnd() const { return pos_ >= text_.size(); }
  int64_t line() const { return line_; }

  // The current physical line (without its '\n'), not consumed.
  std::string_view PeekLine() const {
    const size_t end = text_.find('\n', pos_);
    return text_.substr(pos_, end == std::string_view::npos ? std::string_view::npos : end - pos_);
  }
  void SkipLine() {
    const size_t end = text_.find('\n', pos_);
    pos_ = end == std::string_view::npos ? text_.size() : end + 1;
    ++line_;
  }

  // Reads one record; quoted fields may span lines. False when a quoted field is
  // still open at the end of the text (the fields read so far are kept).
  bool ReadRecord(std::vector<std::string>* fields) {
    fields->clear();
    bool ok = true;
    const size_t n = text_.size();
    while (true) {
      std::string field;
      if (pos_ < n && text_[pos_] == '"') {
        ++pos_;
        bool closed = false;
        while (pos_ < n) {
          const char c = text_[pos_++];
          if (c == '"') {
            if (pos_ < n && text_[pos_] == '"') {
              field += '"';
              ++pos_;
            } else {
              closed = true;
              break;
            }
          } else {
            if (c == '\n') ++line_;
            field += c;
          }
        }
        if (!closed) ok = false;
        // Lenient: text between a closing quote and the separator is kept.
        for (; pos_ < n && text_[pos_] != ',' && text_[pos_] != '\n'; ++pos_) {
          if (text_[pos_] != '\r') field += text_[pos_];
        }
      } else {
        for (; pos_ < n && text_[pos_] != ',' && text_[pos_] != '\n'; ++pos_) field += text_[pos_];
        if (!field.empty() && field.back() == '\r') field.pop_back();
      }
      fields->push_back(std::move(field));
      if (pos_ >= n) break;
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      ++pos_;  // '\n'
      ++line_;
      break;
    }
    return ok;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_CSV_READER_H_
