// `cky recognize`: context-free membership, one answer (1 or 0) per input line, in order.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <map>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "apps/output_format.h"
#include "apps/progress.h"
#include "common/input_file.h"
#include "cuda/common/device.h"
#include "membership/bpbc.h"
#include "membership/cnf_grammar.h"
#include "membership/cyk_recognizer.h"

namespace cky::apps {
namespace {

struct RecognizeArgs {
  std::string grammar;
  std::string input = "-";
  std::string output = "-";
  bool bulk = false;
  std::string backend = "auto";
  cuda::RuleMapping mapping = cuda::RuleMapping::kLvsDummy;
  cuda::CellMemory memory = cuda::CellMemory::kShared;
  int word_bits = 0;  // 0: 64 on the CPU, 32 on the GPU (what each is fastest with)
  cuda::BpbcKernel bulk_kernel = cuda::BpbcKernel::kAuto;
  cuda::Scheduling scheduling = cuda::Scheduling::kDynamic;
  bool no_minimize = false;
  int threads = 0;
  int64_t chunk = int64_t{1} << 20;
};

void Run(const RecognizeArgs& args) {
  auto grammar = LoadRecognitionGrammar(args.grammar);
  if (!grammar.ok()) Fail(grammar.status().message());
  spdlog::debug("grammar: {} nonterminals, {} binary rules, {} chain rules, {} terminals",
                grammar->num_nonterminals(), grammar->binary_rules.size(),
                grammar->unary_closure.size(), grammar->num_terminals() - 1);
  bool use_gpu = args.backend == "cuda";
  if (args.backend == "auto") use_gpu = cuda::DeviceAvailable();
  if (use_gpu && !cuda::DeviceAvailable()) {
    Fail("--backend cuda: " + cuda::DeviceDescription());
  }
  cuda::BpbcProgram program;
  if (args.bulk) {
    BpbcCircuit circuit = CompileCircuit(*grammar);
    const int64_t gates = circuit.GateCount();
    if (!args.no_minimize) circuit = MinimizeCircuit(circuit, {.threads = args.threads});
    spdlog::debug("circuit: {} gates, {} after minimisation", gates, circuit.GateCount());
    program = FlattenCircuit(*grammar, circuit);
  }
  std::unique_ptr<cuda::BpbcGpu> bulk_gpu;
  std::unique_ptr<cuda::CykMembershipGpu> single_gpu;
  if (use_gpu && args.bulk) {
    auto created = cuda::BpbcGpu::Create(program);
    if (!created.ok()) Fail(created.status().message());
    bulk_gpu = std::move(*created);
  } else if (use_gpu) {
    auto created = cuda::CykMembershipGpu::Create(ToMembershipGrammar(*grammar),
                                                  {.mapping = args.mapping, .memory = args.memory},
                                                  kMaxRecognizeLength);
    if (!created.ok()) Fail(created.status().message());
    single_gpu = std::move(*created);
  }
  spdlog::debug("backend: {} {}", use_gpu ? "cuda" : "cpu", args.bulk ? "bulk (BPBC)" : "CYK");

  auto input = InputFile::Open(args.input);
  if (!input.ok()) Fail(input.status().message());
  std::ofstream file_out;
  std::ostream& out = OpenOutput(args.output, file_out);
  ResultWriter writer(out, FlushEachLine(args.output));
  ProgressMeter progress("strings", (*input)->size(), ShowProgress(false, false));
  int64_t line_number = 0, accepted_count = 0;
  std::string line;
  std::istream& in = (*input)->stream();
  while (in) {
    std::vector<std::vector<int32_t>> strings;
    // What has arrived, up to --batch-size: a co-process gets each answer without waiting.
    while (static_cast<int64_t>(strings.size()) < args.chunk &&
           (strings.empty() || (*input)->LineReady()) && std::getline(in, line)) {
      strings.push_back(grammar->Tokenize(line));
      ++line_number;
      const size_t limit =
          args.bulk ? cuda::BpbcGpu::kMaxLength : (use_gpu ? kMaxRecognizeLength : SIZE_MAX);
      if (strings.back().size() > limit) {
        Fail(args.input + ":" + std::to_string(line_number) + ": " +
             std::to_string(strings.back().size()) + " terminals; this path takes at most " +
             std::to_string(limit));
      }
    }
    if (strings.empty()) break;
    std::vector<uint8_t> accepted;
    if (bulk_gpu) {
      cuda::BpbcGpuOptions options{.word_bits = args.word_bits ? args.word_bits : 32,
                                   .scheduling = args.scheduling,
                                   .kernel = args.bulk_kernel};
      Status status = bulk_gpu->Recognize(strings, options, &accepted, nullptr);
      if (!status.ok()) Fail(status.message());
    } else if (args.bulk) {
      auto result =
          RecognizeBulkCpu(program, strings,
                           {.word_bits = args.word_bits ? args.word_bits : 64,
                            .threads = args.threads,
                            .dynamic_scheduling = args.scheduling == cuda::Scheduling::kDynamic});
      if (!result.ok()) Fail(result.status().message());
      accepted = std::move(*result);
    } else if (single_gpu) {
      Status status = single_gpu->Recognize(strings, &accepted);
      if (!status.ok()) Fail(status.message());
    } else {
      for (const auto& s : strings) accepted.push_back(RecognizeReference(*grammar, s));
    }
    for (uint8_t a : accepted) {
      writer.Write(a ? "1\n" : "0\n");
      accepted_count += a;
    }
    writer.EndBatch();
    progress.Update(line_number, (*input)->BytesConsumed());
  }
  out.flush();
  if (!out) Fail("write error on " + args.output);
  spdlog::debug("{} of {} strings accepted", accepted_count, line_number);
}

}  // namespace

void AddRecognizeCommand(CLI::App& app) {
  auto args = std::make_shared<RecognizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "recognize",
      "Membership test: prints 1 when the grammar derives an input line (space-separated "
      "terminals), else 0, one answer per line in input order");
  Shown(cmd->add_option("-g,--grammar", args->grammar,
                        "Grammar: a file in our CNF text format (see membership/cnf_grammar.cpp) "
                        "or any grammar `cky parse --grammar` reads (a Berkeley .gr file, text "
                        "export PREFIX or .ckybin cache), used as its boolean projection")
            ->required(),
        "FILE|PREFIX");
  Shown(cmd->add_option("-i,--input,INPUT", args->input,
                        "Strings, one per line (plain, gzip, bzip2, xz or zstd; - for stdin)")
            ->capture_default_str(),
        "FILE");
  Shown(
      cmd->add_option("-o,--output", args->output, "Where to write the 1/0 answers (- for stdout)")
          ->capture_default_str(),
      "FILE");
  cmd->add_flag("--bulk", args->bulk,
                "Bitwise-parallel bulk CKY: 32 or 64 strings per machine word through the "
                "grammar's minimised AND/OR circuit (fast for many strings)");
  Shown(cmd->add_option("-b,--backend", args->backend,
                        "cpu: reference CYK (or BPBC on all cores with --bulk); cuda: the GPU; "
                        "auto: cuda when a device is present")
            ->check(OneOf({"auto", "cpu", "cuda"}))
            ->capture_default_str(),
        "{auto,cpu,cuda}");
  const std::map<std::string, cuda::RuleMapping> mappings = {
      {"R", cuda::RuleMapping::kRule},
      {"RVS", cuda::RuleMapping::kRvs},
      {"LVS", cuda::RuleMapping::kLvs},
      {"RVS+D", cuda::RuleMapping::kRvsDummy},
      {"LVS+D", cuda::RuleMapping::kLvsDummy}};
  Shown(cmd->add_option(
               "--mapping", args->mapping,
               "Single-string GPU CYK rule order (Kim et al.): R as given, RVS by first "
               "right-hand variable, LVS by left-hand variable, +D padded with dummy rules to "
               "warp boundaries")
            ->transform(CLI::CheckedTransformer(mappings, CLI::ignore_case))
            ->default_str("LVS+D"),
        "{R,RVS,LVS,RVS+D,LVS+D}");
  const std::map<std::string, cuda::CellMemory> memories = {{"global", cuda::CellMemory::kGlobal},
                                                            {"shared", cuda::CellMemory::kShared}};
  Shown(cmd->add_option("--memory", args->memory,
                        "Single-string GPU CYK: build each cell's variable set in shared memory "
                        "(shared) or write it straight to the chart (global)")
            ->transform(CLI::CheckedTransformer(memories, CLI::ignore_case))
            ->default_str("shared"),
        "{global,shared}");
  Shown(cmd->add_option("--word-bits", args->word_bits,
                        "--bulk: strings per machine word; default 64 on the CPU, 32 on the GPU")
            ->check(OneOf({"32", "64"})),
        "{32,64}");
  const std::map<std::string, cuda::BpbcKernel> bulk_kernels = {
      {"auto", cuda::BpbcKernel::kAuto},
      {"1", cuda::BpbcKernel::kThreadPerWord},
      {"2", cuda::BpbcKernel::kCooperative}};
  Shown(cmd->add_option(
               "--bulk-kernel", args->bulk_kernel,
               "--bulk on the GPU: 1 = one thread per machine word walks the whole circuit (the "
               "paper's mapping); 2 = the warps of a block share out the circuit, operands "
               "staged in shared memory; auto = 2 for circuits of 512 gates or more whose "
               "cells fit in shared memory, else 1")
            ->transform(CLI::CheckedTransformer(bulk_kernels, CLI::ignore_case))
            ->default_str("auto"),
        "{auto,1,2}");
  const std::map<std::string, cuda::Scheduling> schedulings = {
      {"static", cuda::Scheduling::kStatic}, {"dynamic", cuda::Scheduling::kDynamic}};
  Shown(cmd->add_option(
               "--scheduling", args->scheduling,
               "--bulk: string groups handed to blocks/threads by an atomic counter (dynamic) "
               "or round robin (static)")
            ->transform(CLI::CheckedTransformer(schedulings, CLI::ignore_case))
            ->default_str("dynamic"),
        "{dynamic,static}");
  cmd->add_flag("--no-minimize", args->no_minimize,
                "--bulk: evaluate the circuit as compiled, one AND per rule, without minimising");
  Shown(cmd->add_option("-t,--threads", args->threads, "CPU threads; 0 = all cores")
            ->check(AtLeast(0))
            ->capture_default_str(),
        "N");
  Shown(cmd->add_option("--batch-size", args->chunk,
                        "Most strings answered together; a batch holds what has arrived, so an "
                        "answer is never held back waiting for more input")
            ->check(AtLeast(1))
            ->capture_default_str(),
        "N");
  cmd->add_option("--chunk", args->chunk)->check(AtLeast(1))->group("");  // the old name
  cmd->callback([args] { Run(*args); });
}

}  // namespace cky::apps
