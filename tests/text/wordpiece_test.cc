// WordPieceTokenizer on a small vocabulary: greedy longest match with ## pieces, the
// 100-character rule, punctuation and CJK splits, accents and case, special tokens in
// text, ids with [CLS]/[SEP], code-point offsets, and clear errors for unusable
// vocabularies.
#include "text/wordpiece.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

WordPieceTokenizer Tiny() {
  auto t = WordPieceTokenizer::FromVocab(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "una", "##ffa",
       "cafe", "!", ",", "hello", "东", "a", "##a"},
      true, "tiny");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

using Tokens = std::vector<std::string>;

TEST(WordPiece, GreedyLongestMatchFirstWithContinuations) {
  const WordPieceTokenizer t = Tiny();
  // "una" beats "un", then "##ffa" beats "##aff"; no "##ble" is left to finish it, and
  // greedy matching never backtracks to un ##aff ##able: the whole word is unknown.
  EXPECT_EQ(t.Tokenize("unaffable"), (Tokens{"[UNK]"}));
  EXPECT_EQ(t.Tokenize("unaffa"), (Tokens{"una", "##ffa"}));
  EXPECT_EQ(t.Tokenize("unaffxyz"), (Tokens{"[UNK]"}));
}

TEST(WordPiece, CaseAccentsPunctuationAndCjk) {
  const WordPieceTokenizer t = Tiny();
  EXPECT_EQ(t.Tokenize("  HÉLLO,\tCafé!东东 "),
            (Tokens{"hello", ",", "cafe", "!", "东", "东"}));
  EXPECT_EQ(t.Tokenize("he\x01llo\u200b"), (Tokens{"hello"}));  // control and format chars dropped
}

TEST(WordPiece, WordsOverOneHundredCharactersAreUnknown) {
  const WordPieceTokenizer t = Tiny();
  EXPECT_EQ(t.Tokenize(std::string(100, 'a')).size(), 100u);  // a ##a ##a ...
  EXPECT_EQ(t.Tokenize(std::string(101, 'a')), (Tokens{"[UNK]"}));
}

TEST(WordPiece, SpecialTokensInTextAndEncodedIds) {
  const WordPieceTokenizer t = Tiny();
  EXPECT_EQ(t.Tokenize("hello[MASK]cafe [SEP]"), (Tokens{"hello", "[MASK]", "cafe", "[SEP]"}));
  EXPECT_EQ(t.Encode("hello, cafe"), (std::vector<int32_t>{2, 13, 12, 10, 3}));
  EXPECT_EQ(t.Encode("hello", false), (std::vector<int32_t>{13}));
  EXPECT_EQ(t.Encode("zzz"), (std::vector<int32_t>{2, 1, 3}));
  EXPECT_EQ(t.Encode(""), (std::vector<int32_t>{2, 3}));
}

TEST(WordPiece, OffsetsCountCodePointsOfTheTextAsItWasWritten) {
  const WordPieceTokenizer t = Tiny();
  using P = WordPieceTokenizer::Piece;
  auto spans = [&](std::string_view text) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const P& p : t.EncodeWithOffsets(text)) out.emplace_back(p.start, p.stop);
    return out;
  };
  using Spans = std::vector<std::pair<int64_t, int64_t>>;
  // Pieces span their own characters; upper case and accents are the text's own.
  EXPECT_EQ(spans("HÉLLO, unaffa!"), (Spans{{0, 5}, {5, 6}, {7, 10}, {10, 13}, {13, 14}}));
  // "e" + U+0301 composes, then loses the accent: "cafe" spans c a f e, not the accent.
  EXPECT_EQ(spans("cafe\u0301 \u4e1c"), (Spans{{0, 4}, {6, 7}}));
  // A special token in the text, an unknown word, a control character dropped.
  EXPECT_EQ(spans("zz[MASK]he\x01llo"), (Spans{{0, 2}, {2, 8}, {8, 14}}));
  std::vector<int32_t> ids;
  for (const P& p : t.EncodeWithOffsets("hello, cafe")) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<int32_t>{13, 12, 10}));  // Encode's ids, without [CLS]/[SEP]
  EXPECT_EQ(CodePoints("\u4e1c\u00e9x"), 3);
}

TEST(WordPiece, UnusableVocabulariesAreClearErrors) {
  EXPECT_TRUE(Contains(WordPieceTokenizer::FromVocab({}, true, "v.txt").status().message(),
                       "v.txt: the vocabulary is empty"));
  EXPECT_TRUE(Contains(WordPieceTokenizer::FromVocab({"[PAD]", "[CLS]", "[SEP]"}, true, "v.txt")
                           .status().message(), "no [UNK] token"));
  auto missing = WordPieceTokenizer::Load("/nonexistent/vocab.txt");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tierscope
