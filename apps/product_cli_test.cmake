# CTest script for products of grammars on the command line (issue 38): `cky train --seeds` writes
# one, `cky parse -g` decodes it (parser/product.h). Run with -DCKY=<cky binary>
# -DDATA=<tests/data> -DWORK=<scratch folder>.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# run(<output prefix> ARGS...): sets <prefix>_out, <prefix>_err, <prefix>_rc.
function(run prefix)
  execute_process(COMMAND ${CKY} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  set(${prefix}_out "${out}" PARENT_SCOPE)
  set(${prefix}_err "${err}" PARENT_SCOPE)
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
endfunction()

macro(fail what)
  message(FATAL_ERROR "${what}\n  exit: ${r_rc}\n  stdout: ${r_out}\n  stderr: ${r_err}")
endmacro()

set(trees ${DATA}/train/tiny.mrg)
file(WRITE ${WORK}/in.txt "The dog barks .\nthe big cat sees a dog .\n")

# Training: one product file; each member is the grammar --seed alone trains.
run(r train ${trees} --split-merge 1 --seeds 1,3 -o ${WORK}/p -q)
if(NOT (r_rc EQUAL 0 AND EXISTS ${WORK}/p.ckyprod AND NOT EXISTS ${WORK}/p.grammar))
  fail("train --seeds writes PREFIX.ckyprod")
endif()
foreach(seed 1 3)
  run(r train ${trees} --split-merge 1 --seed ${seed} -o ${WORK}/s${seed} -q)
  if(NOT r_rc EQUAL 0)
    fail("train --seed ${seed}")
  endif()
endforeach()
run(r train ${trees} --split-merge 1 --seeds 1,x -o ${WORK}/bad -q)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "--seeds: expected seeds"))
  fail("train --seeds 1,x is a usage error")
endif()
run(r train ${trees} --split-merge 1 --seeds 1 --seed 2 -o ${WORK}/bad -q)
if(NOT (r_rc EQUAL 2))
  fail("train --seeds with --seed is a usage error")
endif()
run(r train ${trees} --seeds 1,2 -o ${WORK}/bad -q)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "add --split-merge"))
  fail("train --seeds without --split-merge is a usage error")
endif()

# Parsing: the product file and its members as two -g give the same output, scores included; the
# input after -g is the input, not a third grammar.
set(parse parse --tokenized --no-progress --model-score)
run(r ${parse} -g ${WORK}/p.ckyprod ${WORK}/in.txt)
set(from_file "${r_out}")
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "^-[0-9.]+\t\\( \\(S .*\n-[0-9.]+\t\\( \\(S .*\n$"))
  fail("parse -g PRODUCT")
endif()
run(r ${parse} -g ${WORK}/s1.ckybin -g ${WORK}/s3.ckybin ${WORK}/in.txt)
if(NOT (r_rc EQUAL 0 AND r_out STREQUAL from_file))
  fail("parse -g A -g B equals the product file of A and B")
endif()
run(r ${parse} -g ${WORK}/s1.ckybin -g ${WORK}/s3.ckybin -b reference --prune off ${WORK}/in.txt)
if(NOT (r_rc EQUAL 0 AND r_out STREQUAL from_file))
  fail("the product's reference gives the cpu backend's output")
endif()
run(r parse --tokenized --no-progress -g ${WORK}/p.ckyprod --kbest 2 --format json --model-score
    ${WORK}/in.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "\"kbest\":\\[\\{\"tree\":\"\\( \\(S [^\n]*\"model_score\""))
  fail("parse -g PRODUCT --kbest 2 --format json")
endif()

# A sentence the lexicon's tags cannot parse ("saw" is only a verb in the toy grammar) is parsed
# again with the lexicon widened, as with one grammar; --no-retry turns that off for a product too.
file(WRITE ${WORK}/retry.txt "the dog saw the saw .\n")
set(toy2 -g ${DATA}/toy -g ${DATA}/toy --no-cache)
run(r parse --tokenized --no-progress ${toy2} ${WORK}/retry.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "\\(NN saw\\)"))
  fail("parse -g A -g B: a sentence is parsed again with the lexicon widened")
