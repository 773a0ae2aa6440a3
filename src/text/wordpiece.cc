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

int64_t CodePoints(std::string_view text) {
  int64_t count = 0;
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(text.size());
  for (int32_t i = 0; i < n; ++count) U8_FWD_1(s, i, n);
  return count;
}

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

void WordPieceTokenizer::WordPieces(const std::u32string& word, const std::vector<Span>& spans,
                                    std::vector<Spanned>* out) const {
  const Span whole{spans.front().start, spans.back().stop};
  if (word.size() > kMaxWordChars) {
    out->push_back({tokens_[static_cast<size_t>(unk_)], unk_, whole.start, whole.stop});
    return;
  }
  std::vector<Spanned> pieces;
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    std::string found;
    int32_t id = unk_;
    for (; end > start; --end) {
      std::string piece = (start > 0 ? "##" : "") + Utf8(word, start, end);
      if (auto it = ids_.find(piece); it != ids_.end()) {
        found = std::move(piece);
        id = it->second;
        break;
      }
    }
    if (end == start) {  // no piece matches: the whole word is unknown
      out->push_back({tokens_[static_cast<size_t>(unk_)], unk_, whole.start, whole.stop});
      return;
    }
    pieces.push_back({std::move(found), id, spans[start].start, spans[end - 1].stop});
    start = end;
  }
  for (auto& p : pieces) out->push_back(std::move(p));
}

std::vector<WordPieceTokenizer::Spanned> WordPieceTokenizer::Pieces(std::string_view text) const {
  // Special tokens written in the text ("[MASK]") are tokens as they stand, as in
  // Hugging Face's tokenizers (added tokens are matched before normalisation).
  std::vector<Spanned> out;
  size_t done = 0;
  int64_t first = 0;  // code points before text[done]
  for (size_t at = text.find('['); at != std::string_view::npos; at = text.find('[', at + 1)) {
    for (const std::string& special : specials_) {
      if (text.compare(at, special.size(), special) != 0) continue;
      const std::string_view before = text.substr(done, at - done);
      TokenizeSegment(before, first, &out);
      first += CodePoints(before);
      out.push_back({special, ids_.at(special), first, first + static_cast<int64_t>(special.size())});  // ASCII
      first += static_cast<int64_t>(special.size());
      done = at + special.size();
      at = done - 1;
      break;
    }
  }
  TokenizeSegment(text.substr(done), first, &out);
  return out;
}

std::vector<std::string> WordPieceTokenizer::Tokenize(std::string_view text) const {
  std::vector<std::string> out;
  for (Spanned& p : Pieces(text)) out.push_back(std::move(p.piece));
  return out;
}

