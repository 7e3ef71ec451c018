#!/usr/bin/env bash
# Compares `cky eval` with the original EVALB, byte for byte, on GUM dev trees against seeded
# perturbed copies of them (scripts/perturb_trees.cpp), under several parameter files, and on EVALB's
# own sample. Needs ../shared (GUM and evalb.c) and gcc.
#
#   scripts/compare_evalb.sh                    # prints one line per comparison, exits 1 on any difference
#   scripts/compare_evalb.sh --update-fixtures  # also refreshes tests/data/evalb/gum/ (CI golden files)
#
# Each comparison runs EVALB and `cky eval` with the same files and parameters and requires the same
# stdout (every per-sentence line and the summary) and the same exit status. Environment: BUILD_DIR
# (default build/), SHARED (default ../shared), WORK_DIR (default a temporary folder, kept).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED:-$root/../shared}
build=${BUILD_DIR:-$root/build}
work=${WORK_DIR:-$(mktemp -d /tmp/cky-evalb.XXXXXX)}
update=0
[[ "${1:-}" == "--update-fixtures" ]] && update=1

mkdir -p "$work"
[[ -d "$build" ]] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target cky perturb_trees >/dev/null
gcc -O2 -w -o "$work/evalb" "$shared/evalb/evalb.c"
evalb="$work/evalb"
cky="$build/apps/cky"
perturb="$build/tests/perturb_trees"
params_dir="$root/tests/data/evalb/params"
gum="$shared/treebanks/gum/const"

failures=0
comparisons=0
# compare NAME EVALB_ARGS... -- CKY_ARGS...
compare() {
  local name=$1; shift
  local evalb_args=() cky_args=()
  while [[ $1 != -- ]]; do evalb_args+=("$1"); shift; done
  shift
  cky_args=("$@")
  local e_rc=0 c_rc=0
  "$evalb" "${evalb_args[@]}" >"$work/$name.evalb.out" 2>"$work/$name.evalb.err" || e_rc=$?
  "$cky" eval "${cky_args[@]}" >"$work/$name.cky.out" 2>"$work/$name.cky.err" || c_rc=$?
  comparisons=$((comparisons + 1))
  local f1
  f1=$(grep -m1 'Bracketing FMeasure' "$work/$name.evalb.out" | awk '{print $NF}' || true)
  if cmp -s "$work/$name.evalb.out" "$work/$name.cky.out" && [[ $e_rc == "$c_rc" ]]; then
    printf '%-44s identical  (exit %s, F1 %s)\n' "$name" "$e_rc" "${f1:-none: stopped}"
  else
    printf '%-44s DIFFERENT (exit evalb %s, cky %s); see %s\n' "$name" "$e_rc" "$c_rc" "$work/$name.*"
    failures=$((failures + 1))
  fi
}

# EVALB's own sample.
sample="$shared/evalb/sample"
compare sample -p "$sample/sample.prm" "$sample/sample.gld" "$sample/sample.tst" -- \
  -p "$sample/sample.prm" "$sample/sample.gld" "$sample/sample.tst"

# Our hand-written corner cases (empty root label, TOP/ROOT, function tags and '=', ADVP=PRT,
# duplicate unary brackets, "(X)", -NONE- as a phrase label, several trees on a line, "(())", quotes,
# an empty gold line, an empty test line).
edge="$root/tests/data/evalb/edge"
compare edge -p "$shared/evalb/COLLINS.prm" "$edge/edge.gld" "$edge/edge.tst" -- \
  "$edge/edge.gld" "$edge/edge.tst"
if [[ $update == 1 ]]; then cp "$work/edge.evalb.out" "$edge/edge.COLLINS.out"; fi

# GUM dev documents (splits.md), without the reddit ones (their words are underscores).
mapfile -t docs < <(awk '/^## /{dev = ($2 == "dev")} dev && /^ *\* /{print $2}' \
  "$shared/treebanks/gum/splits.md" | grep -v reddit)
all_gold="$work/all.gld"
all_test="$work/all.tst"
: >"$all_gold"
: >"$all_test"
seed=1
for doc in "${docs[@]}"; do
  "$perturb" "$seed" "$work/$doc.gld" "$work/$doc.tst" "$gum/$doc.ptb"
  seed=$((seed + 1))
  cat "$work/$doc.gld" >>"$all_gold"
  cat "$work/$doc.tst" >>"$all_test"
  for prm in "$shared/evalb/COLLINS.prm" "$params_dir/unlabeled.prm" "$params_dir/quotes.prm" \
    "$params_dir/stop_early.prm"; do
    p=$(basename "$prm" .prm)
    compare "$doc.$p" -p "$prm" "$work/$doc.gld" "$work/$doc.tst" -- \
      -p "$prm" "$work/$doc.gld" "$work/$doc.tst"
  done
  # Built-in defaults, and the gold read in its original multi-line layout.
  compare "$doc.defaults-multiline-gold" -p "$shared/evalb/COLLINS.prm" "$work/$doc.gld" \
    "$work/$doc.tst" -- "$gum/$doc.ptb" "$work/$doc.tst"
done

# All dev documents together, without EVALB's error limit.
n=$(wc -l <"$all_gold")
for prm in "$shared/evalb/COLLINS.prm" "$params_dir/unlabeled.prm" "$params_dir/quotes.prm"; do
  p=$(basename "$prm" .prm)
  compare "all-dev-$n-sentences.$p" -p "$prm" -e 100000 "$all_gold" "$all_test" -- \
    -p "$prm" --max-error 100000 "$all_gold" "$all_test"
done
# The error limit itself: EVALB stops without a summary.
compare "all-dev.max-error-3" -p "$shared/evalb/COLLINS.prm" -e 3 "$all_gold" "$all_test" -- \
  -e 3 "$all_gold" "$all_test"
# Unequal numbers of sentences, both ways, and a test file one sentence short of a line.
head -n 100 "$all_test" >"$work/short.tst"
compare "all-dev.test-file-shorter" -p "$shared/evalb/COLLINS.prm" -e 100000 "$all_gold" \
  "$work/short.tst" -- --max-error 100000 "$all_gold" "$work/short.tst"
head -n 100 "$all_gold" >"$work/short.gld"
compare "all-dev.gold-file-shorter" -p "$shared/evalb/COLLINS.prm" -e 100000 "$work/short.gld" \
  "$all_test" -- --max-error 100000 "$work/short.gld" "$all_test"

echo "$comparisons comparisons, $failures different; files in $work"

if [[ $update == 1 ]]; then
  # Golden files for CI: documents whose text licence allows shipping (CC-BY: academic, court,
  # interview, news; CC-BY-SA: bio, voyage), one per genre.
  out="$root/tests/data/evalb/gum"
  mkdir -p "$out"
  rm -f "$out"/*.gld "$out"/*.tst "$out"/*.out
  : >"$out/cases.tsv"
  for doc in GUM_academic_exposure GUM_bio_byron GUM_court_loan GUM_interview_cyclone \
    GUM_news_iodine GUM_voyage_coron; do
    cp "$work/$doc.gld" "$work/$doc.tst" "$out/"
    for p in COLLINS unlabeled quotes stop_early; do
      cp "$work/$doc.$p.evalb.out" "$out/$doc.$p.out"
      status=0
      grep -q '=== Summary ===' "$out/$doc.$p.out" || status=1
      printf '%s\t%s\t%s\t%s\t%s\n' "$doc.gld" "$doc.tst" "$p.prm" "$doc.$p.out" "$status" \
        >>"$out/cases.tsv"
    done
  done
  echo "updated $out"
fi
[[ $failures == 0 ]]
