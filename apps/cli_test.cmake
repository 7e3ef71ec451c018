# CTest script for the `cky` command line (the defects of issues 15 and 37): run with -DCKY=<cky binary>
# -DDATA=<tests/data> -DSOURCE=<source root> -DWORK=<scratch folder>
# (shared data: $CKY_SHARED_DIR, else SOURCE/../shared).
# Each block names the defect it guards against; the shared-data checks are skipped without it.
if(DEFINED ENV{CKY_SHARED_DIR})
  set(SHARED $ENV{CKY_SHARED_DIR})
elseif(NOT SHARED)
  set(SHARED ${SOURCE}/../shared)
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# run(<output prefix> [INPUT file] ARGS...): sets <prefix>_out, <prefix>_err, <prefix>_rc.
function(run prefix)
  cmake_parse_arguments(RUN "" "INPUT" "" ${ARGN})
  if(RUN_INPUT)
    execute_process(COMMAND ${CKY} ${RUN_UNPARSED_ARGUMENTS} INPUT_FILE ${RUN_INPUT}
                    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  else()
    execute_process(COMMAND ${CKY} ${RUN_UNPARSED_ARGUMENTS}
                    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  endif()
  set(${prefix}_out "${out}" PARENT_SCOPE)
  set(${prefix}_err "${err}" PARENT_SCOPE)
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
endfunction()

# if(NOT (condition)) fail("what") endif(): the message shows the last run's results.
# -DKEEP_GOING=ON reports every failing check instead of stopping at the first.
macro(fail what)
  if(KEEP_GOING)
    message(SEND_ERROR "FAILED ${what}")
  else()
    message(FATAL_ERROR "${what}\n  exit: ${r_rc}\n  stdout: ${r_out}\n  stderr: ${r_err}")
  endif()
endmacro()

# 1. An unknown command or option is named and the commands are listed; `cky help` helps; -v and
#    -q work after the command.
run(r pars)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "unknown command 'pars'" AND r_err MATCHES "parse, tokenize"))
  fail("1: cky pars")
endif()
run(r --bogus)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "--bogus" AND r_err MATCHES "parse, tokenize"))
  fail("1: cky --bogus")
endif()
run(r help)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "parse +Parse text"))
  fail("1: cky help")
endif()
run(r help eval)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "--strip-root"))
  fail("1: cky help eval")
endif()
file(WRITE ${WORK}/two.txt "The dog barks .\nA cat sleeps .\n")
run(r tokenize -v -i ${WORK}/two.txt)
if(NOT (r_rc EQUAL 0 AND r_err MATCHES "debug: 2 sentences"))
  fail("1: cky tokenize -v")
endif()
run(r tokenize -q -i ${WORK}/does_not_exist.txt)
if(NOT (r_rc EQUAL 1 AND r_err MATCHES "does_not_exist"))
  fail("1: cky tokenize -q (errors still shown)")
endif()

# 2. `cky parse FILE` takes its input as a positional argument, as eval/train/recognize do.
run(r parse -b cpu --tokenized --decoder viterbi --no-progress ${WORK}/two.txt)
# (Two trees; the built-in grammar's Viterbi tree of "A cat sleeps ." is an NP.)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "^\\( \\(S .*\n\\( \\([A-Z]+ .*\n$"))
  fail("2: cky parse FILE")
endif()

# Output formats: pretty trees read back by `cky eval` give the penn trees' scores.
file(WRITE ${WORK}/long.txt "The dog barks at the mailman in the big yellow house near the old river bank .\nBirds sing .\n")
run(r parse -b cpu --tokenized --decoder viterbi --no-progress ${WORK}/long.txt)
file(WRITE ${WORK}/long.penn "${r_out}")
run(r parse -b cpu --tokenized --decoder viterbi --no-progress --format pretty ${WORK}/long.txt)
file(WRITE ${WORK}/long.pretty "${r_out}")
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "\n +\\(VP"))
  fail("--format pretty: indented lines")
endif()
run(r eval ${WORK}/long.penn ${WORK}/long.pretty)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "Number of Valid sentence  = +2" AND r_out MATCHES "FMeasure += 100.00"))
  fail("--format pretty read back by cky eval")
