// WordPiece tokenization: BERT's basic tokenizer on code points (ICU for Unicode
// categories, full lower-casing and NFC/NFD), then greedy longest-match WordPiece.
#include "text/wordpiece.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <fstream>

namespace tierscope {
namespace {

constexpr size_t kMaxWordChars = 100;

bool IsWhitespace(UChar32 c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || u_charType(c) == U_SPACE_SEPARATOR;
}

// Control as Hugging Face's tokenizers (Rust) define it: Cc, Cf, Cs, Co. Unassigned code
// points stay (and become [UNK]), as they do there.
bool IsControl(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
      return true;
    default:
      return false;
  }
}

bool IsPunctuation(UChar32 c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) {
    return true;
  }
  switch (u_charType(c)) {
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

bool IsCjk(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Python's str.split(): any Unicode whitespace separates.
bool SplitsWords(UChar32 c) { return IsWhitespace(c) || u_isUWhiteSpace(c); }

std::u32string ToU32(const icu::UnicodeString& s) {
  std::u32string out;
  for (int32_t i = 0; i < s.length();) {
    const UChar32 c = s.char32At(i);
    out.push_back(static_cast<char32_t>(c));
    i += U16_LENGTH(c);
  }
  return out;
}

icu::UnicodeString FromU32(const std::u32string& s) {
  icu::UnicodeString out;
  for (char32_t c : s) out.append(static_cast<UChar32>(c));
  return out;
}

void AppendUtf8(std::string* out, char32_t c) {
  char buf[4];
  int32_t n = 0;
  UBool error = false;
  U8_APPEND(reinterpret_cast<uint8_t*>(buf), n, 4, static_cast<UChar32>(c), error);
  if (!error) out->append(buf, static_cast<size_t>(n));
}

std::string Utf8(const std::u32string& s, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) AppendUtf8(&out, s[i]);
  return out;
}

}  // namespace

StatusOr<WordPieceTokenizer> WordPieceTokenizer::Load(const std::string& vocab_path, bool lower_case) {
  std::ifstream in(vocab_path, std::ios::binary);
  if (!in) return NotFound(vocab_path + ": cannot open the vocabulary");
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(line);
  }
  return FromVocab(std::move(tokens), lower_case, vocab_path);
}

StatusOr<WordPieceTokenizer> WordPieceTokenizer::FromVocab(std::vector<std::string> tokens,
                                                           bool lower_case, const std::string& source) {
  if (tokens.empty()) return InvalidArgument(source + ": the vocabulary is empty");
  if (tokens.size() > static_cast<size_t>(INT32_MAX)) return InvalidArgument(source + ": too many tokens");
  WordPieceTokenizer t;
  t.lower_case_ = lower_case;
  t.tokens_ = std::move(tokens);
  for (size_t i = 0; i < t.tokens_.size(); ++i) {
    t.ids_.emplace(t.tokens_[i], static_cast<int32_t>(i));  // the first of duplicates wins
  }
  for (auto [name, id] : {std::pair<const char*, int32_t*>{"[PAD]", &t.pad_}, {"[UNK]", &t.unk_},
                          {"[CLS]", &t.cls_}, {"[SEP]", &t.sep_}}) {
    auto it = t.ids_.find(name);
    if (it == t.ids_.end()) return InvalidArgument(source + ": the vocabulary has no " + name + " token");
    *id = it->second;
  }
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    if (t.ids_.count(special) != 0) t.specials_.emplace_back(special);
  }
  return t;
}

void WordPieceTokenizer::WordPieces(const std::u32string& word, std::vector<std::string>* out) const {
  if (word.size() > kMaxWordChars) {
    out->push_back(tokens_[static_cast<size_t>(unk_)]);
    return;
  }
  std::vector<std::string> pieces;
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    std::string found;
    for (; end > start; --end) {
      std::string piece = (start > 0 ? "##" : "") + Utf8(word, start, end);
      if (ids_.count(piece) != 0) {
        found = std::move(piece);
        break;
      }
    }
    if (end == start) {  // no piece matches: the whole word is unknown
      out->push_back(tokens_[static_cast<size_t>(unk_)]);
      return;
    }
    pieces.push_back(std::move(found));
    start = end;
  }
  for (auto& p : pieces) out->push_back(std::move(p));
}

