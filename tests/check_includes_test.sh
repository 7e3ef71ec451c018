#!/usr/bin/env bash
# scripts/check-includes on small fixture trees written here: a clean tree passes; include cycles
# between modules (a header and its .cpp, .cu or _stub.cpp are one module) and two headers with the
# same file name in different folders fail, naming the files; what is not a cycle (a module's own
# files, a test's includes) passes. Usage: check_includes_test.sh SOURCE_DIR
set -u
source=$1
check_includes=$source/scripts/check-includes
source "$(dirname "$0")/check_lib.sh"  # $tmp, check, finish

# tree NAME FILE CONTENT [FILE CONTENT]...: a fixture tree under $tmp/NAME.
tree() {
  local dir=$tmp/$1; shift
  mkdir -p "$dir"
  while [ $# -gt 1 ]; do
    mkdir -p "$(dirname "$dir/$1")"
    printf '%b' "$2" > "$dir/$1"
    shift 2
  done
}
# run NAME: check-includes on fixture NAME; its output in $out, its status in $status.
run() {
  out=$("$check_includes" "$tmp/$1" 2>&1)
  status=$?
}
has() { grep -qF -- "$1" <<< "$out"; }

# A clean tree: one-way includes, a module's own .cpp and stub, a test including both sides.
tree clean \
  common/status.h '#pragma once\n' \
  parser/chart.h '#pragma once\n#include "common/status.h"\n' \
  parser/kbest.h '#pragma once\n#include "parser/chart.h"\n' \
  parser/kbest.cpp '#include "parser/kbest.h"\n' \
  parser/max_rule.h '#pragma once\n#include "parser/chart.h"\n' \
  parser/max_rule.cpp '#include "parser/max_rule.h"\n#include "parser/kbest.h"\n' \
  parser/max_rule_test.cpp '#include "parser/kbest.h"\n#include "parser/max_rule.h"\n' \
  cuda/viterbi/viterbi.h '#pragma once\n' \
  cuda/viterbi/viterbi_stub.cpp '#include "cuda/viterbi/viterbi.h"\n'
run clean
check "a clean tree passes" [ "$status" = 0 ]
check "a clean tree says so" has "include graph as README.md's layout says"

# kbest.h includes max_rule.h, max_rule.cpp includes kbest.h: a cycle through a .cpp.
tree cycle \
  parser/kbest.h '#pragma once\n#include "parser/max_rule.h"\n' \
  parser/kbest.cpp '#include "parser/kbest.h"\n' \
  parser/max_rule.h '#pragma once\n' \
  parser/max_rule.cpp '#include "parser/max_rule.h"\n#include "parser/kbest.h"\n'
run cycle
check "a cycle through a .cpp fails" [ "$status" = 1 ]
check "the cycle names its modules" has "include cycle between parser/kbest, parser/max_rule"
check "the cycle names its includes" \
  has "parser/kbest.h:2 includes parser/max_rule.h -> parser/max_rule.cpp:2 includes parser/kbest.h"

# Three headers in a ring, and a stub that closes a cycle through its module.
tree ring \
  text/a.h '#pragma once\n#include "text/b.h"\n' \
  text/b.h '#pragma once\n#include "text/c.h"\n' \
  text/c.h '#pragma once\n#include "text/a.h"\n' \
  cuda/dense/inside.h '#pragma once\n#include "cuda/dense/scales.h"\n' \
  cuda/dense/scales.h '#pragma once\n' \
  cuda/dense/scales_stub.cpp '#include "cuda/dense/scales.h"\n#include "cuda/dense/inside.h"\n'
run ring
check "a ring of headers fails" [ "$status" = 1 ]
check "the ring is one cycle of three" has "include cycle between text/a, text/b, text/c"
check "the ring is named once" [ "$(grep -c 'include cycle between text/' <<< "$out")" = 1 ]
check "a stub belongs to its module" has "include cycle between cuda/dense/inside, cuda/dense/scales"

# Two headers named bpbc.h, in membership/ and cuda/membership/.
tree clash \
  membership/bpbc.h '#pragma once\n#include "cuda/membership/bpbc.h"\n' \
  membership/bpbc.cpp '#include "membership/bpbc.h"\n' \
  cuda/membership/bpbc.h '#pragma once\n' \
  dense/dense_inside.cpp '#include "common/x.h"\n' \
  cuda/dense/dense_inside.cu '#include "common/x.h"\n'
run clash
check "a header name clash fails" [ "$status" = 1 ]
check "the clash names both headers" \
  has "cuda/membership/bpbc.h, membership/bpbc.h: headers share the file name bpbc.h"
check "sources of the same name are no clash" [ "$(grep -c 'share the file name' <<< "$out")" = 1 ]
check "a clash is not a cycle" [ "$(grep -c 'include cycle' <<< "$out")" = 0 ]

# An entry of KNOWN_CYCLES (cycles in files a rewrite owns) passes while its cycle is there and
# fails once the cycle is gone, so that no entry outlives its cycle.
known_cycle_check() {
  python3 - "$check_includes" <<'EOF'
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("check_includes", sys.argv[1])
module = importlib.util.module_from_spec(importlib.util.spec_from_loader("check_includes", loader))
loader.exec_module(module)
cycle = {"x": {"y": "x.h:1 includes y.h"}, "y": {"x": "y.cpp:2 includes x.h"}}
assert module.include_cycles(cycle, [{"x", "y"}]) == []
gone = module.include_cycles({"x": {"y": "x.h:1 includes y.h"}}, [{"x", "y"}])
assert len(gone) == 1 and "known include cycle x, y is gone" in gone[0], gone
EOF
}
check "a known cycle passes while there and fails once gone" known_cycle_check

# This repository passes.
out=$("$check_includes" "$source" 2>&1)
check "the repository passes" [ $? = 0 ]

finish check_includes_test