endif()
run(r parse --tokenized --no-progress ${toy2} --no-retry ${WORK}/retry.txt)
if(NOT (r_rc EQUAL 0 AND r_out STREQUAL "(())\n" AND r_err MATCHES "no tree"))
  fail("parse -g A -g B --no-retry: no second parse with the lexicon widened")
endif()

# What a product does not define, or does not do, is a usage error (exit 2) saying so.
foreach(option --sentence-likelihood --tree-likelihood --confidence)
  run(r ${parse} -g ${WORK}/p.ckyprod ${option} ${WORK}/in.txt)
  if(NOT (r_rc EQUAL 2 AND r_err MATCHES "a product of grammars defines none"))
    fail("parse -g PRODUCT ${option}")
  endif()
endforeach()
run(r ${parse} -g ${WORK}/p.ckyprod --decoder viterbi ${WORK}/in.txt)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "max-rule trees only"))
  fail("parse -g PRODUCT --decoder viterbi")
endif()
# -b cuda: the CUDA product backend where there is a GPU (the cpu backend's trees, unpruned both),
# else an error that says to use the cpu backend; --devices is refused (a product parses on one).
run(r parse --tokenized --no-progress -g ${WORK}/s1.ckybin -g ${WORK}/s3.ckybin --prune off
    ${WORK}/in.txt)
set(cpu_trees "${r_out}")
run(r parse --tokenized --no-progress -g ${WORK}/s1.ckybin -g ${WORK}/s3.ckybin --prune off -b cuda
    -v ${WORK}/in.txt)
if(r_rc EQUAL 0)
  if(NOT (r_out STREQUAL cpu_trees AND r_err MATCHES "cuda/max-rule-product of 2 grammars"))
    fail("parse -g A -g B -b cuda gives the cpu backend's trees")
  endif()
elseif(NOT (r_rc EQUAL 1 AND r_err MATCHES "use --backend cpu"))
  fail("parse -g A -g B -b cuda without a GPU says to use the cpu backend")
endif()
run(r parse --tokenized --no-progress -g ${WORK}/p.ckyprod -b cuda -v ${WORK}/in.txt)
if(NOT ((r_rc EQUAL 0 AND r_err MATCHES "cuda/pruned-max-rule-product of 2 grammars") OR
        (r_rc EQUAL 1 AND r_err MATCHES "use --backend cpu")))
  fail("parse -g PRODUCT -b cuda")
endif()
run(r ${parse} -g ${WORK}/p.ckyprod -b cuda --devices 0 ${WORK}/in.txt)
if(NOT (r_rc EQUAL 2 AND r_err MATCHES "one process and one device"))
  fail("parse -g PRODUCT --devices")
endif()

# Grammars over other symbols are refused, naming both; a damaged product names its member; a
# command that reads one grammar says that it was given a product.
run(r ${parse} -g ${WORK}/s1.ckybin -g ${DATA}/toy --no-cache ${WORK}/in.txt)
if(NOT (r_rc EQUAL 1 AND r_err MATCHES "grammars [^ ]*s1.ckybin and [^ ]*toy have different base symbols"))
  fail("parse -g A -g B over other symbols")
endif()
execute_process(COMMAND head -c 2000 ${WORK}/p.ckyprod OUTPUT_FILE ${WORK}/cut.ckyprod)
run(r ${parse} -g ${WORK}/cut.ckyprod ${WORK}/in.txt)
if(NOT (r_rc EQUAL 1 AND r_err MATCHES "cut.ckyprod: member 1: truncated product grammar"))
  fail("parse -g DAMAGED-PRODUCT")
endif()
run(r convert ${WORK}/p.ckyprod -o ${WORK}/x.ckybin)
if(NOT (r_rc EQUAL 1 AND r_err MATCHES "is a product of grammars"))
  fail("convert PRODUCT")
endif()

# The built-in product: GUM's tokens (hyphens split, as for the built-in grammar).
file(WRITE ${WORK}/raw.txt "The well-known dog barks.\n")
run(r parse --no-progress -g builtin-product -v ${WORK}/raw.txt)
if(NOT (r_rc EQUAL 0 AND r_out MATCHES "^\\( \\(.*\\(HYPH -\\).*\n$" AND r_err MATCHES "product of [0-9]+ grammars"))
  fail("parse -g builtin-product")
endif()