endif()
run(r eval --json --strip-root ${WORK}/long.penn ${WORK}/long.pretty)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "\"all\":{\"sentences\":2,.*\"f1\":100"))
  fail("eval --json")
endif()

# 3. Range errors name the bound as written, not a 300-digit number.
run(r parse --threads=-1)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "-1 is below the smallest allowed value, 0" AND NOT r_err MATCHES "17976931"))
  fail("3: --threads=-1")
endif()
run(r parse --max-length -3)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "-3 is below" AND NOT r_err MATCHES "17976931"))
  fail("3: --max-length -3")
endif()

# 4. Bracket tokens in tokenized input are escaped, trees stay balanced, eval prints no NaN.
file(WRITE ${WORK}/brackets.txt "He ( the man ) left .\n")
run(r parse -b cpu --tokenized --no-progress ${WORK}/brackets.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "-LRB- -LRB-" AND NOT r_out MATCHES " \\(\\)" AND NOT r_out MATCHES "\\(\\)\\)"))
  fail("4: brackets escaped")
endif()
file(WRITE ${WORK}/parsed.txt "${r_out}")
run(r eval ${WORK}/parsed.txt ${WORK}/parsed.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "FMeasure += 100.00" AND NOT r_out MATCHES "[Nn][Aa][Nn]"))
  fail("4: eval of the escaped tree")
endif()
file(WRITE ${WORK}/gold_s.txt "(S (A a) (B b))\n")
file(WRITE ${WORK}/test_x.txt "(X (A a) (B b))\n")
run(r eval ${WORK}/gold_s.txt ${WORK}/test_x.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "FMeasure += +0.00" AND NOT r_out MATCHES "[Nn][Aa][Nn]"))
  fail("4: eval with no match prints 0, not NaN")
endif()

# 5. The built-in grammar (GUM: quotes and [ ] as written) and the tokenizer agree.
file(WRITE ${WORK}/quotes.txt "He said \"no\" to the plan .\n")
run(r parse -b cpu --decoder viterbi --no-progress ${WORK}/quotes.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "\\(`` \"\\)" AND r_out MATCHES "\\('' \"\\)"))
  fail("5: quotes for the built-in grammar")
endif()
file(WRITE ${WORK}/brackets_raw.txt "Research [1] shows it.\n")
run(r parse -b cpu --decoder viterbi --no-progress --format json ${WORK}/brackets_raw.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "\"tokens\":\\[\"Research\",\"\\[\",\"1\",\"\\]\""))
  fail("5: square brackets as GUM writes them for the built-in grammar")
endif()
run(r tokenize -i ${WORK}/quotes.txt)
if(NOT (r_out STREQUAL "He said `` no '' to the plan .\n"))
  fail("5: cky tokenize keeps PTB quotes by default")
endif()

# 6. A grammar cache is reported on stderr when written (content keying: grammar_io_test).
execute_process(COMMAND ${CMAKE_COMMAND} -E env XDG_CACHE_HOME=${WORK}/cache
                        ${CKY} parse -g ${DATA}/toy -b cpu --tokenized --no-progress ${WORK}/two.txt
                OUTPUT_VARIABLE r_out ERROR_VARIABLE r_err RESULT_VARIABLE r_rc)
if(NOT (r_err MATCHES "wrote a binary cache of the grammar to ${WORK}/cache/cky/[0-9a-f]+\\.ckybin"))
  fail("6: cache note")
endif()

# 9. Compressed input we cannot read is refused by name; invalid UTF-8 is warned about.
run(r parse -b cpu --no-progress ${DATA}/latin1_sentences.txt)
if(NOT (r_rc EQUAL 0 AND r_err MATCHES "latin1_sentences.txt:1: invalid UTF-8"))
  fail("9: invalid UTF-8 warning")
endif()
string(ASCII 80 75 3 4 zip_magic)
file(WRITE ${WORK}/archive.zip "${zip_magic} not really a zip")
run(r tokenize ${WORK}/archive.zip)
if(NOT (r_rc EQUAL 1 AND r_err MATCHES "archive.zip: the data is compressed or archived as zip"))
  fail("9: zip refused")
