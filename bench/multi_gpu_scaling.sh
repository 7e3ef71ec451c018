#!/usr/bin/env bash
# Multi-GPU scaling of `cky parse --devices` (issue 18): the whole process, as users run it, on a
# corpus whose sentence lengths follow a length list (WSJ section 23 by default) and whose words
# are taken in turn from tokenized sentence files. For each GPU count it parses the corpus with
# `--devices 0,...,G-1` and prints sentences/s, the speed-up over one GPU and the scaling
# efficiency (speed-up / G); every output must be byte-identical to the one-GPU output. Loading the
# grammar and making the backends (one per GPU, made at once) is a fixed cost that a long corpus
# amortises, so each row also gives the parse phase alone (from the end of the `load grammar and
# backend` phase to the last output line, by --timeline) and the efficiency of that, and the time
# the process took after its last line (freeing every device, a fixed cost too).
#
#   bench/multi_gpu_scaling.sh --cky build/apps/cky --grammar ../shared/grammars/en_sm6s/en_sm6s \
#     --gpus "1 2 4 8"                 # on a machine with 8 GPUs (counts past the machine's skip)
#   bench/multi_gpu_scaling.sh ... --gpus 1 --fake "0,0"   # one GPU: also two backends on GPU 0
#
# Options: --cky PATH, --grammar PREFIX|FILE, --lengths FILE, --words "FILE...", --decoder
# viterbi|max-rule (default viterbi), --count N (sentences; default: one per length), --gpus LIST,
# --fake "SPEC..." (extra --devices specs, e.g. "0,0 0,0,0"), --single (also run without
# --devices), --out DIR (outputs and logs; default a temporary folder), --repeat N (runs per
# setting, the best kept; default 1), --args "..." (more `cky parse` options for every run, e.g.
# "--batch-size 1024"). Prints a Markdown table for bench/RESULTS.md.
set -euo pipefail
cky=build/apps/cky
shared=${CKY_SHARED_DIR:-../shared}
grammar=$shared/grammars/en_sm6s/en_sm6s
lengths=$shared/bench/wsj23-sentence-lengths.txt
words="$shared/grammars/reference/small_sm2/sentences.txt $shared/grammars/reference/gum_sm3/sentences.txt"
decoder=viterbi
count=0
gpus="1 2 4 8"
fake=""
single=0
out=""
repeat=1
extra_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cky) cky=$2; shift 2 ;;
    --grammar) grammar=$2; shift 2 ;;
    --lengths) lengths=$2; shift 2 ;;
    --words) words=$2; shift 2 ;;
    --decoder) decoder=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --fake) fake=$2; shift 2 ;;
    --single) single=1; shift ;;
    --out) out=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --args) extra_args=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "multi_gpu_scaling.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"
available=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
echo "GPUs on this machine: $available" >&2

# The corpus: one tokenized sentence per length, words taken in turn from the word files.
corpus=$out/corpus.txt
# shellcheck disable=SC2086
cat $words | tr -s ' \t' '\n\n' | grep -v '^$' > "$out/words.txt"
awk -v count="$count" 'NR == FNR { w[n++] = $1; next }
     { len[m++] = $1 }
     END { total = count > 0 ? count : m; k = 0
           for (i = 0; i < total; ++i) { line = ""
             for (j = 0; j < len[i % m]; ++j) { line = line (j ? " " : "") w[k % n]; ++k }
             print line } }' "$out/words.txt" "$lengths" > "$corpus"
sentences=$(wc -l < "$corpus")
echo "corpus: $sentences sentences, $(wc -w < "$corpus") words" >&2

export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$out/cache}
# Warm-up: writes the grammar cache, so every timed run loads the same way.
head -5 "$corpus" | "$cky" parse --tokenized -g "$grammar" --decoder "$decoder" -b cuda \
  --no-progress > /dev/null

run() {  # run NAME DEVICES-ARGS...: prints the best run's wall seconds, end of loading, last write
  local name=$1; shift
  local best="" best_load="" best_write=""
  for ((r = 0; r < repeat; ++r)); do
    local start end load
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$cky" parse --tokenized -g "$grammar" --decoder "$decoder" -b cuda --no-progress --timeline \
      $extra_args "$@" "$corpus" > "$out/$name.txt" 2> "$out/$name.log"
    end=$(date +%s.%N)
    # The timeline's rows: phase, calls, total, first start, last end (seconds since the start).
    load=$(awk '/^  load grammar and backend / { print $NF }' "$out/$name.log")
    write=$(awk '/^  write / { print $NF }' "$out/$name.log")
    read -r best best_load best_write < <(awk -v a="$start" -v b="$end" -v l="${load:-0}" \
      -v w="${write:-0}" -v best="$best" -v bl="$best_load" -v bw="$best_write" \
      'BEGIN { s = b - a; if (best == "" || s < best) print s, l, w; else print best, bl, bw }')
  done
  echo "$best $best_load $best_write"
}

echo "| setting | --devices | seconds (whole process) | sentences/s | speed-up | efficiency |" \
  "loading s | parse phase s | parse sentences/s | parse efficiency | after the last line s |" \
  "output = 1 GPU |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
base=""
parse_base=""
reference=""
row() {  # row NAME SPEC GPUS "SECONDS LOAD-END LAST-WRITE" (the output is $out/NAME.txt)
  local seconds load write rate parse_rate same
  read -r seconds load write <<< "$4"
  rate=$(awk -v n="$sentences" -v s="$seconds" 'BEGIN { print n / s }')
  parse_rate=$(awk -v n="$sentences" -v w="$write" -v l="$load" 'BEGIN { print n / (w - l) }')
  [ -n "$base" ] || base=$rate
  [ -n "$parse_base" ] || parse_base=$parse_rate
  [ -n "$reference" ] || reference=$out/$1.txt
  if cmp -s "$reference" "$out/$1.txt"; then same=yes; else same=NO; fi
  awk -v name="$1" -v spec="$2" -v g="$3" -v s="$seconds" -v l="$load" -v w="$write" \
    -v rate="$rate" -v base="$base" -v prate="$parse_rate" -v pbase="$parse_base" -v same="$same" \
    'BEGIN { printf "| %s | %s | %.2f | %.1f | %.2f | %.0f%% | %.2f | %.2f | %.1f | %.0f%% | %.2f | %s |\n",
             name, spec, s, rate, rate / base, 100 * rate / base / g, l, w - l, prate,
             100 * prate / pbase / g, s - w, same }'
}
for g in $gpus; do
  if [ "$g" -gt "$available" ]; then
    echo "| gpus$g | | not run: the machine has $available GPUs | | | | | | | | | |"
    continue
  fi
  spec=$(seq -s, 0 $((g - 1)))
  row "gpus$g" "$spec" "$g" "$(run "gpus$g" --devices "$spec")"
done
for spec in $fake; do
  name="fake-${spec//,/_}"
  # Backends sharing GPUs count as one GPU each for the efficiency column (the GPUs used).
  used=$(echo "$spec" | tr ',' '\n' | sort -u | wc -l)
  row "$name" "$spec" "$used" "$(run "$name" --devices "$spec")"
done
if [ "$single" = 1 ]; then
  row single "(none: one backend, as before)" 1 "$(run single)"
fi
echo "outputs and logs: $out" >&2