void WordPieceTokenizer::TokenizeSegment(std::string_view text, int64_t first, std::vector<Spanned>* out_ptr) const {
  std::vector<Spanned>& out = *out_ptr;
  if (text.empty()) return;
  // Clean-up and CJK spacing, on code points; origin[i] is where cleaned[i] came from.
  std::u32string cleaned;
  std::vector<int64_t> origin;
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(text.size());
  for (int64_t cp = first, i = 0; i < n; ++cp) {
    UChar32 c;
    int32_t at = static_cast<int32_t>(i);
    U8_NEXT(s, at, n, c);
    i = at;
    if (c < 0) c = 0xFFFD;
    if (c == 0 || c == 0xFFFD || IsControl(c)) continue;
    if (IsWhitespace(c)) {
      cleaned.push_back(U' ');
      origin.push_back(cp);
    } else if (IsCjk(c)) {
      cleaned.append({U' ', static_cast<char32_t>(c), U' '});
      origin.insert(origin.end(), {cp, cp, cp});
    } else {
      cleaned.push_back(static_cast<char32_t>(c));
      origin.push_back(cp);
    }
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  if (U_FAILURE(status)) {  // ICU without its data: nothing can be normalised
    out.push_back({tokens_[static_cast<size_t>(unk_)], unk_, first, first + CodePoints(text)});
    return;
  }
  // NFC, a run at a time between normalisation boundaries (ICU: the runs normalise
  // independently, so this is the NFC of the whole). A run that keeps its length maps
  // one to one; where characters composed, each result spans the characters it took and
  // remembers, part by part of its decomposition, where each came from (so that "e" +
  // U+0301, composed and then stripped of its accent, spans the "e" alone, as in
  // Hugging Face's tokenizers, which never compose).
  std::u32string normalized;
  std::vector<Origin> origins;
  for (size_t a = 0; a < cleaned.size();) {
    size_t b = a + 1;
    while (b < cleaned.size() && !nfc->hasBoundaryBefore(static_cast<UChar32>(cleaned[b]))) ++b;
    const std::u32string run = ToU32(nfc->normalize(FromU32(cleaned.substr(a, b - a)), status));
    normalized += run;
    if (run.size() == b - a) {
      for (size_t i = a; i < b; ++i) origins.push_back({{origin[i], origin[i] + 1}, {}});
    } else {
      std::vector<int64_t> parts;  // the run's decomposition, each part where it came from
      for (size_t i = a; i < b; ++i) {
        UErrorCode st = U_ZERO_ERROR;
        parts.insert(parts.end(), ToU32(nfd->normalize(icu::UnicodeString(static_cast<UChar32>(cleaned[i])), st)).size(),
                     origin[i]);
      }
      size_t used = 0;
      for (char32_t c : run) {
        UErrorCode st = U_ZERO_ERROR;
        const size_t n_parts = ToU32(nfd->normalize(icu::UnicodeString(static_cast<UChar32>(c)), st)).size();
        Origin o{{origin[a], origin[b - 1] + 1}, {}};
        if (used + n_parts <= parts.size()) {
          o.parts.assign(parts.begin() + static_cast<std::ptrdiff_t>(used),
                         parts.begin() + static_cast<std::ptrdiff_t>(used + n_parts));
          o.span = {*std::min_element(o.parts.begin(), o.parts.end()), *std::max_element(o.parts.begin(), o.parts.end()) + 1};
        }
        used += n_parts;
        origins.push_back(std::move(o));
      }
    }
    a = b;
  }

  std::u32string word;
  std::vector<Origin> word_origins;
  const auto flush_word = [&]() {
    if (word.empty()) return;
    std::u32string w;
    std::vector<Span> ws;
    if (lower_case_) {  // lower-case, then strip accents (NFD, combining marks removed)
      // Each character on its own (full mappings, no context: a final sigma stays σ,
      // as Hugging Face lower-cases). What it becomes spans where it came from; part by
      // part where it composed and the parts line up.
      for (size_t i = 0; i < word.size(); ++i) {
        icu::UnicodeString one(static_cast<UChar32>(word[i]));
        UErrorCode st = U_ZERO_ERROR;
        const std::u32string d = ToU32(nfd->normalize(one.toLower(icu::Locale::getRoot()), st));
        const Origin& o = word_origins[i];
        for (size_t t = 0; t < d.size(); ++t) {
          if (u_charType(static_cast<UChar32>(d[t])) == U_NON_SPACING_MARK) continue;
          w.push_back(d[t]);
          ws.push_back(o.parts.size() == d.size() ? Span{o.parts[t], o.parts[t] + 1} : o.span);
        }
      }
    } else {
      w = word;
      for (const Origin& o : word_origins) ws.push_back(o.span);
    }
    // Punctuation splits: each punctuation character is a word of its own.
    std::u32string part;
    std::vector<Span> part_spans;
    const auto flush_part = [&]() {
      if (!part.empty()) WordPieces(part, part_spans, &out);
      part.clear();
      part_spans.clear();
    };
    for (size_t i = 0; i < w.size(); ++i) {
      const UChar32 c = static_cast<UChar32>(w[i]);
      if (IsPunctuation(c)) {
        flush_part();
        WordPieces(std::u32string(1, w[i]), {ws[i]}, &out);
      } else if (SplitsWords(c)) {  // lower-casing can expose one
        flush_part();
      } else {
        part.push_back(w[i]);
        part_spans.push_back(ws[i]);
      }
    }
    flush_part();
  };
  for (size_t i = 0; i < normalized.size(); ++i) {
    if (SplitsWords(static_cast<UChar32>(normalized[i]))) {
      flush_word();
      word.clear();
      word_origins.clear();
    } else {
      word.push_back(normalized[i]);
      word_origins.push_back(std::move(origins[i]));
    }
  }
  flush_word();
}

std::vector<int32_t> WordPieceTokenizer::Encode(std::string_view text, bool special_tokens) const {
  std::vector<int32_t> ids;
  if (special_tokens) ids.push_back(cls_);
  for (const Piece& p : EncodeWithOffsets(text)) ids.push_back(p.id);
  if (special_tokens) ids.push_back(sep_);
  return ids;
}

std::vector<WordPieceTokenizer::Piece> WordPieceTokenizer::EncodeWithOffsets(std::string_view text) const {
  std::vector<Piece> out;
  for (const Spanned& p : Pieces(text)) out.push_back({p.id, p.start, p.stop});
  return out;
}

bool WordPieceTokenizer::is_special(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return false;
  return std::find(specials_.begin(), specials_.end(), tokens_[static_cast<size_t>(id)]) != specials_.end();
}

}  // namespace tierscope