endif()

# 10. --sentence-per-line: one tree per line of raw text, never split.
file(WRITE ${WORK}/lines.txt "The dog barks. The cat sleeps.\nBirds sing. Fish swim.\n")
run(r parse -b cpu --decoder viterbi --sentence-per-line --no-progress ${WORK}/lines.txt)
string(REGEX MATCHALL "\n" newlines "${r_out}")
list(LENGTH newlines lines)
if(NOT (r_rc EQUAL 0 AND lines EQUAL 2))
  fail("10: --sentence-per-line")
endif()

# 12. Progress: sentences, rate and share of the input (forced on; stderr is no terminal here).
run(r parse -b cpu --tokenized --decoder viterbi --progress ${WORK}/two.txt)
if(NOT (r_rc EQUAL 0 AND r_err MATCHES "2 sentences, [0-9.]+ sentences/s, 100% of the input"))
  fail("12: progress")
endif()

# 13. --help shows no CLI11 internals; -k is not --kernel; old spellings still work.
foreach(command parse tokenize eval train convert recognize inside random-grammar random-strings)
  run(r ${command} --help)
  if(NOT (r_rc EQUAL 0 AND NOT r_out MATCHES "ENUM|\\{false\\}|INT:|FLOAT:|TEXT:|UINT|value in"))
    fail("13: cky ${command} --help")
  endif()
endforeach()
run(r parse -k pair-seg-g8)
if(NOT (r_rc EQUAL 2))
  fail("13: -k is no option")
endif()
run(r random-grammar --nonterminals 3 --rules 4 --terminals 2 -o ${WORK}/g.cnf)
if(NOT (r_rc EQUAL 0))
  fail("13: random-grammar")
endif()
file(WRITE ${WORK}/strings.txt "t0 t1\nt1\n")
run(r recognize -g ${WORK}/g.cnf --chunk 1 -b cpu ${WORK}/strings.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "^[01]\n[01]\n$"))
  fail("13: recognize --chunk (old name)")
endif()

