// `tierscope tokenize`: BERT WordPiece on --text, or on JSON strings one per line on stdin.
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/paths.h"
#include "text/wordpiece.h"

namespace tierscope::cli {
namespace {

struct TokenizeFlags {
  std::string vocab, text;
  bool cased = false, no_special = false;
  bool has_text = false;
};

int Run(const TokenizeFlags& f) {
  std::string path = f.vocab;
  if (IsDirectory(path)) path += "/vocab.txt";
  auto tok = WordPieceTokenizer::Load(path, !f.cased);
  if (!tok.ok()) return Fail(tok.status());
  auto emit = [&](const std::string& text) {
    // One pass: the pieces' ids, their tokens (every piece is a vocabulary entry or
    // [UNK]) and each one's code points of the text, [start, stop), as Hugging Face's
    // fast tokenizers give offset_mapping.
    nlohmann::json tokens = nlohmann::json::array(), ids = nlohmann::json::array(), offsets = nlohmann::json::array();
    if (!f.no_special) ids.push_back(tok->cls_id());
    for (const WordPieceTokenizer::Piece& p : tok->EncodeWithOffsets(text)) {
      tokens.push_back(tok->token(p.id));
      ids.push_back(p.id);
      offsets.push_back({p.start, p.stop});
    }
    if (!f.no_special) ids.push_back(tok->sep_id());
    nlohmann::json j;
    j["tokens"] = std::move(tokens);
    j["ids"] = std::move(ids);
    j["offsets"] = std::move(offsets);
    std::cout << j.dump() << "\n";
  };
  if (f.has_text) {
    emit(f.text);
    return 0;
  }
  std::string line;
  for (int64_t n = 1; std::getline(std::cin, line); ++n) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_string()) {
      return Fail(InvalidArgument("stdin line " + std::to_string(n) + ": expected a JSON string"));
    }
    emit(j.get<std::string>());
  }
  return 0;
}

}  // namespace

void RegisterTokenize(CLI::App& app, std::vector<Command>* out) {
  auto f = std::make_shared<TokenizeFlags>();
  auto* tk = app.add_subcommand("tokenize",
                                "BERT WordPiece tokenization: --text, or JSON strings one per line on stdin");
  tk->add_option("--vocab", f->vocab, "vocab.txt (or a model directory holding one)")->required();
  auto* text = tk->add_option("--text", f->text, "the text to tokenize (else JSON-lines strings from stdin)");
  tk->add_flag("--cased", f->cased, "keep case and accents (default: uncased, as bert-base-uncased)");
  tk->add_flag("--no-special-tokens", f->no_special, "leave out [CLS] and [SEP]");
  out->push_back({tk, [f, text] {
                    f->has_text = text->count() > 0;
                    return Run(*f);
                  }});
}

}  // namespace tierscope::cli
