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

#include "core/paths.h"

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

std::string Utf8(std::u32string_view s, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) AppendUtf8(&out, s[i]);
  return out;
}

// A segment cleaned (control characters dropped, whitespace unified, CJK spaced) and
// NFC-composed, with where each character came from, in code points of the segment.
struct NfcText {
  using Span = WordPieceTokenizer::Span;
  std::u32string chars;
  // Per character: the code point it came from (>= 0), or -(k + 1) for composed[k].
  std::vector<int32_t> source;
  struct Composed {
    Span span;                   // the characters it took
    std::vector<int32_t> parts;  // its NFD, part by part: the code point each came from
  };
  std::vector<Composed> composed;

  Span SpanOf(size_t i) const {
    const int32_t s = source[i];
    return s >= 0 ? Span{s, s + 1} : composed[static_cast<size_t>(-s - 1)].span;
  }
  const std::vector<int32_t>* PartsOf(size_t i) const {
    return source[i] >= 0 ? nullptr : &composed[static_cast<size_t>(-source[i] - 1)].parts;
  }
};

size_t NfdLength(const icu::Normalizer2& nfd, char32_t c) {
  UErrorCode st = U_ZERO_ERROR;
  return static_cast<size_t>(nfd.normalize(icu::UnicodeString(static_cast<UChar32>(c)), st).countChar32());
}

