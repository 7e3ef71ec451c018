// Products of grammars (parser/product.h) on the CPU or a GPU: speed side by side with the single
// grammar, and the trees of the products of the first K grammars of one product, for accuracy
// against K.
//
//   product_bench --product P.ckyprod --sentences words.txt --sizes 1,2,4,8 --out OUT
//       parses every sentence (one tokenized sentence a line) once per grammar and decodes the
//       product of the first K grammars for each K (ProductParser::ParsePrefixes: the same trees
//       as `cky parse -g` a product of those grammars, tested), writing OUT.K.parsed (one tree a
//       line, as `cky parse` prints them, "(())" for none) for `cky eval`.
//   product_bench --product P.ckyprod --single G --sentences words.txt --speed [--backend cuda]
//       times the single grammar G's max-rule backend (as `cky parse -b cpu` makes it: pruned,
//       safe; with --backend cuda as `cky parse -b cuda` does: the GPU, safe at every other level)
//       and the product's (the same pruning, grammar 0's mask shared; with --backend cuda
//       parser/cuda_product_backend.h on one GPU) over the same sentences, lexical scores
//       included, and prints sentences/s side by side. Each is warmed up on the first 8
//       sentences first (the GPU's first batch allocates its buffers). --threads: the CPU
//       threads (with cuda, the host threads that extract the trees, or with the host combination
//       combine the grammars' charts: give all cores). With --backend cuda, --combination device
//       (the default: the product's max-rule pass on the GPU), host (the charts copied back and
//       combined on the host threads, CudaProductOptions::host_combination) or both (two product
//       rows, and how many of their trees are the same).
//
// --prune auto|off|fast|accurate|safe and --mask per-grammar|shared choose the product's pruning
// (auto: safe; with --backend cuda at the GPU's automatic levels, as cky parse -b cuda).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/thread_pool.h"
#include "grammar_io/grammar_argument.h"
#include "lexicon/lexicon.h"
#include "parser/coarse_to_fine.h"
#include "parser/cuda_product_backend.h"
#include "parser/grammar_projection.h"
#include "parser/loaded_parser.h"
#include "parser/parser.h"
#include "parser/product.h"

