#!/usr/bin/env bash
# scripts/gpu-sanitize's own logic, without a GPU: a stand-in for compute-sanitizer runs the jobs.
# Checks which jobs a DONE file leaves out (whole jobs, shares, shares cut finer than the clean
# ones), that the cooperative BPBC jobs get short strings, and that the 800-word jobs start only
# when racecheck_probe shows the launch window they rely on, with the window their launch logs give:
# the stand-in counts launches among all of them (as racecheck does, 2026-11-28) or only among
# those the kernel-name filter matches; the launch logs are written here, as cupti_launch_log
# would write them. Usage: gpu_sanitize_test.sh BUILD_DIR SOURCE_DIR
set -u
build=$1 source=$2
source "$(dirname "$0")/check_lib.sh"  # $tmp, check, finish

# The stand-in: racecheck_probe's race is found when its launch is inside the window (COUNTING=
# all: every launch, two decoys before each probe; filtered: the probe kernel's launches only);
# a test binary "passes" with a clean summary and leaves its arguments in calls.txt.
cat > "$tmp/fake-sanitizer" <<'EOF'
#!/usr/bin/env bash
arguments="$*" skip=0 count=0
while [ $# -gt 0 ]; do
  case $1 in
    --launch-skip) skip=$2; shift 2 ;;
    --launch-count) count=$2; shift 2 ;;
    --tool | --kernel-name | --kernel-name-exclude | --error-exitcode | --report-api-errors) shift 2 ;;
    --*) shift ;;
    *) break ;;
  esac
done
if [[ $1 == */racecheck_probe ]]; then
  launch=$3
  [ "$COUNTING" = all ] && launch=$((3 * launch + 2))
  [ "$launch" -ge "$skip" ] && [ "$launch" -lt $((skip + count)) ] && exit 99
  exit 0
fi
echo "$arguments share=${CKY_TEST_SHARD:-} variants=${CKY_TEST_VARIANTS:-}" \
  "max_length=${CKY_TEST_MAX_LENGTH:-}" >> "$CALLS"
echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
echo "[  PASSED  ] 1 test."
EOF
chmod +x "$tmp/fake-sanitizer"

suite_test=Rows/BackendConformanceTest.AgreesWithItsOracle
pruned="racecheck backend_conformance_test $suite_test/cuda_pruned_max_rule_exact__gum_sm3 -"
bpbc='racecheck bpbc_test BpbcGpuTest.AgreesWithTheReference'
eight() {  # the 800-word job of kernel $1
  echo "racecheck backend_conformance_test" \
    "Rows/*/cuda_viterbi_kernel_$(echo "$1" | tr - _)__eight_hundred $1"
}
{
  echo "$pruned 1/3|rc=0|1s||"  # the sixths 1 and 4
  echo "$pruned 2/3|rc=0|1s||"  # the sixths 2 and 5
  echo "$bpbc v0|rc=0|1s||"     # whole: no share of it runs
  echo "$bpbc v1 0/3|rc=0|1s||" # the sixths 0 and 3
} > "$tmp/done.txt"

# Launch logs as cupti_launch_log writes them ("INDEX NAME"): racecheck_probe's (two decoys, then
# the probe, 780 times) and the 800-word test's (the lexical and unary kernels, then for each span
# length from 2 to 800 the mask, binary and unary kernels).
write_launch_logs() {
  mkdir -p "$tmp/out/launches"
  awk 'BEGIN { for (k = 0; k < 780; k++)
    printf "%d DecoyKernel\n%d DecoyKernel\n%d RacecheckProbeKernel\n", 3 * k, 3 * k + 1, 3 * k + 2
  }' > "$tmp/out/launches/racecheck_probe.txt"
  local variant kernel
  for variant in pair-seg-g8:PairSegKernelMin4 block-reduce:BlockReduceKernel; do
    kernel=${variant#*:}
    awk -v kernel="$kernel" 'BEGIN { print "0 LexicalKernel"; print "1 UnaryKernel"
      for (span = 2; span <= 800; span++) { i = 2 + 3 * (span - 2)
        printf "%d GroupMaskKernel\n%d %s\n%d UnaryKernel\n", i, i + 1, kernel, i + 2 } }' \
      > "$tmp/out/launches/${variant%:*}.txt"
  done
}
run() {  # run COUNTING ONLY: gpu-sanitize racecheck over the jobs ONLY matches
  rm -rf "$tmp/out" "$tmp/calls.txt"
  write_launch_logs
  COUNTING=$1 CALLS=$tmp/calls.txt CS=$tmp/fake-sanitizer BUILD=$build OUT=$tmp/out \
    DEADLINE_S=120 RACE_START_GIB=0 DONE=$tmp/done.txt ONLY=$2 LAUNCH_LOG_LIB= \
    "$source/scripts/gpu-sanitize" racecheck > "$tmp/summary.txt" 2>&1
}
ran() { grep -qF "$1|rc=0|" "$tmp/out/results.txt"; }
left_out() { ! grep -qF "$1|" "$tmp/out/results.txt"; }