// NFC a run at a time between normalisation boundaries (ICU: the runs normalise
// independently, so this is the NFC of the whole). A run that keeps its length maps one
// to one; where characters composed, each result spans the characters it took and keeps,
// part by part of its decomposition, where each came from, so that "e" + U+0301, composed
// and then stripped of its accent, spans the "e" alone (as in Hugging Face's tokenizers,
// which never compose). Both follow the input's order, which the canonical reordering of
// two or more marks can change: then only those marks' own spans are off, and the uncased
// path strips them.
NfcText CleanAndCompose(std::string_view text, const icu::Normalizer2& nfc, const icu::Normalizer2& nfd) {
  std::u32string cleaned;
  std::vector<int32_t> origin;  // cleaned[i] came from the segment's code point origin[i]
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(text.size());
  for (int32_t cp = 0, i = 0; i < n; ++cp) {
    UChar32 c;
    U8_NEXT(s, i, n, c);
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
  NfcText out;
  out.chars.reserve(cleaned.size());
  out.source.reserve(cleaned.size());
  for (size_t a = 0; a < cleaned.size();) {
    size_t b = a + 1;
    while (b < cleaned.size() && !nfc.hasBoundaryBefore(static_cast<UChar32>(cleaned[b]))) ++b;
    if (b - a == 1 && nfc.isInert(static_cast<UChar32>(cleaned[a]))) {  // the common case
      out.chars.push_back(cleaned[a]);
      out.source.push_back(origin[a]);
      a = b;
      continue;
    }
    UErrorCode st = U_ZERO_ERROR;
    const std::u32string run = ToU32(nfc.normalize(FromU32(cleaned.substr(a, b - a)), st));
    out.chars += run;
    if (run.size() == b - a) {
      out.source.insert(out.source.end(), origin.begin() + static_cast<std::ptrdiff_t>(a),
                        origin.begin() + static_cast<std::ptrdiff_t>(b));
    } else {
      std::vector<int32_t> parts;  // the run's decomposition, each part where it came from
      for (size_t i = a; i < b; ++i) parts.insert(parts.end(), NfdLength(nfd, cleaned[i]), origin[i]);
      size_t used = 0;
      for (char32_t c : run) {
        const size_t n_parts = NfdLength(nfd, c);
        NfcText::Composed k{{origin[a], origin[b - 1] + 1}, {}};
        if (used + n_parts <= parts.size()) {
          k.parts.assign(parts.begin() + static_cast<std::ptrdiff_t>(used),
                         parts.begin() + static_cast<std::ptrdiff_t>(used + n_parts));
          k.span = {*std::min_element(k.parts.begin(), k.parts.end()),
                    *std::max_element(k.parts.begin(), k.parts.end()) + 1};
        }
        used += n_parts;
        out.composed.push_back(std::move(k));
        out.source.push_back(-static_cast<int32_t>(out.composed.size()));
      }
    }
    a = b;
  }
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
  TS_RETURN_IF_ERROR(CheckReadableFile(vocab_path));
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

void WordPieceTokenizer::WordPieces(std::u32string_view word, const Span* spans, int64_t first,
                                    std::vector<Piece>* out) const {
  const int64_t whole_start = first + spans[0].start, whole_stop = first + spans[word.size() - 1].stop;
  if (word.size() > kMaxWordChars) {
    out->push_back({unk_, whole_start, whole_stop});
    return;
  }
  const size_t before = out->size();
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    int32_t id = unk_;
    for (; end > start; --end) {
      if (auto it = ids_.find((start > 0 ? "##" : "") + Utf8(word, start, end)); it != ids_.end()) {
        id = it->second;
        break;
      }
    }
    if (end == start) {  // no piece matches: the whole word is unknown
      out->resize(before);
      out->push_back({unk_, whole_start, whole_stop});
      return;
    }
    out->push_back({id, first + spans[start].start, first + spans[end - 1].stop});
    start = end;
  }
}

std::vector<WordPieceTokenizer::Piece> WordPieceTokenizer::EncodeWithOffsets(std::string_view text) const {
  // Special tokens written in the text ("[MASK]") are tokens as they stand, as in
  // Hugging Face's tokenizers (added tokens are matched before normalisation).
  std::vector<Piece> out;
  size_t done = 0;
  int64_t first = 0;  // code points before text[done]
  for (size_t at = text.find('['); at != std::string_view::npos; at = text.find('[', at + 1)) {
    for (const std::string& special : specials_) {
      if (text.compare(at, special.size(), special) != 0) continue;
      const std::string_view before = text.substr(done, at - done);
      TokenizeSegment(before, first, &out);
      first += CodePoints(before);
      out.push_back({ids_.at(special), first, first + static_cast<int64_t>(special.size())});  // ASCII
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
  for (const Piece& p : EncodeWithOffsets(text)) out.push_back(token(p.id));
  return out;
}

void WordPieceTokenizer::TokenizeSegment(std::string_view text, int64_t first, std::vector<Piece>* out_ptr) const {
  std::vector<Piece>& out = *out_ptr;
  if (text.empty()) return;
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
  if (U_FAILURE(status)) {  // ICU without its data: nothing can be normalised
    out.push_back({unk_, first, first + CodePoints(text)});
    return;
  }
  const NfcText normalized = CleanAndCompose(text, *nfc, *nfd);

  // Words (between whitespace) of the normalised text, as ranges of it; each is
  // lower-cased and stripped of accents into w, with ws where each of its characters
  // came from, then split at punctuation into basic tokens.
  std::u32string w;
  std::vector<Span> ws;
  const auto flush_word = [&](size_t begin, size_t end) {
    if (begin == end) return;
    w.clear();
    ws.clear();
    for (size_t i = begin; i < end; ++i) {
      const Span whole = normalized.SpanOf(i);
      if (!lower_case_) {
        w.push_back(normalized.chars[i]);
        ws.push_back(whole);
        continue;
      }
      // Lower-cased each character on its own (full mappings, no context: a final sigma
      // stays σ, as Hugging Face lower-cases), then NFD with combining marks removed.
      // What it becomes spans where it came from; part by part where it composed and the
      // parts line up.
      icu::UnicodeString one(static_cast<UChar32>(normalized.chars[i]));
      UErrorCode st = U_ZERO_ERROR;
      const std::u32string d = ToU32(nfd->normalize(one.toLower(icu::Locale::getRoot()), st));
      const std::vector<int32_t>* parts = normalized.PartsOf(i);
      for (size_t t = 0; t < d.size(); ++t) {
        if (u_charType(static_cast<UChar32>(d[t])) == U_NON_SPACING_MARK) continue;
        w.push_back(d[t]);
        ws.push_back(parts != nullptr && parts->size() == d.size() ? Span{(*parts)[t], (*parts)[t] + 1} : whole);
      }
    }
    // Punctuation splits: each punctuation character is a basic token of its own.
    size_t part = 0;
    for (size_t i = 0; i <= w.size(); ++i) {
      const UChar32 c = i < w.size() ? static_cast<UChar32>(w[i]) : U' ';
      const bool punct = i < w.size() && IsPunctuation(c);
      if (!punct && !SplitsWords(c)) continue;  // lower-casing can expose a split
      if (i > part) WordPieces(std::u32string_view(w).substr(part, i - part), ws.data() + part, first, &out);
      if (punct) WordPieces(std::u32string_view(w).substr(i, 1), ws.data() + i, first, &out);
      part = i + 1;
    }
  };
  size_t word = 0;
  for (size_t i = 0; i < normalized.chars.size(); ++i) {
    if (!SplitsWords(static_cast<UChar32>(normalized.chars[i]))) continue;
    flush_word(word, i);
    word = i + 1;
  }
  flush_word(word, normalized.chars.size());
}

std::vector<int32_t> WordPieceTokenizer::Encode(std::string_view text, bool special_tokens) const {
  std::vector<int32_t> ids;
  if (special_tokens) ids.push_back(cls_);
  for (const Piece& p : EncodeWithOffsets(text)) ids.push_back(p.id);
  if (special_tokens) ids.push_back(sep_);
  return ids;
}


bool WordPieceTokenizer::is_special(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return false;
  return std::find(specials_.begin(), specials_.end(), tokens_[static_cast<size_t>(id)]) != specials_.end();
}

}  // namespace tierscope