namespace {

using namespace cky;

std::vector<std::vector<std::string>> ReadSentences(const std::string& path) {
  std::vector<std::vector<std::string>> sentences;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> sentence;
    for (std::string w; words >> w;) {
      // As `cky parse --tokenized` reads them.
      if (w == "(") w = "-LRB-";
      if (w == ")") w = "-RRB-";
      sentence.push_back(w);
    }
    sentences.push_back(std::move(sentence));
  }
  return sentences;
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "product_bench: %s\n", message.c_str());
  std::exit(1);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Products of grammars: trees per K, and speed against one grammar (CPU or GPU)"};
  std::vector<std::string> product_args;
  std::string single, sentences_file, out_prefix, prune = "safe", mask = "shared",
                                                  backend_name = "cpu";
  std::vector<int> sizes;
  std::string combination = "device";
  int threads = 2;
  bool speed = false;
  app.add_option("--product", product_args, "the product's grammars (-g values of cky parse)")
      ->required();
  app.add_option("--single", single, "--speed: the single grammar (\"\" = built-in)");
  app.add_option("--sentences", sentences_file, "tokenized sentences, one a line")->required();
  app.add_option("--sizes", sizes, "products of the first K grammars to decode")->delimiter(',');
  app.add_option("--out", out_prefix, "write OUT.K.parsed per size");
  app.add_option("--threads", threads, "CPU threads (sentences in parallel)");
  app.add_option("--prune", prune, "the product's pruning: auto, off, fast, accurate or safe");
  app.add_option("--backend", backend_name, "--speed: cpu or cuda (one GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--mask", mask, "shared (the default, as cky parse) or per-grammar");
  app.add_option("--combination", combination,
                 "--speed --backend cuda: combine the grammars on the device, the host or both")
      ->check(CLI::IsMember({"device", "host", "both"}));
  app.add_flag("--speed", speed, "time the single grammar and the product side by side");
  CLI11_PARSE(app, argc, argv);

  const auto sentences = ReadSentences(sentences_file);
  if (sentences.empty()) Die(sentences_file + ": no sentences");
  const auto load_start = std::chrono::steady_clock::now();
  auto members = LoadProductGrammarArguments(product_args);
  if (!members.ok()) Die(members.status().message());
  std::vector<Lexicon> lexicons;
  std::vector<const Grammar*> grammars;
  std::vector<const Lexicon*> lexicon_ptrs;
  std::vector<std::string> labels;
  lexicons.reserve(members->size());
  for (const ProductGrammarMember& m : *members) {
    auto lexicon = Lexicon::Build(m.model);
    if (!lexicon.ok()) Die(lexicon.status().message());
    lexicons.push_back(std::move(*lexicon));
    grammars.push_back(&m.model.grammar);
    labels.push_back(m.label);
  }
  for (const Lexicon& l : lexicons) lexicon_ptrs.push_back(&l);
  auto product = GrammarProduct::Create(grammars, labels);
  if (!product.ok()) Die(product.status().message());
  ProductOptions options{
      .threads = threads,
      .mask = mask == "shared" ? ProductPruning::kShared : ProductPruning::kPerGrammar};
  const bool cuda = backend_name == "cuda";
  if (prune != "off") {
    auto thresholds = PruningOptions::Named(prune == "auto" ? "safe" : prune);
    if (!thresholds.ok()) Die(thresholds.status().message());
    options.pruning = *thresholds;
    if (prune == "auto" && cuda) {
      options.pruning->levels = AutoPruningLevels(DeviceKind::kCuda, *grammars[0]);
    }
  }
  auto parser = ProductParser::Create(**product, lexicon_ptrs, options);
  if (!parser.ok()) Die(parser.status().message());
  std::printf("product of %d grammars (%s ...), prune %s, mask %s, %d threads, loaded in %.2f s\n",
              (*product)->size(), labels[0].c_str(), prune.c_str(), mask.c_str(), threads,
              Seconds(load_start));
  std::printf("host threads: %u; %zu sentences\n", std::thread::hardware_concurrency(),
              sentences.size());

  if (!sizes.empty()) {
    std::sort(sizes.begin(), sizes.end());
    for (int size : sizes) {
      if (size < 1 || size > (*product)->size()) Die("--sizes: 1 to the product's size");
    }
    std::vector<std::vector<ParseOutcome>> outcomes(sentences.size());
    ThreadPool pool(threads);
    const auto start = std::chrono::steady_clock::now();
    pool.ParallelFor(static_cast<int>(sentences.size()), [&](int i, int) {
      outcomes[i] = (*parser)->ParsePrefixes(sentences[i], sizes);
    });
    const double seconds = Seconds(start);
    std::printf("decoded K = ");
    for (int size : sizes) std::printf("%d ", size);
    std::printf("from one set of charts in %.1f s (%.3f sentences/s)\n", seconds,
                sentences.size() / seconds);
    for (size_t s = 0; s < sizes.size(); ++s) {
      int failed = 0;
      std::ofstream out(out_prefix + "." + std::to_string(sizes[s]) + ".parsed");
      for (size_t i = 0; i < sentences.size(); ++i) {
        out << FormatOutcome(outcomes[i][s]) << "\n";
        failed += outcomes[i][s].status != ParseStatus::kOk;
      }
      if (!out) Die(out_prefix + ": write failed");
      std::printf("K = %d: %s.%d.parsed (%d sentences without a tree)\n", sizes[s],
                  out_prefix.c_str(), sizes[s], failed);
    }
  }

  if (speed) {
    auto loaded =
        LoadedParser::Load({.grammar = single,
                            .backend = {.device = cuda ? DeviceKind::kCuda : DeviceKind::kCpu,
                                        .threads = threads,
                                        .decoder = DecoderKind::kMaxRule,
                                        .prune = PruneMode::kAuto}});
    if (!loaded.ok()) Die(loaded.status().message());
    // The product's parsers: one per combination timed (the CPU backend: one).
    std::vector<std::pair<std::string, std::unique_ptr<Parser>>> product_parsers;
    for (const std::string& where : {std::string("device"), std::string("host")}) {
      if (cuda ? combination != where && combination != "both" : where != "device") continue;
      auto backend = cuda ? MakeCudaProductBackend(**product, lexicon_ptrs,
                                                   {.device = {.extraction_threads = threads},
                                                    .product = options,
                                                    .host_combination = where == "host"})
                          : MakeProductBackend(**product, lexicon_ptrs, options);
      if (!backend.ok()) Die(backend.status().message());
      product_parsers.emplace_back(
          cuda ? " (" + where + " combination)" : "",
          std::make_unique<Parser>(*grammars[0], lexicons[0], std::move(*backend),
                                   ParserOptions{.retry_with_wider_lexicon = false}));
    }
    struct Row {
      std::string name;
      double seconds;
      int parsed;
      std::vector<ParseOutcome> outcomes;
    };
    std::vector<Row> rows;
    const std::vector<std::vector<std::string>> warmup(
        sentences.begin(), sentences.begin() + std::min<size_t>(8, sentences.size()));
    auto time = [&](const std::string& name, Parser& p) {
      p.Parse(warmup);
      const auto start = std::chrono::steady_clock::now();
      const auto outcomes = p.Parse(sentences);
      Row row{name, Seconds(start), 0, outcomes};
      for (const ParseOutcome& o : outcomes) row.parsed += o.status == ParseStatus::kOk;
      rows.push_back(std::move(row));
    };
    time(
        "single: " + GrammarArgumentName(single) + ", " + loaded.value()->parser().backend().name(),
        loaded.value()->parser());
    for (auto& [where, p] : product_parsers) time("product: " + p->backend().name() + where, *p);
    std::printf(
        "| parser | sentences | parsed | seconds | sentences/s |\n| --- | ---: | ---: | ---: | "
        "---: |\n");
    for (const Row& r : rows) {
      std::printf("| %s | %zu | %d | %.1f | %.3f |\n", r.name.c_str(), sentences.size(), r.parsed,
                  r.seconds, sentences.size() / r.seconds);
    }
    if (rows.size() == 3) {  // both combinations: do their trees agree?
      int same = 0;
      for (size_t i = 0; i < sentences.size(); ++i) {
        same += FormatOutcome(rows[1].outcomes[i]) == FormatOutcome(rows[2].outcomes[i]);
      }
      std::printf("device and host combinations: %d of %zu outputs the same\n", same,
                  sentences.size());
    }
  }
  return 0;
}
