// cky parse: sentences in, one tree per line out, in input order.
#include <poll.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "apps/mpi_link.h"
#include "apps/output_format.h"
#include "apps/progress.h"
#include "apps/sentence_source.h"
#include "common/input_file.h"
#include "common/ordered_batches.h"
#include "common/sentence_file.h"
#include "common/thread_pool.h"
#include "common/timeline.h"
#include "cuda/common/device.h"
#include "grammar_io/grammar_argument.h"
#include "parser/backend_factory.h"
#include "parser/cuda_backend.h"
#include "parser/loaded_parser.h"
#include "parser/multi_device_backend.h"
#include "parser/tree_format.h"
#include "parser/tree_likelihood.h"
#include "text/token_convention.h"
#include "text/tokenizer.h"

namespace cky::apps {
namespace {

struct ParseArgs {
  std::vector<std::string> grammars;  // -g, once or more (several: their product)
  std::string grammar;                // the first -g ("" = the built-in grammar)
  std::string input = "-";
  std::string output = "-";
  std::string backend = "auto";
  std::string kernel;
  int threads = 0;
  int max_length = 200;
  int batch_size = 0;           // 0: BatchSize()
  double min_rule_prob = -1.0;  // < 0: 1e-10 for a .gr file (as Berkeley's parser), else 0
  bool binarize = false;
  bool substates = false;
  bool scores = false;
  bool backoff = false;
  bool no_cache = false;
  bool no_retry = false;
  bool progress = false;
  bool no_progress = false;
  bool timeline = false;
  bool tokenized = false;
  std::string hyphens = "auto";
  std::string decoder = "max-rule";
  std::string prune = "auto";
  std::vector<int32_t> prune_levels;  // --prune-levels
  bool accurate = false;              // --accurate: --prune accurate
  bool sentence_likelihood = false;
  bool model_score = false;
  bool tree_likelihood = false;
  bool confidence = false;
  int kbest = 1;
  std::string kbest_style = "exact";
  bool sentence_per_line = false;
  std::string format = "penn";
  std::string token_style = "auto";
  std::string devices;  // --devices: "" = one backend
  bool mpi = false;
};

// --batch-size, or its default on one CUDA device: 1,024 for exact Viterbi, 2,048 when pruned
// (either decoder); 256 otherwise. The CUDA backend sorts a batch by length and cuts it into device
// batches of at most 256 sentences: from 1,024 read sentences, 4 batches of similar lengths instead
// of one of mixed lengths (issue 17's timeline: 9,664 WSJ-23 sentences in 7.34 s instead of 7.80 s
// on an H100, the unary pass 0.61 s instead of 0.82 s; bench/RESULTS.md). The pruned max-rule
// backend makes device batches of up to 1,024 sentences itself: 2,416 WSJ-23 lengths with en_sm6s,
// --prune safe, took 19.4 s whole process with 1,024 against 25.1 s with 256 (exact: 29.0 s;
// bench/RESULTS.md); with 2,048, two device batches a read batch, the first one's trees are
// extracted while the device computes the second (the default, gum_all_sm6: 2.47-2.55 s
// against 2.50-2.55 s with 1,024, and 2.54-2.60 s with 4,096, whose lexical scoring outlasts the
// load: bench/RESULTS-LOG.md). Pruned Viterbi too: with two device batches a read batch, the
// next one's first pre-parse level is projected on the host while the device runs the first
// (parser/cuda_pruner.h), and no read batch's turnaround stands between them
// (bench/RESULTS-LOG.md).
int BatchSize(const ParseArgs& args, const BackendOptions& backend) {
  if (args.batch_size > 0) return args.batch_size;
  const bool one_gpu = args.devices.empty() && !args.mpi &&
                       (backend.device == DeviceKind::kCuda ||
                        (backend.device == DeviceKind::kAuto && cuda::DeviceCount() > 0));
  const bool pruned = backend.prune != PruneMode::kOff;
  if (!one_gpu) return 256;
  if (backend.decoder == DecoderKind::kViterbi) {
    // Automatic pruning is off for Viterbi on a GPU (parser/backend_factory.h's AutoPruning).
    return pruned && backend.prune != PruneMode::kAuto ? 2048 : 1024;
  }
  return pruned ? 2048 : 256;
}

// The backend options, read from their strings once (parser/backend_factory.h); a bad value is a
// usage error.
BackendOptions ParsedBackend(const ParseArgs& args) {
  auto parsed = ParseBackendOptions(
      args.backend, args.decoder, args.accurate ? "accurate" : args.prune, args.kbest_style,
      {.threads = args.threads, .kernel = args.kernel, .kbest = args.kbest});
  if (!parsed.ok()) Fail(parsed.status().message(), 2);
  parsed->prune_levels = args.prune_levels;
  return *parsed;
}

InputForm ParseInputForm(const ParseArgs& args) {
  if (args.tokenized) return InputForm::kTokenized;
  return args.sentence_per_line ? InputForm::kSentencePerLine : InputForm::kParagraphs;
}

// The first batch of `cky parse`'s input, read and lexically scored while the backend loads
// (LoadedParserOptions::beside_backend), with the token convention and the sentence source it
// was read with.
struct EarlyStart {
  std::optional<StatusOr<TokenConvention>> convention;
  std::unique_ptr<SentenceSource> source;  // null: not made early
  std::vector<std::vector<std::string>> sentences;
  std::vector<LexicalScores> lexical;  // sentences' scores (empty for those over --max-length)
};

// How `cky parse` reads its input into sentences.
SentenceSourceOptions SourceOptions(const ParseArgs& args, const TokenConvention& convention) {
  return {.form = ParseInputForm(args),
          .tokenizer = TokenizerOptionsFor(convention),
          .convention = convention,
          .warn_if_tokenized = true};
}

// True when standard input has data (or its end) ready now: reading it ahead then waits for
// nothing (a co-process's input is read only once it has sent something).
bool StandardInputReady() {
  pollfd in{.fd = 0, .events = POLLIN, .revents = 0};
  return poll(&in, 1, 0) == 1 && (in.revents & (POLLIN | POLLHUP)) != 0;
}

// The words --token-style and --hyphens ask for: "auto" reads them from the grammar's lexicon
// (text/token_convention.h). `model` is the loaded grammar, or null on an MPI rank that does not
// parse, which then loads the grammar itself when a choice is "auto".
// `resolved`: ResolveTokenConvention's answer when it was asked already (EarlyStart).
TokenConvention ParseTokenConvention(const ParseArgs& args, const BerkeleyModel* model,
                                     std::optional<StatusOr<TokenConvention>> resolved = {}) {
  std::optional<BerkeleyModel> own;
  if (!model && !resolved) {
    if (args.token_style == "auto" || args.hyphens == "auto") {
      auto loaded = LoadGrammarArgument(
          args.grammar, GrammarOptionsForCommand(args.min_rule_prob, !args.no_cache));
      if (!loaded.ok()) Fail(loaded.status().message());
      own = std::move(*loaded);
    } else {
      own.emplace();  // not read
    }
    model = &*own;
  }
  if (!resolved) resolved = ResolveTokenConvention(args.token_style, args.hyphens, *model);
  const StatusOr<TokenConvention>& convention = *resolved;
  if (!convention.ok()) Fail(convention.status().message(), 2);
  spdlog::debug("tokens for {}: quotes {}, [ ] {}, hyphenated words {}",
                GrammarArgumentName(args.grammar),
                convention->quotes == TokenStyle::kGum ? "\"" : "`` ''",
                convention->escaped_square ? "-LSB- -RSB-" : "[ ]",
                convention->split_hyphens ? "split" : "whole");
  return *convention;
}

// One batch's results, as `cky parse` prints them: each sentence's text, and the warning to print
// after it ("" for none).
struct ShardResults {
  std::vector<std::string> texts;
  std::vector<std::string> warnings;
  long failures = 0;                          // sentences printed as (())
  std::vector<std::string> backend_warnings;  // a device retired, ... (Backend::TakeWarnings)
};

// A batch's outcomes and the backend's warnings of that time.
struct ParsedBatch {
  std::vector<ParseOutcome> outcomes;
  std::vector<std::string> backend_warnings;
};

// `lexical`: the sentences' lexical scores when they were computed ahead (else empty).
ParsedBatch ParseOnly(Parser& parser, const std::vector<std::vector<std::string>>& batch,
                      std::vector<LexicalScores> lexical = {}) {
  timeline::Scope scope("parse (batch)");
  ParsedBatch parsed;
  parsed.outcomes = lexical.empty() ? parser.Parse(batch) : parser.Parse(batch, std::move(lexical));
  parsed.backend_warnings = parser.backend().TakeWarnings();
  return parsed;
}

// The printed results of `batch`, whose first sentence is sentence number `first_number` (from 1)
// of the input.
ShardResults FormatShard(long first_number, const std::vector<std::vector<std::string>>& batch,
                         ParsedBatch parsed, const ResultFormatOptions& format) {
  timeline::Scope scope("format");
  ShardResults results;
  results.backend_warnings = std::move(parsed.backend_warnings);
  const std::vector<ParseOutcome>& outcomes = parsed.outcomes;
  const int count = static_cast<int>(outcomes.size());
  results.texts.resize(count);
  results.warnings.resize(count);
  // Each sentence's text on all cores (tens of microseconds a tree: the last batch's formatting
  // follows its parse, with nothing beside it), one caller at a time.
  static std::mutex pool_mutex;
  static ThreadPool pool(0);
  std::lock_guard<std::mutex> lock(pool_mutex);
  pool.ParallelFor(count, [&](int i, int) {
    const long number = first_number + i;
    results.texts[i] = FormatResult(number, batch[i], outcomes[i], format);
    if (outcomes[i].status != ParseStatus::kOk) {
      results.warnings[i] = fmt::format("sentence {} ({} words): {}; printed {}", number,
                                        batch[i].size(), outcomes[i].message, kNoParseOutput);
    } else if (!outcomes[i].message.empty()) {
      // A tree with a message, e.g. parsed on the CPU because it never fits on the GPU.
      results.warnings[i] =
          fmt::format("sentence {} ({} words): {}", number, batch[i].size(), outcomes[i].message);
    }
  });
  results.failures = std::count_if(outcomes.begin(), outcomes.end(), [](const ParseOutcome& o) {
    return o.status != ParseStatus::kOk;
  });
  return results;
}

// Parses `batch` and formats its results.
ShardResults ParseShard(Parser& parser, long first_number,
                        const std::vector<std::vector<std::string>>& batch,
                        const ResultFormatOptions& format) {
  return FormatShard(first_number, batch, ParseOnly(parser, batch), format);
}

void WriteShard(const ShardResults& results, ResultWriter& writer) {
  timeline::Scope scope("write");
  for (const std::string& warning : results.backend_warnings) spdlog::warn("{}", warning);
  for (size_t i = 0; i < results.texts.size(); ++i) {
    writer.Write(results.texts[i]);
    if (!results.warnings[i].empty()) spdlog::warn("{}", results.warnings[i]);
  }
  writer.EndBatch();
}

// Reads the next batch: what has arrived, up to `size` sentences (at least one, unless the input
// is over). A file or a fast pipe fills whole batches, while a co-process that writes a sentence
// and waits for its tree gets it at once.
bool ReadBatch(SentenceSource& source, int size, std::vector<std::vector<std::string>>* batch) {
  batch->clear();
  std::vector<std::string> words;
  if (!source.Next(&words)) return false;
  batch->push_back(std::move(words));
  while (static_cast<int>(batch->size()) < size && source.Ready() && source.Next(&words)) {
    batch->push_back(std::move(words));
  }
  return true;
}

void FinishInput(const ParseArgs& args, InputFile& input, long sentences, long failures) {
  if (Status read = input.ReadStatus(); !read.ok()) {
    Fail(read.message() + " (after sentence " + std::to_string(sentences) + ")");
  }
  if (sentences == 0) spdlog::warn("{}: the input holds no sentences", args.input);
  if (failures > 0) {
    spdlog::warn("{} of {} sentences got no tree and were printed as {}", failures, sentences,
                 kNoParseOutput);
  }
}

// Reads sentences, parses them in batches and writes one result per sentence, in input order
// (common/ordered_batches.h). The stages overlap: worker threads parse while this thread formats
// and writes the results of the batch before and reads the next batch, if it has arrived (a
// co-process that waits for its tree before it writes more gets the tree at once: nothing waits
// for input then). Two batches are parsed at a time (the next one's lexical scoring runs while the
// backend parses one: Parser hands a backend one batch at a time), or three when the backend
// parses concurrent batches (several GPUs: the devices start on the next batch while the last
// chunks of one finish, and its lexical scoring runs while they work); then up to sixteen batches
// may wait to be written behind one held up (a sentence re-parsed on the CPU after a device
// failure took 4 s with en_sm6s, while four GPUs stood idle), and the devices go on meanwhile. A
// batch being parsed holds its lexical scores (about 0.4 GB for 2,048 sentences with en_sm6s), a
// parsed one only its trees.
void ParseStream(const ParseArgs& args, Parser& parser, SentenceSource& source, InputFile& input,
                 ResultWriter& writer, const ResultFormatOptions& format, int batch_size,
                 EarlyStart* early) {
  ProgressMeter progress("sentences", input.size(), ShowProgress(args.progress, args.no_progress));
  struct Batch {
    long first_number = 0;
    std::vector<std::vector<std::string>> sentences;
    // The first batch's lexical scores when they were computed while the backend loaded; moved
    // out by the parse step (mutable: it gets the batch const).
    mutable std::vector<LexicalScores> lexical;
  };
  const bool concurrent = parser.backend().ParsesConcurrentBatches();
  long read = 0, written = 0, failures = 0;
  ProcessInOrder<Batch, ParsedBatch>(
      {.parsing_at_most = concurrent ? 3u : 2u, .unwritten_at_most = concurrent ? 16u : 2u},
      [&](Batch* batch) {
        if (read == 0 && early && !early->sentences.empty()) {
          batch->sentences = std::move(early->sentences);
          batch->lexical = std::move(early->lexical);
        } else {
          batch->lexical.clear();
          if (!ReadBatch(source, batch_size, &batch->sentences)) return false;
        }
        batch->first_number = read + 1;
        read += static_cast<long>(batch->sentences.size());
        return true;
      },
      [&] { return source.Ready(); },
      [&](const Batch& batch) {
        return ParseOnly(parser, batch.sentences, std::move(batch.lexical));
      },
      [&](Batch& batch, ParsedBatch parsed) {
        const ShardResults results =
            FormatShard(batch.first_number, batch.sentences, std::move(parsed), format);
        WriteShard(results, writer);
        written += static_cast<long>(results.texts.size());
        failures += results.failures;
        progress.Update(written, input.BytesConsumed());
      });
  FinishInput(args, input, written, failures);
}

// `mpirun -np N cky parse --mpi`, rank 0: reads shards of --batch-size sentences, deals them out
// (DealShards) and writes their results in input order. A shard is [number of its first sentence,
// each sentence's words packed]; its answer [failures, backend warning count, the warnings, then
// each sentence's text and warning].
void MpiCoordinate(const ParseArgs& args, MpiLink& link, SentenceSource& source, InputFile& input,
                   ResultWriter& writer) {
  ProgressMeter progress("sentences", input.size(), ShowProgress(args.progress, args.no_progress));
  long read = 0, written = 0, failures = 0;
  std::vector<std::vector<std::string>> batch;
  const int batch_size = BatchSize(args, ParsedBackend(args));
  DealShards(
      link,
      [&](std::vector<std::string>* shard) {
        if (!ReadBatch(source, batch_size, &batch)) return false;
        shard->push_back(std::to_string(read + 1));
        for (const auto& words : batch) shard->push_back(PackStrings(words));
        read += static_cast<long>(batch.size());
        return true;
      },
      [&](int rank, std::vector<std::string>& answer) {
        ShardResults results;
        results.failures = std::stol(answer.at(0));
        const size_t warnings = std::stoul(answer.at(1));
        for (size_t k = 0; k < warnings; ++k) {
          results.backend_warnings.push_back("rank " + std::to_string(rank) + ": " +
                                             answer.at(2 + k));
        }
        for (size_t k = 2 + warnings; k + 1 < answer.size(); k += 2) {
          results.texts.push_back(std::move(answer[k]));
          results.warnings.push_back(std::move(answer[k + 1]));
        }
        WriteShard(results, writer);
        written += static_cast<long>(results.texts.size());
        failures += results.failures;
        progress.Update(written, input.BytesConsumed());
      });
  FinishInput(args, input, written, failures);
}

// The other ranks: parse each shard rank 0 sends.
void MpiWork(MpiLink& link, Parser& parser, const ResultFormatOptions& format) {
  ServeShards(link, [&](std::vector<std::string>& shard) {
    std::vector<std::vector<std::string>> batch(shard.size() - 1);
    for (size_t k = 1; k < shard.size(); ++k) UnpackStrings(shard[k], &batch[k - 1]);
    ShardResults results = ParseShard(parser, std::stol(shard.at(0)), batch, format);
    std::vector<std::string> answer{std::to_string(results.failures),
                                    std::to_string(results.backend_warnings.size())};
    for (std::string& w : results.backend_warnings) answer.push_back(std::move(w));
    for (size_t i = 0; i < results.texts.size(); ++i) {
      answer.push_back(std::move(results.texts[i]));
      answer.push_back(std::move(results.warnings[i]));
    }
    return answer;
  });
}

void ParseOnThisProcess(const ParseArgs& args, MpiLink* link, const ResultFormatOptions& format,
                        StatusOr<std::unique_ptr<InputFile>>& input);

// `--kernel list`: every registered CUDA kernel variant, one a line (name, description), the
// default first.
void PrintKernels() {
  size_t width = 0;
  for (const cuda::ViterbiKernelInfo& k : CudaKernels()) width = std::max(width, k.name.size());
  for (const cuda::ViterbiKernelInfo& k : CudaKernels())
    std::printf("%-*s  %s\n", static_cast<int>(width), k.name.c_str(), k.description.c_str());
}

void RunParse(const ParseArgs& args) {
  const BackendOptions backend = ParsedBackend(args);
  const bool viterbi = backend.decoder == DecoderKind::kViterbi;
  if (!viterbi && (args.substates || args.scores)) {
    Fail("--substates and --scores print a Viterbi derivation: add --decoder viterbi", 2);
  }
  if (viterbi && args.kbest > 1) {
    Fail("--kbest lists max-rule trees: use it with --decoder max-rule", 2);
  }
  if (args.tokenized && args.sentence_per_line) {
    Fail("--tokenized input is already one sentence per line: give one of the two", 2);
  }
  if (GrammarArgumentsAreProduct(args.grammars)) {
    // parser/product.h: the product is a decoding rule over max-rule posteriors, not a model.
    if (args.sentence_likelihood || args.tree_likelihood || args.confidence) {
      Fail(
          "--sentence-likelihood, --tree-likelihood and --confidence are probabilities under one "
          "grammar, and a product of grammars defines none: parse with one grammar for them "
          "(--model-score prints the product's score)",
          2);
    }
    if (viterbi) Fail("a product of grammars decodes max-rule trees only", 2);
    if (!args.devices.empty() || args.mpi) {
      Fail(
          "a product of grammars parses on one process and one device: use --backend cuda (or cpu) "
          "without --devices and --mpi",
          2);
    }
  }
  ResultFormatOptions format{
      .tree_form = {.binarize = args.binarize, .substates = args.substates, .scores = args.scores},
      .tree_likelihood = args.tree_likelihood,
      .sentence_likelihood = args.sentence_likelihood,
      .confidence = args.confidence,
      .model_score = args.model_score,
      .kbest = args.kbest};
  if (!ParseOutputFormat(args.format, &format.format)) Fail("unknown --format " + args.format, 2);

  RunCommandWork(args.mpi, [&](MpiLink* link) {
    // A missing input file is reported before a grammar takes seconds to load; standard input is
    // opened after the grammar is loaded (opening reads its first bytes, which a co-process sends
    // only when it has a sentence). Only rank 0 of an MPI job reads.
    StatusOr<std::unique_ptr<InputFile>> input = Status::Error("not opened");
    if (args.input != "-" && (!link || link->rank() == 0)) {
      input = InputFile::Open(args.input);
      if (!input.ok()) Fail(input.status().message());
    }
    ParseOnThisProcess(args, link, format, input);
  });
}

// RunParse's work on one process: everything without --mpi; with it, rank 0 reads and writes and
// the other ranks parse (rank 0 parses too when it is alone).
void ParseOnThisProcess(const ParseArgs& args, MpiLink* link, const ResultFormatOptions& format,
                        StatusOr<std::unique_ptr<InputFile>>& input) {
  const bool reads_and_writes = !link || link->rank() == 0;
  const bool parses = !link || link->size() == 1 || link->rank() > 0;

  BackendOptions backend = ParsedBackend(args);
  if (!args.devices.empty()) {
    auto devices = ParseDeviceList(args.devices, cuda::DeviceCount());
    if (!devices.ok()) Fail(devices.status().message(), 2);
    backend.devices = *devices;
  } else if (backend.device != DeviceKind::kCpu && backend.device != DeviceKind::kReference) {
    UseRankDevice(link);  // the ranks on one host share its GPUs: each takes the next
  }
  // With several devices a batch holds --batch-size sentences per chunk, two chunks per device
  // (MultiDeviceOptions::chunks_per_slot), so that each device's batches stay as large as one
  // device's.
  const int slots = static_cast<int>(backend.devices.size());
  // (After the load, or on the load's lexicon thread for the first batch read beside it: with
  // --backend auto it asks for a GPU, which waits for the driver's start.)
  const auto batch_size = [&] { return BatchSize(args, backend) * (slots > 1 ? 2 * slots : 1); };

  std::unique_ptr<LoadedParser> loaded;
  // One process that reads and parses: its first batch is read and scored while the backend
  // loads (the GPU's driver starting, grammars uploaded), so that the device starts on it at once.
  EarlyStart early;
  bool early_opened_input = false;  // standard input was opened there
  std::function<std::vector<LexicalScores>*(const BerkeleyModel&, const Lexicon&)> beside_backend;
  if (parses && reads_and_writes) {
    beside_backend = [&](const BerkeleyModel& model,
                         const Lexicon& lexicon) -> std::vector<LexicalScores>* {
      early.convention = ResolveTokenConvention(args.token_style, args.hyphens, model);
      if (!early.convention->ok()) return nullptr;  // reported after the load
      if (args.input == "-") {
        if (!StandardInputReady()) return nullptr;
        early_opened_input = true;
        input = InputFile::Open(args.input);
      }
      if (!input.ok()) return nullptr;
      auto source = SentenceSource::Create(**input, SourceOptions(args, **early.convention));
      if (!source.ok()) return nullptr;
      early.source = std::move(*source);
      if (!ReadBatch(*early.source, batch_size(), &early.sentences)) return nullptr;
      timeline::Scope scope("lexical scoring (beside the load)");
      early.lexical.resize(early.sentences.size());
      ThreadPool pool(0);  // as Parser::ScoreSentences
      pool.ParallelFor(static_cast<int>(early.sentences.size()), [&](int i, int) {
        const std::vector<std::string>& words = early.sentences[i];
        if (args.max_length > 0 && static_cast<int>(words.size()) > args.max_length) return;
        early.lexical[i] = ScoreWords(model.grammar, lexicon, words);
      });
      return &early.lexical;
    };
  }
  if (parses) {
    const auto load_start = std::chrono::steady_clock::now();
    timeline::Scope load_scope("load grammar and backend");
    // The GPUs' contexts are made on other threads while the grammar loads (a few hundred ms
    // each, that the backends' first CUDA calls would otherwise wait for after the load): device
    // 0 for one GPU, every device of --devices at once (each device once).
    std::vector<int> context_devices = backend.devices;
    std::sort(context_devices.begin(), context_devices.end());
    context_devices.erase(std::unique(context_devices.begin(), context_devices.end()),
                          context_devices.end());
    // None on a machine without a GPU (a "cuda context" row in --timeline would mislead), nor
    // for a product of grammars on the CPU (auto parses a product on the CPU). Whether there is
    // a GPU is asked on that thread too: the driver's start (about 0.1 s) would hold up the load.
    const bool maybe_device =
        context_devices.empty() && (!link || link->size() == 1) &&
        (backend.device == DeviceKind::kCuda ||
         (backend.device == DeviceKind::kAuto && !GrammarArgumentsAreProduct(args.grammars)));
    if (maybe_device) context_devices.push_back(0);
    std::vector<std::thread> contexts;
    for (int device : context_devices) {
      contexts.emplace_back([device, maybe_device] {
        if (maybe_device && cuda::DeviceCount() == 0) return;
        timeline::Scope scope("cuda context (beside the load)");
        cuda::CreateContext(device);  // a device that cannot be used says so in its backend
      });
    }
    auto made = LoadedParser::Load(
        {.grammar = args.grammar,
         .more_grammars = std::vector<std::string>(
             args.grammars.begin() + std::min<size_t>(1, args.grammars.size()),
             args.grammars.end()),
         .grammar_options = GrammarOptionsForCommand(args.min_rule_prob, !args.no_cache),
         .lexicon = {.backoff_unknown_words = args.backoff},
         .backend = backend,
         .parser = {.max_length = args.max_length,
                    .retry_with_wider_lexicon = !args.no_retry,
                    .tree_likelihood = args.tree_likelihood,
                    .confidence = args.confidence},
         .beside_backend = beside_backend});
    for (std::thread& context : contexts) context.join();
    if (!made.ok()) Fail(made.status().message());
    loaded = std::move(*made);
    const Grammar& grammar = loaded->model().grammar;
    const bool max_rule = backend.decoder == DecoderKind::kMaxRule;
    if ((args.tree_likelihood || args.confidence) && max_rule && !grammar.base_unaries_known) {
      Fail(
          "--tree-likelihood and --confidence need the grammar's base unary rules, which a "
          "Berkeley .gr file holds and this grammar (" +
              GrammarArgumentName(args.grammar) + ") lacks",
          2);
    }
    if (args.confidence && max_rule &&
        !RebinarizeTree(Tree("ROOT"), loaded->model().binarization).ok()) {
      Fail("--confidence re-binarizes trees the grammar's way, and this grammar's binarization ('" +
               loaded->model().binarization + "') is not supported (RIGHT and LEFT are)",
           2);
    }
    const std::string backend_name = loaded->parser().backend().name();
    // (Asking the device for its properties costs milliseconds: only when they are printed.)
    if (spdlog::should_log(spdlog::level::debug))
      spdlog::debug(
          "grammar {}: {} symbols, {} states, {} binary and {} unary rules; loaded, with the {} "
          "backend{}, in {:.2f} s",
          GrammarArgumentName(args.grammar), grammar.num_symbols(), grammar.num_states(),
          grammar.num_binary_rules(), grammar.num_unary_rules(), backend_name,
          backend_name.rfind("cuda", 0) == 0 ? " on " + cuda::DeviceDescription() : "",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
    for (const std::string& warning : loaded->parser().backend().TakeWarnings()) {
      spdlog::warn("{}", warning);
    }
  }
  if (!reads_and_writes) {
    MpiWork(*link, loaded->parser(), format);
    return;
  }

  if (args.input == "-" && !early_opened_input) input = InputFile::Open(args.input);
  if (!input.ok()) Fail(input.status().message());
  const TokenConvention convention =
      ParseTokenConvention(args, loaded ? &loaded->model() : nullptr, early.convention);
  StatusOr<std::unique_ptr<SentenceSource>> source =
      early.source ? std::move(early.source)
                   : SentenceSource::Create(**input, SourceOptions(args, convention));
  if (!source.ok()) Fail(source.status().message());
  std::ofstream output_file;
  std::ostream& out = OpenOutput(args.output, output_file);
  ResultWriter writer(out, FlushEachLine(args.output), args.output);
  if (parses) {
    ParseStream(args, loaded->parser(), **source, **input, writer, format, batch_size(), &early);
  } else {
    MpiCoordinate(args, *link, **source, **input, writer);
  }
  FinishOutput(out, output_file, args.output);
  if (loaded) {
    timeline::Scope scope("release the parser");
    loaded.reset();
  }
  if (args.timeline) std::fputs(timeline::Report().c_str(), stderr);
}

}  // namespace

void AddParseCommand(CLI::App& app) {
  auto args = std::make_shared<ParseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "parse",
      "Parse text into Penn Treebank trees, one line per sentence, in input order. Input is raw "
      "UTF-8 text (split into sentences and tokenized Penn Treebank style; blank lines separate "
      "paragraphs) or, with --tokenized, one tokenized sentence per line. A sentence that cannot "
      "be parsed (no parse, too long, out of memory) prints (()) and a warning on stderr.");
  Shown(cmd->add_option("-g,--grammar", args->grammars,
                        "Grammar: a Berkeley .gr file (the Berkeley parser's own grammar, read "
                        "directly, with its lexicon's exact scores), a Berkeley text export "
                        "PREFIX (PREFIX.grammar + PREFIX.lexicon from WriteGrammarToTextFile, or "
                        "PREFIX.binary + PREFIX.unary from DumpGrammar; files may be gzipped) or "
                        "a .ckybin cache written by `cky convert`; default: the built-in English "
                        "grammar trained on GUM (data/README.md). A product of grammars (Petrov "
                        "2010: the sum of their log rule posteriors decides; max-rule, on the CPU "
                        "or with -b cuda on one GPU; parser/product.h): builtin-product (the "
                        "built-in grammar's product), a "
                        ".ckyprod file (`cky train --seeds`) or -g given several times")
            ->allow_extra_args(false)  // -g A INPUT: INPUT is the input, not a grammar
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll),
        "FILE|PREFIX");
  Shown(cmd->add_option("-i,--input,INPUT", args->input,
                        "Input file (plain, gzip, bzip2, xz or zstd); - for stdin. Results are "
                        "written as soon as they are known, so `cky parse` can run as a "
                        "co-process")
            ->capture_default_str(),
        "FILE");
  cmd->add_flag(
      "--tokenized", args->tokenized,
      "Input holds one tokenized sentence per line (tokens separated by spaces), as "
      "the Berkeley parser reads it; an empty line is an empty sentence and prints "
      "(()). The tokens ( and ) are read as -LRB- and -RRB- (the treebanks' words for them), "
      "and quotes and brackets written as another treebank writes them as the grammar's words "
      "(see --token-style)");
  cmd->add_flag("--sentence-per-line", args->sentence_per_line,
                "Raw text, one sentence per line: each line is tokenized, never split into "
                "sentences (an empty line prints (()))");
  Shown(cmd->add_option("--hyphens", args->hyphens,
                        "Keep hyphenated words whole (the WSJ convention of Berkeley's English "
                        "grammars), split them at hyphens (GUM/OntoNotes style), or auto: as the "
                        "grammar's training treebank did, read from the words its lexicon knows "
                        "(split for the built-in grammar and GUM-trained ones, whole for "
                        "WSJ-trained ones). Tokens of --tokenized input stay as given (a tree's "
                        "leaves are the input's tokens, as EVALB needs to score against gold "
                        "trees) unless this is split: then hyphenated tokens the grammar does not "
                        "know whole are split too")
            ->check(OneOf({"auto", "keep", "split"}))
            ->capture_default_str(),
        "{auto,keep,split}");
  Shown(cmd->add_option("--token-style", args->token_style,
                        "ptb: quotation marks become `` and '', [ ] -LSB- -RSB- (the WSJ's words, "
                        "which Berkeley's English grammars know); gum: \" ' [ ] as written (GUM's "
                        "words); auto: the words the grammar's lexicon knows (gum for the "
                        "built-in grammar and GUM-trained ones). Applies to every input form: "
                        "tokens of --tokenized input written the other way (`` or \", -LSB- or "
                        "[) are rewritten too; given: --tokenized input as it is, but for ( ) "
                        "(as the Berkeley parser reads it), raw text as ptb")
            ->check(OneOf({"auto", "ptb", "gum", "given"}))
            ->capture_default_str(),
        "{auto,ptb,gum,given}");
  Shown(cmd->add_option("-o,--output", args->output, "Output file; - for stdout")
            ->capture_default_str(),
        "FILE");
  Shown(cmd->add_option("--format", args->format,
                        "penn: one tree per line (the Berkeley parser's output); pretty: each "
                        "tree indented over several lines (`cky eval` reads it); json: one JSON "
                        "object per line with the sentence's index (from 1), tokens, tree, ok, "
                        "and log_likelihood / tree_log_likelihood / confidence / model_score "
                        "with --sentence-likelihood / --tree-likelihood / --confidence / "
                        "--model-score, and kbest with --kbest")
            ->check(OneOf(OutputFormatNames()))
            ->capture_default_str(),
        "{penn,pretty,json}");
  Shown(cmd->add_option("-b,--backend", args->backend,
                        "auto: CUDA when a GPU is present, else cpu (a product of grammars: cpu); "
                        "cpu: all cores; reference: the plain single-threaded reference; cuda: "
                        "the GPU")
            ->check(OneOf({"auto", "cpu", "reference", "cuda"}))
            ->capture_default_str(),
        "{auto,cpu,reference,cuda}");
  Shown(cmd->add_option("--kernel", args->kernel,
                        "CUDA kernel variant. Default: " + CudaKernelNames().front() +
                            ", the fastest measured (bench/RESULTS.md). `--kernel list` prints "
                            "every variant with a line each: the others are the design space of "
                            "Yi et al. (2011) and later research variants, kept for measurement. "
                            "Every variant gives the same trees")
            ->check(CLI::Validator(
                [](std::string& input) -> std::string {
                  for (const std::string& name : CudaKernelNames())
                    if (input == name) return "";
                  if (input == "list") return "";
                  return "'" + input +
                         "' is no kernel variant (`cky parse --kernel list` lists them)";
                },
                "NAME|list")),
        "NAME|list");
  Shown(
      cmd->add_option("--devices", args->devices,
                      "Parse on several GPUs at once: all, or a list of CUDA device numbers "
                      "such as 0,1,3 (a number may repeat: 0,0 runs two parsers on device 0). "
                      "Each batch is dealt out by sentence length so that every device stays "
                      "busy; output is still one line per input sentence, in input order. A "
                      "device that fails hands its sentences to the others (or to the CPU) "
                      "with a warning. A batch then holds 2 x --batch-size sentences per "
                      "device, and three batches are parsed at once so that no device waits for "
                      "the others at a batch's end. Each device prunes as one GPU does (--prune)"),
      "all|LIST");
  cmd->add_flag("--mpi", args->mpi,
                std::string("Run as one process of an MPI job (mpirun -np N cky parse --mpi "
                            "...): rank 0 reads the input and writes the output in order, ranks "
                            "1..N-1 parse shards of --batch-size sentences on their GPU (one per "
                            "rank of a host, in turn; or --devices) or CPU cores (-b cpu, "
                            "--threads). With -np 1 the one process does everything") +
                    (MpiBuilt() ? "" : ". This build has no MPI"));
  Shown(cmd->add_option("-t,--threads", args->threads,
                        "CPU threads for the cpu backend; 0 = all cores")
            ->check(Between(0, kMaxThreads))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--max-length", args->max_length,
                        "Sentences with more words are not parsed (printed as (()) with a "
                        "warning); 0 = no limit")
            ->check(AtLeast(0))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--batch-size", args->batch_size,
                        "Most sentences parsed together (GPU batches are built from these); a "
                        "batch holds what has arrived, so a sentence is never held back waiting "
                        "for more input. Default on one GPU: 1024 for exact --decoder viterbi "
                        "(device batches of similar lengths), 2048 with pruning (device batches of "
                        "1024: 1.3x faster than 256 with en_sm6s), else 256")
            ->check(AtLeast(1)),
        "N");
  Shown(cmd->add_option("--min-rule-prob", args->min_rule_prob,
                        "Drop binary rules with a smaller probability before parsing; 0 keeps "
                        "every rule. Default: 1e-10 for a .gr file (what the Berkeley parser "
                        "does, so that trees match its own), 0 for text exports and caches")
            ->check(Between(0.0, 1.0)),
        "P");
  Shown(cmd->add_option("--decoder", args->decoder,
                        "viterbi: the grammar's single best derivation (Berkeley's -viterbi), "
                        "exact; max-rule: the tree whose rules have the largest product of "
                        "posterior probabilities, from exact inside-outside over the latent "
                        "substates (the Berkeley parser's default, more accurate). With a "
                        "text-export grammar, which holds only Viterbi-closed unary rules, "
                        "max-rule sums over those (an approximation; a .gr file has the exact "
                        "sum-closed unaries)")
            ->check(OneOf({"viterbi", "max-rule"}))
            ->capture_default_str(),
        "{max-rule,viterbi}");
  Shown(cmd->add_option("--prune", args->prune,
                        "Coarse-to-fine pruning (Petrov & Klein 2007, as the Berkeley parser): "
                        "parse first with coarser projections of the grammar and skip the chart "
                        "items they find very unlikely (cpu and cuda backends, both decoders; "
                        "cuda gives the cpu's trees). off: exact, every item "
                        "considered; fast (or on): the Berkeley parser's default thresholds (3.6x "
                        "its speed on one core, F1 0.1-0.6 below exact on GUM); accurate: its "
                        "-accurate ones (2.5x its default's speed); safe: 4 nats below those and "
                        "without the Berkeley parser's floor on the coarse grammars' rules "
                        "(exact parsing's trees on over 99% of GUM test sentences, F1 within "
                        "0.05; 1.1x the Berkeley parser's default speed); balanced: one nat "
                        "tighter than safe at the two coarsest levels, tighter still at the "
                        "finer ones; "
                        "auto: safe on the cpu backend (but off for Viterbi with a grammar of "
                        "under 50,000 binary rules, where exact is faster); on cuda balanced for "
                        "max-rule at every other level (0, 2, 4: over 6x exact's speed, whole "
                        "process; exact's trees on over 99% of GUM sentences) and off for "
                        "Viterbi (pruned measured slower than exact there); off for the "
                        "reference backend")
            ->check(OneOf({"auto", "off", "on", "fast", "accurate", "safe", "balanced"}))
            ->capture_default_str(),
        "{auto,off,fast,accurate,safe,balanced}");
  cmd->add_flag("--accurate", args->accurate,
                "Same as --prune accurate (the Berkeley parser's -accurate)");
  Shown(cmd->add_option(
               "--prune-levels", args->prune_levels,
               "With pruning, pre-parse only at these levels of the grammar's split hierarchy "
               "(0: one substate per symbol), e.g. --prune-levels 0 2 4; default: every level "
               "below the grammar itself, as the Berkeley parser")
            ->check(CLI::NonNegativeNumber),
        "LEVEL ...");
  Shown(cmd->add_option("--kbest", args->kbest,
                        "Print the K best max-rule trees of each sentence, best first, one per "
                        "line, then a blank line (Berkeley's -kbest); the first is the --kbest 1 "
                        "tree. Ours are the exact K highest-scoring trees of the max-rule chart "
                        "(Berkeley's list takes shortcuts and can skip some). With --format json: "
                        "a \"kbest\" array. Memory grows with K times the chart: each cell "
                        "keeps up to K derivations, so a K in the tens of thousands needs "
                        "gigabytes for a long sentence")
            ->check(AtLeast(1))
            ->capture_default_str(),
        "K");
  Shown(cmd->add_option("--kbest-style", args->kbest_style,
                        "exact: the K highest-scoring max-rule trees; berkeley: the list the "
                        "Berkeley parser 1.7 prints, which takes shortcuts (two-word spans keep "
                        "only their best rule, trees differing only in some tags are dropped, "
                        "some trees are never reached), to compare with its output")
            ->check(OneOf({"exact", "berkeley"}))
            ->capture_default_str(),
        "{exact,berkeley}");
  cmd->add_flag("--sentence-likelihood", args->sentence_likelihood,
                "Print log P(words), the sum over every tree, before each tree, tab-separated "
                "(Berkeley's -sentence_likelihood). With --decoder viterbi, as Berkeley's "
                "-viterbi: the best derivation's log-score instead");
  cmd->add_flag("--tree-likelihood", args->tree_likelihood,
                "Print log P(tree, words) before each tree, tab-separated: the tree's probability "
                "summed over the grammar's latent substates (Berkeley's -tree_likelihood; needs a "
                ".gr grammar). With --decoder viterbi, as Berkeley's -viterbi: the best "
                "derivation's log-score");
  cmd->add_flag("--confidence", args->confidence,
                "Print log P(tree | words) = log P(tree, words) - log P(words) before each tree, "
                "tab-separated (Berkeley's -confidence; the printed tree is binarized again the "
                "grammar's way first; replaces --model-score's column, as in Berkeley). With "
                "--decoder viterbi, as Berkeley's -viterbi: 0");
  cmd->add_flag("--model-score", args->model_score,
                "Print the max-rule score (log of the product of the tree's rule posteriors) "
                "before each tree, tab-separated, as %.8f (Berkeley's -modelScore; Viterbi: the "
                "best derivation's log-score). Columns come in Berkeley's order: tree "
                "likelihood, sentence likelihood, confidence or model score");
  cmd->add_flag("--binarize", args->binarize,
                "Print the binarized tree, keeping the grammar's @ nodes (Berkeley's -binarize)");
  cmd->add_flag("--substates", args->substates,
                "Keep the latent substates in labels, e.g. NP-3 (Berkeley's -substates)");
  cmd->add_flag("--scores", args->scores,
                "Print each node's Viterbi inside log-score after its label (Berkeley's -scores)");
  cmd->add_flag("--backoff", args->backoff,
                "Let unknown words back off, tag by tag, to shorter signatures (UNK-CAPS-s -> "
                "UNK-CAPS -> UNK) for tags their own signature has no lexicon row for. Off by "
                "default: with Berkeley text exports it agrees less with the Berkeley parser");
  cmd->add_flag("--no-retry", args->no_retry,
                "Do not retry a sentence without a parse with the widened lexicon (known words "
                "also taking their signature's scores)");
  cmd->add_flag("--no-cache", args->no_cache,
                "Do not read or write the binary grammar cache (~/.cache/cky)");
  cmd->add_flag("--progress", args->progress,
                "Show progress (sentences, rate, share of the input, time left) on stderr even "
                "when it is not a terminal");
  cmd->add_flag("--no-progress", args->no_progress, "Never show progress");
  cmd->add_flag("--timeline", args->timeline,
                "At the end, print on stderr where the time went: each phase (loading, reading, "
                "lexical scoring, the device's batches and their breakdown, formatting, writing) "
                "with its calls, total seconds and first start and last end since the start");
  cmd->callback([args] {
    if (args->kernel == "list") {
      PrintKernels();
      return;
    }
    if (args->timeline) timeline::Enable();
    args->grammar = args->grammars.empty() ? "" : args->grammars.front();
    RunParse(*args);
  });
}

}  // namespace cky::apps
