#!/usr/bin/env bash
# What one device call runs (bench/RESULTS-LOG.md records its output): configure and build for
# sm_90, run the CUDA Viterbi backend's tests (every kernel against the CPU reference: the
# conformance suite's CUDA Viterbi rows, the 800-word sentence left out), then the Viterbi
# benchmark on wsj_1 and en_sm6s (GRAMMARS overrides the list, BENCH_ARGS adds options, e.g.
# --steady --kernels ...).
# DATA is a copy of ../shared's grammars/, bench/ (see bench/RESULTS-LOG.md); OUT collects logs.
set -uo pipefail
DATA=${DATA:-../shared}
OUT=${OUT:-/tmp/out}
BUILD=${BUILD:-/tmp/b}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/cky-cache}
export CKY_SHARED_DIR=$DATA
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/cmake.txt" 2>&1 || { tail -30 "$OUT/cmake.txt"; exit 1; }
cmake --build "$BUILD" -j16 --target cuda_backend_test backend_conformance_test viterbi_bench > "$OUT/build.txt" 2>&1 || { grep -E "error" -A5 "$OUT/build.txt" | head -60; exit 1; }
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv | tee "$OUT/device.txt"
{
  timeout ${TEST_TIMEOUT:-240} "$BUILD/parser/cuda_backend_test"
  timeout ${TEST_TIMEOUT:-240} "$BUILD/parser/backend_conformance_test" \
    --gtest_filter='Rows/*/cuda_viterbi_*-*__eight_hundred'
} 2>&1 | tee "$OUT/tests.txt" |
  grep -E "^\[ *(FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|sentence" | head -80
L=$DATA/bench/wsj23-sentence-lengths.txt
T="$DATA/grammars/reference/small_sm2/sentences.txt $DATA/grammars/reference/gum_sm3/sentences.txt"
timeout ${BENCH_TIMEOUT:-420} "$BUILD/bench/viterbi_bench" --lengths "$L" --sentences $T \
  --grammar ${GRAMMARS:-"$DATA/grammars/wsj-projected/wsj_1.gr" "$DATA/grammars/en_sm6s/en_sm6s"} \
  ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.txt"
