// cky: exact PCFG parsing on the GPU and the CPU. See `cky --help` and `cky COMMAND --help`.
#include <fcntl.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "apps/commands.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

// The CPU parser allocates and frees charts of a few MB for every sentence and pruning level, and
// glibc gives such blocks back to the kernel (mmap above its threshold, trimming of the heap), so
// every sentence page-faulted its charts in again: half the system time of `cky parse -b cpu`
// with gum_sm5.gr (bench/RESULTS.md). Freed memory is kept for reuse instead: blocks up to 32 MB
// (glibc's largest threshold) come from the heap, and the heap keeps up to 512 MB free. The
// process's peak memory stays about what it was; it is no longer given back between sentences.
void KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

// A standard stream the caller closed (`cky eval ... >&-`) is opened on /dev/null, so that no file
// the command opens gets its number (results written "to standard output" would land in it);
// standard output read-only, so that writing results there fails and is reported.
void ReopenClosedStandardStreams() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = ::open("/dev/null", fd == STDERR_FILENO ? O_WRONLY : O_RDONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}

// Results on standard output that did not all get there fail the command, whichever command it
// was (each checks its own writes too, and says which failed sooner).
int CheckStandardOutput() {
  errno = 0;
  std::cout.flush();
  if (std::cout && std::fflush(stdout) == 0 && !std::ferror(stdout)) return 0;
  std::fprintf(stderr, "cky: error: standard output: cannot write%s%s\n", errno ? ": " : "",
               errno ? std::strerror(errno) : "");
  return 1;
}

std::string CommandList(const CLI::App& app) {
  std::string names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  return names;
}

// What CLI11 would only answer with "A subcommand is required": no command, an unknown one
// ("cky pars"), or an unknown option before it ("cky --bogus"). Empty when the command line
// names a command (or asks for help or the version).
std::string MissingCommandMessage(const CLI::App& app, const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "-h" || arg == "--help" || arg == "--version") return "";
    if (arg == "-v" || arg == "--verbose" || arg == "-q" || arg == "--quiet") continue;
    if (!arg.empty() && arg[0] == '-') {
      return "unknown option '" + arg +
             "' (options go after the command; commands: " + CommandList(app) + ")";
    }
    for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (command->check_name(arg)) return "";
    }
    return "unknown command '" + arg + "'; the commands are " + CommandList(app);
  }
  return "no command given; the commands are " + CommandList(app);
}

// The Berkeley parser's single-dash options and what `cky` calls them. CLI11 would read
// "-viterbi" as -v followed by a value ("terbi: cannot open for reading").
struct BerkeleyFlag {
  const char* flag;
  const char* advice;
};
constexpr BerkeleyFlag kBerkeleyFlags[] = {
    {"-gr", "did you mean `-g FILE` (--grammar)?"},
    {"-inputFile", "did you mean `-i FILE` (--input), or the file as an argument?"},
    {"-outputFile", "did you mean `-o FILE` (--output)?"},
    {"-kbest", "did you mean `--kbest K`?"},
    {"-tokenize",
     "`cky parse` tokenizes raw text without being asked (--tokenized is for input that is "
     "already tokenized): leave it out"},
    {"-nThreads", "did you mean `-t N` (--threads)?"},
    {"-maxLength", "did you mean `--max-length N`?"},
    {"-viterbi", "did you mean `--decoder viterbi`?"},
    {"-accurate", "did you mean `--accurate` (--prune accurate)?"},
    {"-confidence", "did you mean `--confidence`?"},
    {"-sentence_likelihood", "did you mean `--sentence-likelihood`?"},
    {"-tree_likelihood", "did you mean `--tree-likelihood`?"},
    {"-modelScore", "did you mean `--model-score`?"},
    {"-binarize", "did you mean `--binarize`?"},
    {"-substates", "did you mean `--substates`?"},
    {"-scores", "did you mean `--scores`?"},
};

// What to say about a Berkeley parser option on the command line (before a "--" that ends the
// options); empty when there is none.
std::string BerkeleyFlagMessage(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") break;
    for (const BerkeleyFlag& flag : kBerkeleyFlags) {
      if (arg == flag.flag) return "'" + arg + "' is a Berkeley parser option: " + flag.advice;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  ReopenClosedStandardStreams();
  KeepFreedMemoryForReuse();
  CLI::App app{
      "cky: constituency parsing with Berkeley latent-variable grammars (max-rule or Viterbi "
      "decoding; exact on a CUDA GPU when there is one, coarse-to-fine pruned on all CPU cores "
      "otherwise, exact with --prune off); split-merge grammar training; EVALB-identical "
      "scoring; membership and dense-PCFG experiments. "
      "`cky COMMAND --help` explains a command's options; `cky help COMMAND` too."};
  app.name("cky");
  app.require_subcommand(1);
  // -v and -q are understood after the command too ("cky parse -v").
  app.fallthrough();
  app.set_version_flag("--version", "cky 0.1.0");
  bool verbose = false;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "Log details (grammar sizes, timings) on stderr");
  app.add_flag("-q,--quiet", quiet, "Log only errors on stderr");
  app.parse_complete_callback([&] {
    spdlog::set_level(verbose ? spdlog::level::debug
                              : (quiet ? spdlog::level::err : spdlog::level::info));
  });
  // Messages go to stderr: stdout carries results (parses, `cky eval` reports).
  spdlog::set_default_logger(spdlog::stderr_color_mt("cky"));
  spdlog::set_pattern("cky: %^%l%$: %v");

  cky::apps::AddParseCommand(app);
  cky::apps::AddTokenizeCommand(app);
  cky::apps::AddEvalCommand(app);
  cky::apps::AddTrainCommand(app);
  cky::apps::AddConvertCommand(app);
  cky::apps::AddRecognizeCommand(app);
  cky::apps::AddInsideCommand(app);
  cky::apps::AddRandomGrammarCommand(app);
  cky::apps::AddRandomStringsCommand(app);

  std::vector<std::string> args(argv + 1, argv + argc);
  // `cky help [COMMAND]` is `cky [COMMAND] --help`.
  if (!args.empty() && args[0] == "help") {
    args.erase(args.begin());
    args.push_back("--help");
  }
  std::string problem = BerkeleyFlagMessage(args);
  if (problem.empty()) problem = MissingCommandMessage(app, args);
  if (!problem.empty()) {
    std::fprintf(stderr, "cky: %s\nRun `cky --help` for what each command does.\n",
                 problem.c_str());
    return 2;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // the command already explained itself on stderr
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version, or what is wrong with the usage
    return code == 0 ? CheckStandardOutput() : 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "cky: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    // Nothing should get here (errors are Status values, reported by the commands); if something
    // does, it is a message and exit code 1, not an abort.
    std::fprintf(stderr, "cky: error: %s\n", e.what());
    return 1;
  }
  return CheckStandardOutput();
}
