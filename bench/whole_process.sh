#!/usr/bin/env bash
# Whole `cky parse` processes, the job users run, for one grammar in one run: Viterbi exact and
# pruned (`safe` at every level, `safe` and `accurate` at levels 0 and 2), max-rule exact, pruned
# `safe` at levels 0, 2 and 4 (those the grammar has; the default until 2026-11-29) and the
# default (max-rule, pruned), each N times in turn; prints sentences/s (from the best wall time of
# each setting), the ratio to exact Viterbi measured in the same run, and how many trees each
# pruned setting shares with its exact decoder.
#
#   bench/whole_process.sh --cky build/apps/cky --grammar G --sentences wsj23.txt [--repeat 2]
#       [--backend cuda] [--label NAME] [--out DIR] [-- extra cky parse options]
#
# No --grammar: the built-in grammar.
#
# Sentences: tokenized, one per line (cky parse --tokenized); bench/RESULTS.md's "WSJ-23 lengths"
# are bench/wsj23_length_sentences.sh's. bench/RESULTS.md records the tables.
set -euo pipefail
cky=build/apps/cky grammar= sentences= repeat=2 backend=cuda label= out=
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --cky) cky=$2; shift 2 ;;
    --grammar) grammar=$2; shift 2 ;;
    --sentences) sentences=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "whole_process.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
[ -n "$sentences" ] || { echo "whole_process.sh: --sentences is required" >&2; exit 2; }
grammar_args=()  # no --grammar: the built-in grammar
[ -z "$grammar" ] || grammar_args=(-g "$grammar")
[ -x "$cky" ] || { echo "whole_process.sh: no cky at $cky" >&2; exit 2; }
out=${out:-$(mktemp -d)}
mkdir -p "$out"
label=${label:-$(basename "${grammar:-built-in grammar}")}
count=$(grep -c . "$sentences" || true)
# name | cky parse options
settings=(
  "viterbi-exact|--decoder viterbi --prune off"
  "viterbi-pruned|--decoder viterbi --prune safe"
  "viterbi-pruned-0-2|--decoder viterbi --prune safe --prune-levels 0 2"
  "viterbi-accurate-0-2|--decoder viterbi --prune accurate --prune-levels 0 2"
  "max-rule-exact|--decoder max-rule --prune off"
  "max-rule-safe|--decoder max-rule --prune safe --prune-levels 0 2 4"
  "default|"
)
declare -A best
# One untimed process first: the grammar's cache, the device's first context.
"$cky" parse --tokenized "${grammar_args[@]}" -b "$backend" --no-progress "${extra[@]}" < /dev/null \
  > /dev/null 2>&1 || true
# A grammar without hierarchy level 2 (split fewer than three times) has no levels 0 and 2.
if ! "$cky" parse --tokenized "${grammar_args[@]}" -b "$backend" --no-progress --decoder viterbi \
  --prune safe --prune-levels 0 2 "${extra[@]}" < /dev/null > /dev/null 2>&1; then
  echo "whole_process.sh: no pre-parse levels 0 and 2 in this grammar; those settings are left out" >&2
  kept=()
  for entry in "${settings[@]}"; do
    case ${entry%%|*} in *-0-2) ;; *) kept+=("$entry") ;; esac
  done
  settings=("${kept[@]}")
fi
# Nor has a grammar split fewer than five times level 4: pruned `safe` at the levels it has.
if ! "$cky" parse --tokenized "${grammar_args[@]}" -b "$backend" --no-progress \
  --prune safe --prune-levels 0 2 4 "${extra[@]}" < /dev/null > /dev/null 2>&1; then
  for k in "${!settings[@]}"; do
    [ "${settings[$k]%%|*}" = max-rule-safe ] && settings[$k]="${settings[$k]% 4}"
  done
fi
for round in $(seq 1 "$repeat"); do
  for entry in "${settings[@]}"; do
    name=${entry%%|*}
    read -r -a options <<< "${entry#*|}"
    start=$(date +%s.%N)
    if ! "$cky" parse --tokenized "${grammar_args[@]}" -b "$backend" --no-progress --timeline \
      "${options[@]}" "${extra[@]}" < "$sentences" > "$out/$name.$round.txt" \
      2> "$out/$name.$round.timeline"; then
      echo "whole_process.sh: cky parse ${options[*]} failed:" >&2
      tail -5 "$out/$name.$round.timeline" >&2
      exit 1
    fi
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    printf '%s round %d: %.2f s\n' "$name" "$round" "$wall" >&2
    if [ -z "${best[$name]:-}" ] || awk -v a="$wall" -v b="${best[$name]}" 'BEGIN { exit !(a < b) }'; then
      best[$name]=$wall
    fi
  done
done
same() {  # trees of setting $1 equal to setting $2's (first rounds)
  paste -d '\t' "$out/$1.1.txt" "$out/$2.1.txt" | awk -F '\t' '$1 == $2' | wc -l
}
echo
echo "$label, $count sentences ($(basename "$sentences")), -b $backend, best of $repeat"
echo
echo "| setting | wall | sentences/s | x exact Viterbi | trees = exact |"
echo "| --- | ---: | ---: | ---: | ---: |"
for entry in "${settings[@]}"; do
  name=${entry%%|*}
  wall=${best[$name]}
  case $name in
    viterbi-pruned* | viterbi-accurate*) agree="$(same "$name" viterbi-exact) of $count" ;;
    default | max-rule-safe) agree="$(same "$name" max-rule-exact) of $count" ;;
    *) agree="-" ;;
  esac
  awk -v n="$name" -v w="$wall" -v c="$count" -v v="${best[viterbi-exact]}" -v a="$agree" \
    'BEGIN { printf "| %s | %.2f s | %.0f | %.2f | %s |\n", n, w, c / w, v / w, a }'
done
echo
echo "outputs and --timeline reports: $out"