# 14. Google Benchmark is not installed unless bench/ uses it.
file(GLOB bench_sources ${SOURCE}/bench/*.cpp ${SOURCE}/bench/*.h)
set(uses_benchmark FALSE)
foreach(source ${bench_sources})
  file(READ ${source} text)
  if(text MATCHES "benchmark/benchmark.h")
    set(uses_benchmark TRUE)
  endif()
endforeach()
file(READ ${SOURCE}/scripts/install-deps install_deps)
if(install_deps MATCHES "libbenchmark-dev" AND NOT uses_benchmark)
  fail("14: scripts/install-deps installs libbenchmark-dev, which nothing uses")
endif()

# 15. `parse --help` names the default CUDA kernel only and says how to list the others;
#     `parse --kernel list` prints every registered variant with its description, the default
#     first (with or without CUDA), and exits 0 without reading input; an unknown name says how to
#     list them.
run(r parse --help)
string(REGEX REPLACE "[ \n]+" " " help "${r_out}")
if(NOT (r_rc EQUAL 0 AND help MATCHES "Default: pair-seg-g8-a4-m-rtgakuopln" AND
        help MATCHES "`--kernel list`" AND NOT help MATCHES "block-reduce-staged"))
  fail("15: parse --help lists the research kernels or not how to list them")
endif()
run(r parse --kernel list)
string(REGEX MATCHALL "[^\n]+" kernel_lines "${r_out}")
list(LENGTH kernel_lines kernel_count)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "^pair-seg-g8-a4-m-rtgakuopln +the default" AND
        r_out MATCHES "\nblock-reduce-seq +kernel 6" AND
        r_out MATCHES "\npair-fused-g8-wide +kernel 7" AND kernel_count EQUAL 56))
  fail("15: parse --kernel list")
endif()
run(r parse --kernel no-such-kernel)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "'no-such-kernel' is no kernel variant" AND
        r_err MATCHES "--kernel list"))
  fail("15: an unknown --kernel says how to list them")
endif()

# Issue 37 (the rough edges a new user hits).
# 37.1 One convention whatever the door: raw text, and `cky tokenize | cky parse --tokenized`,
# give the same tokens and trees (quotes, square brackets, hyphens). check_doors(ARGS...) parses
# ${WORK}/doors.txt both ways with the grammar ARGS (`cky tokenize ${doors_tokenize}`: given tokens
# are never split, so a grammar that splits hyphenated words needs --split-hyphens there); sets
# doors_out (the JSON lines) and r_* (both outputs), and doors_ok when both succeeded alike.
file(WRITE ${WORK}/doors.txt "\"Hi,\" she said [twice]. The well-known man didn't care.\n")
function(check_doors)
  set(parse parse -b cpu --decoder viterbi --no-progress --format json ${ARGN})
  execute_process(COMMAND ${CKY} ${parse} ${WORK}/doors.txt
                  OUTPUT_VARIABLE raw ERROR_VARIABLE raw_err RESULT_VARIABLE raw_rc)
  execute_process(COMMAND ${CKY} tokenize ${doors_tokenize} ${WORK}/doors.txt
                  COMMAND ${CKY} ${parse} --tokenized
                  OUTPUT_VARIABLE piped ERROR_VARIABLE piped_err RESULT_VARIABLE piped_rc)
  set(doors_ok FALSE PARENT_SCOPE)
  if(raw_rc EQUAL 0 AND piped_rc EQUAL 0 AND raw STREQUAL piped)
    set(doors_ok TRUE PARENT_SCOPE)
  endif()
  set(doors_out "${raw}" PARENT_SCOPE)
  set(r_rc "${raw_rc} ${piped_rc}" PARENT_SCOPE)
  set(r_out "raw:\n${raw}piped:\n${piped}" PARENT_SCOPE)
  set(r_err "${raw_err}${piped_err}" PARENT_SCOPE)
endfunction()
set(doors_tokenize --split-hyphens)
check_doors()
if(NOT doors_ok)
  fail("37.1 built-in: raw text and tokenize | parse --tokenized differ")
endif()
if(NOT (doors_out MATCHES "\"tokens\":\\[\"\\\\\"\",\"Hi\"" AND doors_out MATCHES "\"\\[\",\"twice\",\"\\]\""
        AND doors_out MATCHES "\"well\",\"-\",\"known\"" AND doors_out MATCHES "\\(`` \\\\\"\\)"))
  fail("37.1 built-in: GUM's words expected")
endif()
# Given tokens keep their number (EVALB pairs the leaves with gold trees): GUM's gold-tokenized
# "Mof-Ávvi" stays one leaf with the built-in grammar, which splits raw text's hyphenated words;
# --hyphens split splits it.
file(WRITE ${WORK}/hyphen.txt "Eegimaa is spoken in Mof-Ávvi .\n")
run(r parse --tokenized -b cpu --decoder viterbi --no-progress ${WORK}/hyphen.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "Mof-Ávvi\\)"))
  fail("37.1 --tokenized keeps a hyphenated token whole")
endif()
run(r parse --tokenized --hyphens split -b cpu --decoder viterbi --no-progress ${WORK}/hyphen.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "Mof\\) \\([^ ]+ -\\)"))
  fail("37.1 --tokenized --hyphens split splits it")
endif()

# 37.4 Tokenized text given as raw text is warned about (it is split and tokenized again).
file(WRITE ${WORK}/pretokenized.txt "He does n't know -LRB- really -RRB- .\nIt works .\n")
run(r parse -b cpu --decoder viterbi --no-progress ${WORK}/pretokenized.txt)
if(NOT (r_rc EQUAL 0 AND r_err MATCHES "pretokenized.txt:1: the input looks tokenized already \\(n't\\).*--tokenized"))
  fail("37.4: pre-tokenized input without --tokenized")
endif()
run(r parse -b cpu --decoder viterbi --no-progress ${WORK}/doors.txt)
if(NOT (r_rc EQUAL 0 AND NOT r_err MATCHES "looks tokenized"))
  fail("37.4: raw text is not warned about")
endif()

# 37.5 The Berkeley parser's options are named with what cky calls them (exit 2).
run(r parse -viterbi)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "'-viterbi' is a Berkeley parser option: did you mean `--decoder viterbi`"))
  fail("37.5: -viterbi")
endif()
run(r parse -gr g.gr in.txt)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "did you mean `-g FILE`"))
  fail("37.5: -gr")
endif()
run(r parse -tokenize)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "tokenizes raw text without being asked"))
  fail("37.5: -tokenize")
endif()
foreach(flag -inputFile -outputFile -kbest -nThreads -maxLength -accurate -confidence
             -sentence_likelihood -tree_likelihood -binarize -substates -scores -modelScore)
  run(r parse ${flag})
  if(NOT (r_rc EQUAL 2 AND r_err MATCHES "'${flag}' is a Berkeley parser option: did you mean `-"))
    fail("37.5: ${flag}")
  endif()
endforeach()

# 37.8 Options named alike (train -t), compressed grammar caches, help text, empty eval input,
# --timeline without a GPU, the README.
run(r train -t 1 ${DATA}/train/tiny.mrg -o ${WORK}/tiny_t)
if(NOT (r_rc EQUAL 0))
  fail("37.8: cky train -t")
endif()
run(r parse -b cpu --tokenized --decoder viterbi --no-progress ${WORK}/two.txt)
set(builtin_trees "${r_out}")
run(r parse -b cpu --tokenized --decoder viterbi --no-progress -g ${SOURCE}/data/default_grammar/gum.ckybin.gz ${WORK}/two.txt)
if(NOT (r_rc EQUAL 0 AND r_out STREQUAL builtin_trees))
  fail("37.8: -g FILE.ckybin.gz (the built-in grammar's file)")
endif()
run(r --help)
if(NOT (r_rc EQUAL 0 AND NOT r_out MATCHES "plain \\(unsplit\\)" AND r_out MATCHES "split-merge"))
  fail("37.8: cky --help on train")
endif()
file(WRITE ${WORK}/empty.txt "")
run(r eval ${WORK}/long.penn ${WORK}/empty.txt)
if(NOT (r_rc EQUAL 1 AND r_err MATCHES "empty.txt: the file is empty" AND r_out STREQUAL ""))
  fail("37.8: eval with an empty test file")
endif()
run(r -v parse --timeline --no-progress --tokenized ${WORK}/two.txt)
if(r_err MATCHES "with the cpu" AND r_err MATCHES "cuda context")
  fail("37.8: --timeline shows a cuda context row on the CPU")
endif()
file(READ ${SOURCE}/README.md readme)
if(readme MATCHES "Google Benchmark" OR NOT readme MATCHES "pip install")
  fail("37.8: the README lists Google Benchmark, or shows no pip install")
endif()

# With the shared grammars: 7 (convert keeps what parse -g keeps, reports the lexicon) and
# 8 (every command reads every grammar format).
set(gr ${SHARED}/grammars/berkeley-small/small_sm2.gr)
if(NOT EXISTS ${gr})
  message(STATUS "no ${gr}: convert/recognize/inside checks skipped")
  return()
endif()
run(r convert ${gr} -o ${WORK}/small.ckybin)
if(NOT (r_rc EQUAL 0 AND NOT r_err MATCHES " 0 lexicon rows"))
  fail("7: convert")
endif()
string(REGEX MATCH "([0-9]+) binary and ([0-9]+) unary rules" converted "${r_err}")
run(r parse -v -g ${gr} -b cpu --tokenized --no-progress ${WORK}/two.txt)
string(REGEX MATCH "([0-9]+) binary and ([0-9]+) unary rules" parsed "${r_err}")
if(NOT (converted STREQUAL parsed))
  fail("7: convert keeps the rules parse -g keeps (${converted} vs ${parsed})")
endif()
run(r recognize -g ${gr} -b cpu ${WORK}/two.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "^[01]\n[01]\n$"))
  fail("8: recognize -g X.gr")
endif()
run(r inside -g ${gr} ${WORK}/two.txt)
if(NOT (r_rc EQUAL 1 AND r_err MATCHES "Berkeley grammar" AND NOT r_err MATCHES "[^ -~\n\t]"))
  fail("8: inside -g X.gr explains itself")
endif()

# 37.2 The conventions are read from each grammar's lexicon: GUM's words for the GUM-trained
# gum_sm3.gr (as for the built-in grammar), the WSJ's for small_sm2.gr; the same through both
# doors (37.1).
set(gum_gr ${SHARED}/grammars/berkeley-gum/gum_sm3.gr)
check_doors(-g ${gum_gr})
if(NOT doors_ok)
  fail("37.1 gum_sm3.gr: raw text and tokenize | parse --tokenized differ")
endif()
if(NOT (doors_out MATCHES "\\(`` \\\\\"\\)" AND doors_out MATCHES "\\(-LRB- \\[\\)"
        AND doors_out MATCHES "\"well\",\"-\",\"known\"" AND NOT doors_out MATCHES "NNP ``"))
  fail("37.2 gum_sm3.gr: GUM's words expected")
endif()
set(doors_tokenize "")
check_doors(-g ${gr})
if(NOT doors_ok)
  fail("37.1 small_sm2.gr: raw text and tokenize | parse --tokenized differ")
endif()
if(NOT (doors_out MATCHES "\\(`` ``\\)" AND doors_out MATCHES "\\('' ''\\)"
        AND doors_out MATCHES "\"-LSB-\",\"twice\",\"-RSB-\"" AND doors_out MATCHES "\"well-known\""))
  fail("37.2 small_sm2.gr: the WSJ's words expected")
endif()

# 37.3 Every command that takes a grammar, with every format: recognize once answered 0 for
# every sentence with a .gr file or a cache (no terminals in the projection).
file(WRITE ${WORK}/three.txt "The show is currently in its fourteenth season .\nThe dog barks .\nIt was a good year .\n")
file(ARCHIVE_CREATE OUTPUT ${WORK}/small.ckybin.gz PATHS ${WORK}/small.ckybin FORMAT raw COMPRESSION GZip)
set(formats ${gr} ${WORK}/small.ckybin ${WORK}/small.ckybin.gz ${SHARED}/grammars/berkeley-small/small_sm2)
foreach(g ${formats})
  run(r parse -b cpu --tokenized --decoder viterbi --no-progress -g ${g} ${WORK}/three.txt)
  if(NOT (r_rc EQUAL 0 AND r_out MATCHES "^(\\( \\(S [^\n]*\n)(\\( \\(S [^\n]*\n)(\\( \\(S [^\n]*\n)$"))
    fail("37.3: parse -g ${g}")
  endif()
  if(NOT g STREQUAL ${SHARED}/grammars/berkeley-small/small_sm2)
    if(DEFINED gr_trees AND NOT r_out STREQUAL gr_trees)
      fail("37.3: parse -g ${g} gives other trees than the .gr file")
    endif()
    set(gr_trees "${r_out}")
  endif()
  foreach(mode "" --bulk)
    run(r recognize -b cpu ${mode} -g ${g} ${WORK}/three.txt)
    if(NOT (r_rc EQUAL 0 AND r_out STREQUAL "1\n1\n1\n"))
      fail("37.3: recognize ${mode} -g ${g}")
    endif()
  endforeach()
  execute_process(COMMAND ${CKY} random-strings -g ${g} --count 20 --max-length 6 --member-fraction 1
                  COMMAND ${CKY} recognize -b cpu -g ${g}
                  OUTPUT_VARIABLE r_out ERROR_VARIABLE r_err RESULT_VARIABLE r_rc)
  if(NOT (r_rc EQUAL 0 AND r_out MATCHES "^(1\n)+$"))
    fail("37.3: random-strings -g ${g} | recognize: members are recognised")
  endif()
  run(r convert -g ${g} -o ${WORK}/converted.ckybin)
  if(NOT (r_rc EQUAL 0))
    fail("37.3: convert -g ${g}")
  endif()
endforeach()
