#include "parser/loaded_parser.h"

#include <optional>
#include <thread>

#include "common/timeline.h"

namespace cky {

StatusOr<std::unique_ptr<LoadedParser>> LoadedParser::Load(const LoadedParserOptions& options) {
  // The three parts of loading, each a phase of `cky parse --timeline`.
  auto model = [&] {
    timeline::Scope scope("load: grammar");
    return LoadGrammarArgument(options.grammar, options.grammar_options);
  }();
  if (!model.ok()) return model.status();
  // Not make_unique: the constructor is private. The object is never moved again, so the parser
  // may keep references to its grammar and lexicon. The lexicon (which reads the model) is built
  // on a thread of its own while the backend is made from the grammar: with en_sm6s on an H100
  // host they took 0.11 s and 0.22 s one after the other (bench/RESULTS.md).
  std::unique_ptr<LoadedParser> loaded(new LoadedParser(std::move(*model)));
  std::optional<StatusOr<Lexicon>> lexicon;
  std::jthread lexicon_thread([&] {  // joined below, or on the way out of an exception
    timeline::Scope scope("load: lexicon");
    lexicon.emplace(Lexicon::Build(loaded->model_, options.lexicon));
  });
  auto backend = [&] {
    timeline::Scope scope("load: backend");
    return MakeBackend(loaded->model_.grammar, options.backend);
  }();
  lexicon_thread.join();
  // These are faults of the grammar (a lexicon that does not match it, split trees that do not
  // nest) found after it was read: the message names it.
  const std::string name = GrammarArgumentName(options.grammar);
  if (!lexicon->ok()) return Status::Error(name + ": " + lexicon->status().message());
  loaded->lexicon_ = std::move(**lexicon);
  if (!backend.ok()) {
    return Status::Error(backend.status().message() + " (with the grammar " + name + ")");
  }
  ParserOptions parser_options = options.parser;
  if (parser_options.binarization.empty())
    parser_options.binarization = loaded->model_.binarization;
  parser_options.decoder = options.backend.decoder;
  loaded->parser_ = std::make_unique<Parser>(loaded->model_.grammar, loaded->lexicon_,
                                             std::move(*backend), parser_options);
  return loaded;
}

std::string FormatOutcome(const ParseOutcome& outcome, const OutputForm& form) {
  return outcome.status == ParseStatus::kOk ? FormatTree(outcome.tree, form) : kNoParseOutput;
}

}  // namespace cky
