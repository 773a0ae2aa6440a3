// WordPieceTokenizer on a small vocabulary: greedy longest match with ## pieces, the
// 100-character rule, punctuation and CJK splits, accents and case, special tokens in
// text, ids with [CLS]/[SEP], and clear errors for unusable vocabularies.
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
