// `cky recognize`: context-free membership, one answer (1 or 0) per input line, in order.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "apps/command_util.h"
#include "apps/commands.h"
#include "apps/mpi_link.h"
#include "apps/output_format.h"
#include "apps/progress.h"
#include "common/input_file.h"
#include "cuda/common/device.h"
#include "membership/bpbc.h"
#include "membership/cnf_grammar.h"
#include "membership/cyk_recognizer.h"
#include "parser/multi_device_backend.h"

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
  std::string devices;  // --devices (--bulk on GPUs): "" = the current device only
  bool mpi = false;
};

// --bulk on several GPUs (--devices): one BpbcGpu per listed device (a device may repeat; its
// table memory is then shared out), each batch's strings dealt round robin in length order so that
// every device gets the same mix of lengths, the devices run at once (one host thread each, with
// its device current). A device that cannot start is left out, and one whose batch fails has that
// batch answered on the CPU, with a warning; the answers are the same whichever device gives them.
class BulkDevices {
 public:
  BulkDevices(const cuda::BpbcProgram& program, const std::vector<int>& devices, int threads)
      : program_(program), threads_(threads) {
    std::map<int, int> sharing;
    for (int d : devices) ++sharing[d];
    for (int d : devices) {
      std::string error;
      if (!cuda::SetDevice(d, &error)) {
        spdlog::warn("--devices: {}; not used", error);
        continue;
      }
      size_t free_bytes = 0, total_bytes = 0;
      cuda::DeviceMemory(&free_bytes, &total_bytes);
      auto created = cuda::BpbcGpu::Create(program);
      if (!created.ok()) {
        spdlog::warn("--devices: device {}: {}; not used", d, created.status().message());
        continue;
      }
      gpus_.push_back({d, std::move(*created),
                       sharing[d] > 1 ? static_cast<size_t>(0.6 * free_bytes) / sharing[d] : 0});
    }
    if (gpus_.empty()) Fail("--devices: no device could be used");
  }

  std::vector<uint8_t> Recognize(const std::vector<std::vector<int32_t>>& strings,
                                 cuda::BpbcGpuOptions options) {
    const size_t parts = gpus_.size();
    std::vector<size_t> order(strings.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return strings[a].size() > strings[b].size(); });
    std::vector<std::vector<size_t>> index(parts);
    std::vector<std::vector<std::vector<int32_t>>> part(parts);
    for (size_t k = 0; k < order.size(); ++k) {
      index[k % parts].push_back(order[k]);
      part[k % parts].push_back(strings[order[k]]);
    }
    std::vector<std::vector<uint8_t>> answers(parts);
    std::vector<std::string> errors(parts);
    std::vector<std::thread> threads;
    for (size_t g = 0; g < parts; ++g) {
      threads.emplace_back([&, g, options]() mutable {
        Gpu& gpu = gpus_[g];
        if (!cuda::SetDevice(gpu.device, &errors[g])) return;
        options.table_memory_bytes = gpu.table_bytes;
        Status status = gpu.bpbc->Recognize(part[g], options, &answers[g], nullptr);
        if (!status.ok()) errors[g] = status.message();
      });
    }
    for (std::thread& t : threads) t.join();
    std::vector<uint8_t> accepted(strings.size(), 0);
    for (size_t g = 0; g < parts; ++g) {
      if (!errors[g].empty()) {
        spdlog::warn("--devices: device {} failed ({}); its {} strings are answered on the CPU",
                     gpus_[g].device, errors[g], part[g].size());
        auto cpu = RecognizeBulkCpu(program_, part[g], {.word_bits = 64, .threads = threads_});
        if (!cpu.ok()) Fail(cpu.status().message());
        answers[g] = std::move(*cpu);
      }
      for (size_t k = 0; k < index[g].size(); ++k) accepted[index[g][k]] = answers[g][k];
    }
    return accepted;
  }

 private:
  struct Gpu {
    int device;
    std::unique_ptr<cuda::BpbcGpu> bpbc;
    size_t table_bytes;  // 0: the default share (one BpbcGpu on the device)
  };
  const cuda::BpbcProgram& program_;
  int threads_;
  std::vector<Gpu> gpus_;
};

void RecognizeOnThisProcess(const RecognizeArgs& args, const CnfGrammar& grammar,
                            const cuda::BpbcProgram& program, bool use_gpu, MpiLink* link);

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
  RunCommandWork(args.mpi, [&](MpiLink* link) {
    RecognizeOnThisProcess(args, *grammar, program, use_gpu, link);
  });
}

