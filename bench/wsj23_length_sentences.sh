#!/usr/bin/env bash
# The sentences bench/whole_process.sh times (bench/RESULTS.md's "WSJ-23 lengths"): one tokenized
# sentence a line, of WSJ section 23's 2,416 lengths in order, filled with consecutive tokens of
# the two reference sentence files (GUM words, cycled), as viterbi_bench and pruning_bench make
# them from --lengths.
#
#   bench/wsj23_length_sentences.sh [SHARED_DIR] > wsj.txt
set -euo pipefail
shared=${1:-$(dirname "$0")/../../shared}
lengths=$shared/bench/wsj23-sentence-lengths.txt
tokens=("$shared/grammars/reference/small_sm2/sentences.txt"
        "$shared/grammars/reference/gum_sm3/sentences.txt")
for f in "$lengths" "${tokens[@]}"; do
  [ -r "$f" ] || { echo "wsj23_length_sentences.sh: cannot read $f" >&2; exit 1; }
done
cat "${tokens[@]}" | tr -s ' \t\n' '\n' | grep -v '^$' |
  awk -v lengths="$lengths" '
    { token[count++] = $0 }
    END {
      at = 0
      while ((getline n < lengths) > 0) {
        line = ""
        for (k = 0; k < n; ++k) line = line (k ? " " : "") token[(at++) % count]
        print line
      }
    }'
