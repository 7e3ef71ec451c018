// A Parser that owns its grammar and lexicon, loaded from a grammar argument: the one way `cky
// parse`, the Python package (python/) and other programs go from options to a working parser.
//
//   auto loaded = LoadedParser::Load({.grammar = "",  // "" = the built-in grammar
//                                     .backend = {.device = DeviceKind::kCpu}});
//   if (!loaded.ok()) return loaded.status();          // e.g. "no-such.gr: cannot open ..."
//   std::vector<ParseOutcome> outcomes = (*loaded)->Parse({{"The", "cat", "sat", "."}});
//   FormatOutcome(outcomes[0])   // "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)) )"
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"
#include "grammar_io/grammar_argument.h"
#include "lexicon/lexicon.h"
#include "parser/backend_factory.h"
#include "parser/parser.h"
#include "parser/product.h"
#include "parser/tree_format.h"

namespace cky {

struct LoadedParserOptions {
  // The -g/--grammar argument (grammar_io/grammar_argument.h): "" = the built-in grammar, else a
  // Berkeley .gr file, a text-export PREFIX or a .ckybin cache.
  std::string grammar;
  // Further -g values. With any, or when `grammar` names a product ("builtin-product", a product
  // file), the parser decodes the product of all their grammars (parser/product.h) with max-rule:
  // on the CPU with backend cpu, auto or reference, on one CUDA device with cuda
  // (parser/cuda_product_backend.h; not --devices); prune auto = safe, grammar 0's mask shared.
  std::vector<std::string> more_grammars;
  GrammarArgumentOptions grammar_options;
  LexiconOptions lexicon;
  BackendOptions backend;
  ParserOptions parser;
  // Called once the grammar and its lexicon are loaded, on the lexicon's thread, while the backend
  // is still being made (a GPU's driver starting, grammars uploaded): `cky parse` reads and scores
  // its first batch there, and returns those scores (null: none), which the backend is handed too
  // (BackendOptions::first_lexical: each gets an ahead_id; they must stay as they are until the
  // caller parses them). Load returns after it has returned. Not called for a product of
  // grammars, nor when the grammar or the lexicon failed.
  std::function<std::vector<LexicalScores>*(const BerkeleyModel& model, const Lexicon& lexicon)>
      beside_backend;
};

class LoadedParser {
 public:
  // Loads the grammar, builds its lexicon and the backend. Fails with the loader's message (which
  // names the file and line) or MakeBackend's (unknown backend or decoder, no CUDA device).
  static StatusOr<std::unique_ptr<LoadedParser>> Load(const LoadedParserOptions& options);

  LoadedParser(const LoadedParser&) = delete;
  LoadedParser& operator=(const LoadedParser&) = delete;
  ~LoadedParser();

  // Parser::Parse: one outcome per sentence, in input order. Not thread-safe (one call at a time).
  std::vector<ParseOutcome> Parse(std::span<const std::vector<std::string>> sentences,
                                  const OutcomeListener& listener = {}) {
    return parser_->Parse(sentences, listener);
  }

  // For a product, model() and lexicon() are its first grammar's.
  const BerkeleyModel& model() const { return model_; }
  const Lexicon& lexicon() const { return lexicon_; }
  Parser& parser() { return *parser_; }
  // The product of grammars when the arguments name one; null otherwise.
  const GrammarProduct* product() const;

 private:
  struct Product;  // the product's other grammars, their lexicons and the GrammarProduct
  explicit LoadedParser(BerkeleyModel model);
  static StatusOr<std::unique_ptr<LoadedParser>> LoadProduct(
      const LoadedParserOptions& options, const std::vector<std::string>& arguments);

  BerkeleyModel model_;
  Lexicon lexicon_;  // built by Load from model_
  std::unique_ptr<Product> product_;
  std::unique_ptr<Parser> parser_;  // reads model_.grammar and lexicon_, so made after them
};

// What `cky parse` prints for one sentence, score columns aside: the tree in `form` when it has
// one, else kNoParseOutput, "(())".
std::string FormatOutcome(const ParseOutcome& outcome, const OutputForm& form = {});

}  // namespace cky