void RecognizeOnThisProcess(const RecognizeArgs& args, const CnfGrammar& grammar,
                            const cuda::BpbcProgram& program, bool use_gpu, MpiLink* link) {
  // With --mpi, rank 0 reads and writes and the others answer (rank 0 too when it is alone).
  const bool reads_and_writes = !link || link->rank() == 0;
  const bool answers = !link || link->size() == 1 || link->rank() > 0;
  std::unique_ptr<cuda::BpbcGpu> bulk_gpu;
  std::unique_ptr<BulkDevices> bulk_devices;
  std::unique_ptr<cuda::CykMembershipGpu> single_gpu;
  if (!args.devices.empty() && !(use_gpu && args.bulk)) {
    Fail("--devices runs --bulk on GPUs: add --bulk (and --backend cuda or auto with a GPU)", 2);
  }
  if (answers && use_gpu && args.bulk && !args.devices.empty()) {
    auto devices = ParseDeviceList(args.devices, cuda::DeviceCount());
    if (!devices.ok()) Fail(devices.status().message(), 2);
    bulk_devices = std::make_unique<BulkDevices>(program, *devices, args.threads);
  } else if (answers && use_gpu) {
    UseRankDevice(link);  // the ranks of a host take its GPUs in turn
    if (args.bulk) {
      auto created = cuda::BpbcGpu::Create(program);
      if (!created.ok()) Fail(created.status().message());
      bulk_gpu = std::move(*created);
    } else {
      auto created = cuda::CykMembershipGpu::Create(
          ToMembershipGrammar(grammar), {.mapping = args.mapping, .memory = args.memory},
          kMaxRecognizeLength);
      if (!created.ok()) Fail(created.status().message());
      single_gpu = std::move(*created);
    }
  }
  spdlog::debug("backend: {} {}", use_gpu ? "cuda" : "cpu", args.bulk ? "bulk (BPBC)" : "CYK");

  const size_t limit =
      args.bulk ? cuda::BpbcGpu::kMaxLength : (use_gpu ? kMaxRecognizeLength : SIZE_MAX);
  // The strings of lines first_line, first_line + 1, ... (numbered from 1), answered 1 or 0.
  auto answer = [&](const std::vector<std::string>& lines, int64_t first_line) {
    std::vector<std::vector<int32_t>> strings;
    for (const std::string& line : lines) {
      strings.push_back(grammar.Tokenize(line));
      if (strings.back().size() > limit) {
        Fail(args.input + ":" + std::to_string(first_line + strings.size() - 1) + ": " +
             std::to_string(strings.back().size()) + " terminals; this path takes at most " +
             std::to_string(limit));
      }
    }
    std::vector<uint8_t> accepted;
    if (bulk_devices || bulk_gpu) {
      cuda::BpbcGpuOptions options{.word_bits = args.word_bits ? args.word_bits : 32,
                                   .scheduling = args.scheduling,
                                   .kernel = args.bulk_kernel};
      if (bulk_devices) {
        accepted = bulk_devices->Recognize(strings, options);
      } else {
        Status status = bulk_gpu->Recognize(strings, options, &accepted, nullptr);
        if (!status.ok()) Fail(status.message());
      }
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
      for (const auto& s : strings) accepted.push_back(RecognizeReference(grammar, s));
    }
    std::string text;
    for (uint8_t a : accepted) text += a ? "1\n" : "0\n";
    return text;
  };
  if (!reads_and_writes) {
    // A shard is [its first line's number, the lines]; the answer, the lines' 1/0 text.
    ServeShards(*link, [&](std::vector<std::string>& shard) {
      const int64_t first = std::stoll(shard.at(0));
      shard.erase(shard.begin());
      return std::vector<std::string>{answer(shard, first)};
    });
    return;
  }

  auto input = InputFile::Open(args.input);
  if (!input.ok()) Fail(input.status().message());
  std::ofstream file_out;
  std::ostream& out = OpenOutput(args.output, file_out);
  ResultWriter writer(out, FlushEachLine(args.output), args.output);
  ProgressMeter progress("strings", (*input)->size(), ShowProgress(false, false));
  int64_t line_number = 0, written = 0, accepted_count = 0;
  std::istream& in = (*input)->stream();
  // The next batch: what has arrived, up to --batch-size lines (a co-process gets each answer
  // without waiting).
  auto read_batch = [&](std::vector<std::string>* lines) {
    lines->clear();
    std::string line;
    while (static_cast<int64_t>(lines->size()) < args.chunk &&
           (lines->empty() || (*input)->LineReady()) && std::getline(in, line)) {
      lines->push_back(std::move(line));
      ++line_number;
    }
    return !lines->empty();
  };
  auto write = [&](const std::string& text) {
    for (size_t at = 0; at < text.size(); at += 2) {
      writer.Write(text.substr(at, 2));
      accepted_count += text[at] == '1';
      ++written;
    }
    writer.EndBatch();
    progress.Update(written, (*input)->BytesConsumed());
  };
  std::vector<std::string> lines;
  if (answers) {
    while (read_batch(&lines)) {
      write(answer(lines, line_number - static_cast<int64_t>(lines.size()) + 1));
    }
  } else {
    DealShards(
        *link,
        [&](std::vector<std::string>* shard) {
          if (!read_batch(&lines)) return false;
          shard->push_back(std::to_string(line_number - static_cast<int64_t>(lines.size()) + 1));
          shard->insert(shard->end(), lines.begin(), lines.end());
          return true;
        },
        [&](int, std::vector<std::string>& answer_fields) { write(answer_fields.at(0)); });
  }
  if (Status read = (*input)->ReadStatus(); !read.ok()) Fail(read.message());
  FinishOutput(out, file_out, args.output);
  spdlog::debug("{} of {} strings accepted", accepted_count, written);
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
  Shown(cmd->add_option("--devices", args->devices,
                        "--bulk on several GPUs at once: all, or a list of CUDA device numbers "
                        "such as 0,1 (a number may repeat: two runs share that device). Each "
                        "batch's strings are dealt out evenly by length; answers stay in input "
                        "order. A device that fails has its strings answered on the CPU, with a "
                        "warning"),
        "all|LIST");
  cmd->add_flag("--mpi", args->mpi,
                std::string("Run as one process of an MPI job (mpirun -np N cky recognize --mpi "
                            "...): rank 0 reads the lines and writes the answers in order, ranks "
                            "1..N-1 answer shards of --batch-size lines on their GPU or cores") +
                    (MpiBuilt() ? "" : ". This build has no MPI"));
  Shown(cmd->add_option("-t,--threads", args->threads, "CPU threads; 0 = all cores")
            ->check(Between(0, kMaxThreads))
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
