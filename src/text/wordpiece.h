// BERT's uncased WordPiece tokenizer, as Hugging Face's BertTokenizer runs it: text
// clean-up (control characters dropped, whitespace unified), spaces around CJK
// ideographs, lower-casing and accent stripping (NFD, combining marks removed), splits at
// whitespace and punctuation, then greedy longest-match-first WordPiece with "##"
// continuations; words over 100 characters, or with no match, become [UNK]. Special
// tokens written in the text ("[MASK]") stay single tokens, as in Hugging Face. Unicode
// properties, case mapping and normalisation come from ICU.
#ifndef TIERSCOPE_TEXT_WORDPIECE_H_
#define TIERSCOPE_TEXT_WORDPIECE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

// The code points in `text` as the tokenizer reads it (an invalid byte sequence counts
// once, as the U+FFFD it reads as): the unit of its offsets.
int64_t CodePoints(std::string_view text);

class WordPieceTokenizer {
 public:
  // Reads vocab.txt: one token per line, its id the line number (from 0). The special
  // tokens [PAD], [UNK], [CLS] and [SEP] must be present.
  static StatusOr<WordPieceTokenizer> Load(const std::string& vocab_path, bool lower_case = true);
  static StatusOr<WordPieceTokenizer> FromVocab(std::vector<std::string> tokens, bool lower_case,
                                                const std::string& source);

  // The word pieces of `text` (valid UTF-8; invalid bytes read as U+FFFD, then dropped).
  std::vector<std::string> Tokenize(std::string_view text) const;
  // Their ids, with [CLS] first and [SEP] last when `special_tokens`.
  std::vector<int32_t> Encode(std::string_view text, bool special_tokens = true) const;
  // One token of a text and the code points it came from, [start, stop) counted in code
  // points of the text, as Hugging Face's tokenizers give offsets: a piece "##ing" spans
  // the "ing" it was read from, in the text's own case and accents.
  struct Piece {
    int32_t id;
    int64_t start, stop;
  };
  // Encode's ids without [CLS] and [SEP], each with its offsets: the pipeline that
  // Tokenize and Encode give, one way or another (every piece is a vocabulary entry, or
  // [UNK]).
  std::vector<Piece> EncodeWithOffsets(std::string_view text) const;
  // Code points of a segment of text (the part between special tokens written in it),
  // counted from its first: [start, stop). The pipeline's own unit.
  struct Span {
    int32_t start, stop;
  };

  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  int32_t cls_id() const { return cls_; }
  int32_t sep_id() const { return sep_; }
  size_t vocab_size() const { return tokens_.size(); }
  const std::string& token(int32_t id) const { return tokens_[static_cast<size_t>(id)]; }
  // Whether `id` is one of the special tokens ([PAD] [UNK] [CLS] [SEP] [MASK]).
  bool is_special(int32_t id) const;

 private:
  WordPieceTokenizer() = default;
  // Appends the pieces of one basic token (already cleaned, lower-cased, split); spans[i]
  // is where word[i] came from in the segment that starts at the text's code point `first`.
  void WordPieces(std::u32string_view word, const Span* spans, int64_t first, std::vector<Piece>* out) const;
  // Appends the pieces of text that holds no special token; its first code point is the
  // text's `first`.
  void TokenizeSegment(std::string_view text, int64_t first, std::vector<Piece>* out) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::string> specials_;  // [PAD] [UNK] [CLS] [SEP] [MASK], those in the vocab
  bool lower_case_ = true;
  int32_t pad_ = 0, unk_ = 0, cls_ = 0, sep_ = 0;
};

}  // namespace tierscope

#endif  // TIERSCOPE_TEXT_WORDPIECE_H_
