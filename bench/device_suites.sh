#!/usr/bin/env bash
# The CUDA test suites one device call runs on binaries built elsewhere (a bundle's bin/): the
# conformance suite's CUDA rows in 8 shards at once, the five CUDA suites at once, then memcheck
# (and racecheck, when asked) of a few rows. Writes every log under OUT and prints one line per
# shard and suite, so that the summary survives a call's short output.
#
#   OUT=$OUT CKY_SHARED_DIR=... bench/device_suites.sh BIN_DIR
#       [MEMCHECK_ROWS=gtest-filter] [RACECHECK_ROWS=gtest-filter] [SUITE_TIMEOUT=300]
#
# Waits on the jobs' pids: a bare `wait` also waits for a process substitution such as
# `exec > >(tee log)` (bash 5.1+), which never ends (bench/RESULTS-LOG.md, eleventh and
# twentieth sessions).
set -uo pipefail
bin=${1:?usage: bench/device_suites.sh BIN_DIR}
out=${OUT:?OUT must name a folder for the logs}
limit=${SUITE_TIMEOUT:-300}
memcheck_rows=${MEMCHECK_ROWS-*cuda_pruned_max_rule_tight__split_seed1*:*cuda_pruned_max_rule_safe__small_sm2*:*cuda_max_rule_variant_default__split_seed1*}
racecheck_rows=${RACECHECK_ROWS-}
mkdir -p "$out/suites"
start=$(date +%s)

# Runs "$@" under the limit in the background; its log is $out/suites/$name.log.
pids=()
launch() {
  local name=$1
  shift
  timeout -k 10 "$limit" "$@" > "$out/suites/$name.log" 2>&1 &
  pids+=($!)
}
summary() {  # the gtest verdict of a log, or where it stopped
  local log=$out/suites/$1.log
  local verdict
  verdict=$(grep -E "^\[  (PASSED|FAILED)  \]" "$log" | tr '\n' ' ')
  [ -n "$verdict" ] || verdict="no verdict (last: $(grep -E '^\[ RUN' "$log" | tail -1))"
  echo "$1: $verdict"
  grep -E "^\[  FAILED  \]" "$log" | head -5
}

for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i launch "conformance_$i" \
    "$bin/backend_conformance_test" --gtest_filter='*cuda*'
done
wait "${pids[@]}"
pids=()
suites=(cuda_max_rule_backend_test cuda_pruner_test cuda_product_backend_test cuda_backend_test
  multi_device_backend_test)
for suite in "${suites[@]}"; do
  [ -x "$bin/$suite" ] && launch "$suite" "$bin/$suite"
done
[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"
for i in 0 1 2 3 4 5 6 7; do summary "conformance_$i"; done
for suite in "${suites[@]}"; do [ -x "$bin/$suite" ] && summary "$suite"; done
echo "suites: $(($(date +%s) - start)) s"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -z "$sanitizer" ]; then
  echo "compute-sanitizer: not found"
  exit 0
fi
check() {  # tool, name, command...
  local tool=$1 name=$2
  shift 2
  timeout -k 10 "$limit" "$sanitizer" --tool "$tool" --print-limit 5 "$@" \
    > "$out/suites/$name.log" 2>&1
  echo "$name: $(grep -E "(ERROR|RACECHECK) SUMMARY" "$out/suites/$name.log" | tr '\n' ' ')$(
    grep -E "^\[  (PASSED|FAILED)  \]" "$out/suites/$name.log" | tr '\n' ' ')"
}
[ -z "$memcheck_rows" ] ||
  check memcheck memcheck_rows "$bin/backend_conformance_test" --gtest_filter="$memcheck_rows"
[ ! -x "$bin/cuda_max_rule_backend_test" ] ||
  check memcheck memcheck_max_rule "$bin/cuda_max_rule_backend_test"
[ -z "$racecheck_rows" ] ||
  check racecheck racecheck_rows "$bin/backend_conformance_test" --gtest_filter="$racecheck_rows"
echo "suites and sanitizers: $(($(date +%s) - start)) s"
