// The parser front end: words in, binarized best trees out, through a chosen backend.
//
//   auto model = LoadBerkeleyModel("grammars/small_sm2");
//   auto lexicon = Lexicon::Build(*model);
//   auto backend = MakeBackend(model->grammar, {});  // parser/backend_factory.h: the defaults
//   Parser parser(model->grammar, *lexicon, std::move(*backend));
//   std::vector<ParseOutcome> trees = parser.Parse({{"Dogs", "bark", "."}});
//   FormatBerkeley(trees[0].tree)   // "( (S (NP (NNS Dogs)) (VP (VBP bark)) (. .)) )"
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/thread_pool.h"
#include "grammar_io/berkeley_model.h"
#include "lexicon/lexicon.h"
#include "parser/backend.h"

namespace cky {

struct ParserOptions {
  int max_length = 0;  // sentences longer than this get kTooLong; 0 = no limit
  // A sentence with no parse is parsed once more with the lexicon widened (known words also take
  // their signature's scores for tags they lack: lexicon/lexicon.h), which usually finds a tree.
  bool retry_with_wider_lexicon = true;
  int scoring_threads = 0;  // threads computing lexical scores; 0 = all hardware threads
  // ParseOutcome::tree_log_likelihood (log P(T, w), Berkeley's -tree_likelihood) and confidence
  // (log P(T | w), its -confidence) of every tree (k-best lists too), by parser/tree_likelihood.h:
  // P(T, w) of the decoder's binarized tree, and for the confidence that of the printed tree
  // re-binarized the grammar's way (`binarization`, BerkeleyModel::binarization) minus log P(w).
  // With the Viterbi decoder, as the Berkeley parser's -viterbi: both are the Viterbi score's
  // (P(T, w) = the best derivation's score, P(T | w) = 0).
  bool tree_likelihood = false;
  bool confidence = false;
  std::string binarization;
  DecoderKind decoder = DecoderKind::kMaxRule;  // the backend's
};

class Parser {
 public:
  // `grammar` and `lexicon` must outlive the parser.
  Parser(const Grammar& grammar, const Lexicon& lexicon, std::unique_ptr<Backend> backend,
         const ParserOptions& options = {});

  // Parses each sentence (a list of tokens); outcomes come back in input order, one per sentence.
  // `listener`, when given, is told each sentence's final outcome (index into `sentences`) as soon
  // as it is known, from any thread, possibly several at once (parser/backend.h). Several threads
  // may call Parse at once: a backend that takes one batch at a time
  // (!backend().ParsesConcurrentBatches()) gets them one after another, each call's lexical
  // scoring running while the backend parses another's.
  std::vector<ParseOutcome> Parse(std::span<const std::vector<std::string>> sentences,
                                  const OutcomeListener& listener = {});
  // The same with each sentence's lexical scores given: lexical[i] for sentences[i], as
  // ScoreWords computes them (`cky parse` scores its first batch while the backend loads); those
  // of sentences over max_length are not read. lexical.size() == sentences.size().
  std::vector<ParseOutcome> Parse(std::span<const std::vector<std::string>> sentences,
                                  std::vector<LexicalScores> lexical,
                                  const OutcomeListener& listener = {});

  // Lexical scores of one sentence (exposed for tests and benchmarks).
  LexicalScores ScoreWords(const std::vector<std::string>& words, bool widen = false) const;
  // Fills every input's lexical scores from its words, on options.scoring_threads threads.
  void ScoreSentences(std::vector<SentenceInput>* inputs, bool widen = false);

  Backend& backend() { return *backend_; }

 private:
  // Parse's work; `lexical` null: the sentences are scored here.
  std::vector<ParseOutcome> ParseScored(std::span<const std::vector<std::string>> sentences,
                                        std::vector<LexicalScores>* lexical,
                                        const OutcomeListener& listener);
  // ParserOptions::tree_likelihood and confidence of an outcome's trees.
  void AddTreeScores(const LexicalScores& lexical, ParseOutcome* outcome) const;

  const Grammar& grammar_;
  const Lexicon& lexicon_;
  std::unique_ptr<Backend> backend_;
  ParserOptions options_;
  std::mutex scoring_mutex_;  // one ScoreSentences at a time (the pool's rule)
  std::mutex backend_mutex_;  // one backend call at a time, unless ParsesConcurrentBatches
  std::unique_ptr<ThreadPool> scoring_pool_;  // made at the first batch
};

// Lexical scores of one sentence under `grammar` and its lexicon (Parser::ScoreWords).
LexicalScores ScoreWords(const Grammar& grammar, const Lexicon& lexicon,
                         const std::vector<std::string>& words, bool widen = false);

// The Viterbi log-score of a binarized annotated tree ("NP-3" labels, as tree extraction and
// Berkeley's -binarize -substates output give) under the grammar and lexicon: binary and closed
// unary rule scores plus lexical scores. Fails naming the first rule or word the model lacks.
StatusOr<double> ScoreAnnotatedTree(const Grammar& grammar, const Lexicon& lexicon,
                                    const Tree& tree);

}  // namespace cky