std::vector<std::string> WordPieceTokenizer::Tokenize(std::string_view text) const {
  // Special tokens written in the text ("[MASK]") are tokens as they stand, as in
  // Hugging Face's tokenizers (added tokens are matched before normalisation).
  std::vector<std::string> out;
  size_t done = 0;
  for (size_t at = text.find('['); at != std::string_view::npos; at = text.find('[', at + 1)) {
    for (const std::string& special : specials_) {
      if (text.compare(at, special.size(), special) != 0) continue;
      TokenizeSegment(text.substr(done, at - done), &out);
      out.push_back(special);
      done = at + special.size();
      at = done - 1;
      break;
    }
  }
  TokenizeSegment(text.substr(done), &out);
  return out;
}

void WordPieceTokenizer::TokenizeSegment(std::string_view text, std::vector<std::string>* out_ptr) const {
  std::vector<std::string>& out = *out_ptr;
  if (text.empty()) return;
  // Clean-up and CJK spacing, on code points.
  std::u32string cleaned;
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(text.size());
  for (int32_t i = 0; i < n;) {
    UChar32 c;
    U8_NEXT(s, i, n, c);
    if (c < 0) c = 0xFFFD;
    if (c == 0 || c == 0xFFFD || IsControl(c)) continue;
    if (IsWhitespace(c)) {
      cleaned.push_back(U' ');
    } else if (IsCjk(c)) {
      cleaned.append({U' ', static_cast<char32_t>(c), U' '});
    } else {
      cleaned.push_back(static_cast<char32_t>(c));
    }
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  if (U_FAILURE(status)) {  // ICU without its data: nothing can be normalised
    out.push_back(tokens_[static_cast<size_t>(unk_)]);
    return;
  }
  const std::u32string normalized = ToU32(nfc->normalize(FromU32(cleaned), status));

  std::u32string word;
  const auto flush_word = [&](std::u32string w) {
    if (w.empty()) return;
    if (lower_case_) {  // lower-case, then strip accents (NFD, combining marks removed)
      // Each character on its own (full mappings, no context: a final sigma stays σ,
      // as Hugging Face lower-cases).
      icu::UnicodeString u;
      for (char32_t c : w) {
        icu::UnicodeString one(static_cast<UChar32>(c));
        u.append(one.toLower(icu::Locale::getRoot()));
      }
      UErrorCode st = U_ZERO_ERROR;
      const std::u32string d = ToU32(nfd->normalize(u, st));
      w.clear();
      for (char32_t c : d) {
        if (u_charType(static_cast<UChar32>(c)) != U_NON_SPACING_MARK) w.push_back(c);
      }
    }
    // Punctuation splits: each punctuation character is a word of its own.
    std::u32string part;
    for (char32_t c : w) {
      if (IsPunctuation(static_cast<UChar32>(c))) {
        if (!part.empty()) WordPieces(part, &out);
        part.clear();
        WordPieces(std::u32string(1, c), &out);
      } else if (SplitsWords(static_cast<UChar32>(c))) {  // lower-casing can expose one
        if (!part.empty()) WordPieces(part, &out);
        part.clear();
      } else {
        part.push_back(c);
      }
    }
    if (!part.empty()) WordPieces(part, &out);
  };
  for (char32_t c : normalized) {
    if (SplitsWords(static_cast<UChar32>(c))) {
      flush_word(std::move(word));
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  flush_word(std::move(word));
}

std::vector<int32_t> WordPieceTokenizer::Encode(std::string_view text, bool special_tokens) const {
  std::vector<int32_t> ids;
  if (special_tokens) ids.push_back(cls_);
  for (const std::string& piece : Tokenize(text)) {
    auto it = ids_.find(piece);
    ids.push_back(it == ids_.end() ? unk_ : it->second);
  }
  if (special_tokens) ids.push_back(sep_);
  return ids;
}

bool WordPieceTokenizer::is_special(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return false;
  return std::find(specials_.begin(), specials_.end(), tokens_[static_cast<size_t>(id)]) != specials_.end();
}

}  // namespace tierscope