run all "^$pruned|^$bpbc v[014] "
check "pruned sixth 0 runs" ran "$pruned 0/6"
check "pruned sixth 3 runs" ran "$pruned 3/6"
for k in 1 2 4 5; do check "pruned sixth $k is in a clean third" left_out "$pruned $k/6"; done
for k in 0 1 2 3 4 5; do check "bpbc v0 sixth $k: v0 is clean whole" left_out "$bpbc v0 $k/6"; done
for k in 0 3; do check "bpbc v1 sixth $k is in a clean third" left_out "$bpbc v1 $k/6"; done
for k in 1 2 4 5; do check "bpbc v1 sixth $k runs" ran "$bpbc v1 $k/6"; done
check "the share and the variant reach the test" grep -q "share=5/6 variants=v1 max_length=$" \
  "$tmp/calls.txt"
check "the cooperative configuration runs whole" ran "$bpbc v4 max-length-10"
check "with short strings" grep -q "share= variants=v4 max_length=10" "$tmp/calls.txt"
check "no probe without 800-word jobs" left_out "racecheck racecheck_probe"

eight_jobs='^racecheck backend_conformance_test Rows/\*/cuda_viterbi_kernel_(pair_seg_g8|block_reduce)__eight_hundred '
run all "$eight_jobs"
check "probe: window shown" ran "racecheck racecheck_probe launch-window -"
check "800-word job runs" ran "$(eight pair-seg-g8)"
# Span length 768's binary launch is launch 2 + 3 * 766 + 1; the 4th from there, 9 launches on.
check "800-word job checks the binary kernel's window" \
  grep -q -- "--kernel-name kns=BlockReduceKernel --launch-skip 2301 --launch-count 10" \
  "$tmp/calls.txt"

run filtered "$eight_jobs"
check "probe: window not shown" grep -qF "racecheck racecheck_probe launch-window -|rc=1|" \
  "$tmp/out/results.txt"
check "800-word job not started" grep -qF \
  "$(eight pair-seg-g8)|not started: racecheck's launch window not shown" "$tmp/out/results.txt"
check "no 800-word process" test ! -s "$tmp/calls.txt"
check "the summary counts it" grep -q "1 not .*2 not started" "$tmp/summary.txt"

rm -rf "$tmp/out" "$tmp/calls.txt"
write_launch_logs
rm "$tmp/out/launches/block-reduce.txt"
COUNTING=all CALLS=$tmp/calls.txt CS=$tmp/fake-sanitizer BUILD=$build OUT=$tmp/out \
  DEADLINE_S=120 RACE_START_GIB=0 DONE=$tmp/done.txt ONLY=$eight_jobs LAUNCH_LOG_LIB= \
  "$source/scripts/gpu-sanitize" racecheck > "$tmp/summary.txt" 2>&1
check "800-word job without a launch log not started" grep -qF \
  "$(eight block-reduce)|not started: no log of its launches" "$tmp/out/results.txt"
check "the other one runs" ran "$(eight pair-seg-g8)"

{ echo "$(eight pair-seg-g8)|rc=0|1s||"; echo "$(eight block-reduce)|rc=0|1s||"; } >> "$tmp/done.txt"
run all "$eight_jobs"
check "no probe when the 800-word jobs are clean" left_out "racecheck racecheck_probe"

finish gpu_sanitize_test
