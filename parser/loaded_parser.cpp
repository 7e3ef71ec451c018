#include "parser/loaded_parser.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "common/timeline.h"
#include "parser/cuda_product_backend.h"
#include "parser/grammar_projection.h"

namespace cky {

struct LoadedParser::Product {
  std::vector<BerkeleyModel> models;  // grammars 2..K (grammar 1 is model_)
  std::vector<Lexicon> lexicons;      // theirs
  std::unique_ptr<GrammarProduct> product;
};

LoadedParser::LoadedParser(BerkeleyModel model) : model_(std::move(model)) {}
LoadedParser::~LoadedParser() = default;

const GrammarProduct* LoadedParser::product() const {
  return product_ ? product_->product.get() : nullptr;
}

namespace {

// LexicalScores::ahead_id: unique in the process.
uint64_t NextAheadId() {
  static std::atomic<uint64_t> next{0};
  return ++next;
}

// The product backend's options from the single grammar's (max-rule; on the CPU, or on one CUDA
// device with the cuda backend).
StatusOr<ProductOptions> ProductOptionsFor(const BackendOptions& backend) {
  if (backend.decoder != DecoderKind::kMaxRule) {
    return Status::Error("a product of grammars decodes max-rule trees (decoder '" +
                         std::string(NameOf(backend.decoder)) + "' asked for)");
  }
  if (!backend.devices.empty()) {
    return Status::Error(
        "a product of grammars parses on one device: use --backend cuda without --devices (or the "
        "cpu backend)");
  }
  ProductOptions options;
  options.reference = backend.device == DeviceKind::kReference;
  options.threads = backend.threads;
  const PruneMode prune = backend.prune;
  if (options.reference && prune != PruneMode::kOff && prune != PruneMode::kAuto) {
    return Status::Error("the reference parses the product exactly: use --prune off");
  }
  if (!options.reference && prune != PruneMode::kOff) {
    // auto: safe, grammar 0's survivors shared by every grammar (ProductOptions' default mask;
    // bench/RESULTS.md, "Products of grammars").
    auto thresholds =
        PruningOptions::Named(prune == PruneMode::kAuto ? "safe" : std::string(NameOf(prune)));
    if (!thresholds.ok()) return thresholds.status();
    options.pruning = *thresholds;
    if (!backend.prune_levels.empty()) options.pruning->levels = backend.prune_levels;
  } else if (!backend.prune_levels.empty()) {
    return Status::Error("pruning levels were given, but pruning is off");
  }
  if (backend.kbest < 1) return Status::Error("k-best needs k >= 1");
  options.decoder = {.kbest = backend.kbest, .kbest_style = backend.kbest_style};
  return options;
}

}  // namespace

StatusOr<std::unique_ptr<LoadedParser>> LoadedParser::LoadProduct(
    const LoadedParserOptions& options, const std::vector<std::string>& arguments) {
  if (options.parser.tree_likelihood || options.parser.confidence) {
    return Status::Error(
        "P(T, w) and P(T | w) are one grammar's; a product of grammars defines neither");
  }
  auto product_options = ProductOptionsFor(options.backend);
  if (!product_options.ok()) return product_options.status();
  product_options->retry_with_wider_lexicon = options.parser.retry_with_wider_lexicon;
  auto members = [&] {
    timeline::Scope scope("load: grammar");
    return LoadProductGrammarArguments(arguments, options.grammar_options);
  }();
  if (!members.ok()) return members.status();
  std::unique_ptr<LoadedParser> loaded(new LoadedParser(std::move(members->front().model)));
  auto parts = std::make_unique<Product>();
  parts->models.reserve(members->size() - 1);  // never moved again: the product points into it
  for (size_t k = 1; k < members->size(); ++k)
    parts->models.push_back(std::move((*members)[k].model));
  {
    timeline::Scope scope("load: lexicon");
    std::vector<std::future<StatusOr<Lexicon>>> built;
    for (const BerkeleyModel& model : parts->models) {
      built.push_back(
          std::async(std::launch::async, [&] { return Lexicon::Build(model, options.lexicon); }));
    }
    auto first = Lexicon::Build(loaded->model_, options.lexicon);
    if (!first.ok()) return first.status();
    loaded->lexicon_ = std::move(*first);
    for (auto& lexicon : built) {
      auto done = lexicon.get();
      if (!done.ok()) return done.status();
      parts->lexicons.push_back(std::move(*done));
    }
  }
  std::vector<const Grammar*> grammars = {&loaded->model_.grammar};
  std::vector<const Lexicon*> lexicons = {&loaded->lexicon_};
  std::vector<std::string> labels;
  for (size_t k = 0; k < members->size(); ++k) labels.push_back((*members)[k].label);
  for (size_t k = 0; k < parts->models.size(); ++k) {
    grammars.push_back(&parts->models[k].grammar);
    lexicons.push_back(&parts->lexicons[k]);
  }
  timeline::Scope scope("load: backend");
  auto product = GrammarProduct::Create(grammars, labels);
  if (!product.ok()) return product.status();
  parts->product = std::move(*product);
  StatusOr<std::unique_ptr<Backend>> backend = Status::Error("no backend");
  if (options.backend.device == DeviceKind::kCuda) {
    // Automatic pruning on a GPU pre-parses at every other level (AutoPruningLevels) when the
    // grammars have the same levels.
    const Grammar& g0 = parts->product->base();
    if (product_options->pruning && options.backend.prune == PruneMode::kAuto &&
        options.backend.prune_levels.empty() &&
        std::all_of(grammars.begin(), grammars.end(), [&](const Grammar* g) {
          return NumProjectionLevels(*g) == NumProjectionLevels(g0);
        })) {
      product_options->pruning->levels = AutoPruningLevels(DeviceKind::kCuda, g0);
    }
    backend = MakeCudaProductBackend(
        *parts->product, lexicons,
        {.device = {.extraction_threads = options.backend.threads}, .product = *product_options});
  } else {
    // The CPU: cpu, reference, and auto (the CUDA product backend is chosen with cuda).
    backend = MakeProductBackend(*parts->product, lexicons, *product_options);
  }
  if (!backend.ok()) return backend.status();
  ParserOptions parser_options = options.parser;
  if (parser_options.binarization.empty())
    parser_options.binarization = loaded->model_.binarization;
  // The product backend retries each grammar with a wider lexicon itself (when asked: above).
  parser_options.retry_with_wider_lexicon = false;
  loaded->product_ = std::move(parts);
  loaded->parser_ = std::make_unique<Parser>(loaded->model_.grammar, loaded->lexicon_,
                                             std::move(*backend), parser_options);
  return loaded;
}

StatusOr<std::unique_ptr<LoadedParser>> LoadedParser::Load(const LoadedParserOptions& options) {
  std::vector<std::string> arguments = {options.grammar};
  arguments.insert(arguments.end(), options.more_grammars.begin(), options.more_grammars.end());
  if (GrammarArgumentsAreProduct(arguments)) return LoadProduct(options, arguments);
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
  // beside_backend's scores, for the backend (which may wait for them while it is made): always
  // set, null when there are none.
  auto first = std::make_shared<std::promise<std::vector<LexicalScores>*>>();
  std::shared_future<std::vector<LexicalScores>*> first_made = first->get_future().share();
  std::jthread lexicon_thread([&] {  // joined below, or on the way out of an exception
    std::vector<LexicalScores>* made = nullptr;
    struct Hand {  // on every way out
      std::promise<std::vector<LexicalScores>*>& promise;
      std::vector<LexicalScores>*& made;
      ~Hand() { promise.set_value(made); }
    } hand{*first, made};
    {
      timeline::Scope scope("load: lexicon");
      lexicon.emplace(Lexicon::Build(loaded->model_, options.lexicon));
    }
    if (options.beside_backend && lexicon->ok()) {
      made = options.beside_backend(loaded->model_, **lexicon);
      if (made) {
        for (LexicalScores& scores : *made) {
          if (!scores.scores.empty()) scores.ahead_id = NextAheadId();
        }
      }
    }
  });
  BackendOptions backend_options = options.backend;
  if (options.beside_backend) {
    backend_options.first_lexical = [first_made]() -> std::span<const LexicalScores> {
      const std::vector<LexicalScores>* made = first_made.get();
      if (!made) return {};
      return *made;
    };
  }
  auto backend = [&] {
    timeline::Scope scope("load: backend");
    return MakeBackend(loaded->model_.grammar, backend_options);
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
