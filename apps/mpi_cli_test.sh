#!/bin/sh
# mpi_cli_test.sh CKY INPUT: `mpirun -np N cky parse --mpi -b cpu` for N = 1, 2, 3 prints exactly
# what one process prints (stdout byte for byte, and the same warnings in the same order), in Penn
# and JSON formats, with shards of 3 sentences and a sentence over --max-length, and with shards
# of 64 (messages past the transport's eager limit); and
# `cky recognize --mpi` (--bulk and not) answers 300 random strings as one process does; and
# `cky train --split-merge --mpi` writes one process's grammar, byte for byte (134 GUM trees). Exits 77
# (skipped) without mpirun or in a build without MPI. CI runs as root: Open MPI then needs
# OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM); --oversubscribe lets 3 ranks share 2 cores.
set -u
cky=$1
input=$2
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipped"; exit 77; }
if "$cky" parse --help | tr -s ' \n' '  ' | grep -q "This build has no MPI"; then
  echo "this build has no MPI: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers: no cross-memory attach
for format in penn json; do
  set -- parse -b cpu -t 1 --tokenized --no-progress --batch-size 3 --max-length 25 \
    --format "$format"
  "$cky" "$@" "$input" > "$work/single.txt" 2> "$work/single.err" || exit 1
  grep -c . "$work/single.txt" | grep -q '^17$' || { echo "expected 17 lines"; exit 1; }
  grep -q "sentence 9 (35 words)" "$work/single.err" || { cat "$work/single.err"; exit 1; }
  for np in 1 2 3; do
    mpirun --oversubscribe -np "$np" "$cky" "$@" --mpi "$input" > "$work/mpi.txt" \
      2> "$work/mpi.err" || { cat "$work/mpi.err"; exit 1; }
    if ! cmp "$work/single.txt" "$work/mpi.txt"; then
      diff "$work/single.txt" "$work/mpi.txt" | head -20
      exit 1
    fi
    # The warnings, in order (Open MPI may add lines of its own: only ours are compared).
    grep -F "[warning]" "$work/single.err" > "$work/single.warn"
    grep -F "[warning]" "$work/mpi.err" > "$work/mpi.warn"
    if ! cmp -s "$work/single.warn" "$work/mpi.warn"; then
      echo "warnings differ with $np ranks:"
      diff "$work/single.warn" "$work/mpi.warn"
      exit 1
    fi
    echo "$format, $np ranks: identical ($(wc -l < "$work/mpi.txt") lines)"
  done
done
# Shards and answers past the transport's eager limit (a few KB): rank 0 sends a worker its next
# shard while the worker sends rank 0 its answer, which deadlocked with blocking sends.
for k in $(seq 20); do cat "$input"; done > "$work/big.txt"
set -- parse -b cpu -t 1 --tokenized --no-progress --batch-size 64
"$cky" "$@" "$work/big.txt" > "$work/single.txt" 2> /dev/null || exit 1
for np in 2 3; do
  timeout 120 mpirun --oversubscribe -np "$np" "$cky" "$@" --mpi "$work/big.txt" \
    > "$work/mpi.txt" 2> "$work/mpi.err" || { echo "large shards, $np ranks: failed or hung"; exit 1; }
  cmp "$work/single.txt" "$work/mpi.txt" || exit 1
  echo "large shards, $np ranks: identical ($(wc -c < "$work/mpi.txt") bytes)"
done
"$cky" random-grammar --nonterminals 8 --rules 40 --terminals 4 -o "$work/g.cnf" || exit 1
"$cky" random-strings -g "$work/g.cnf" --count 300 --max-length 20 -o "$work/strings.txt" || exit 1
for bulk in --bulk ""; do
  set -- recognize -g "$work/g.cnf" -b cpu -t 1 --batch-size 40 $bulk
  "$cky" "$@" "$work/strings.txt" > "$work/single.txt" || exit 1
  grep -q 1 "$work/single.txt" && grep -q 0 "$work/single.txt" || { echo "need both answers"; exit 1; }
  for np in 2 3; do
    mpirun --oversubscribe -np "$np" "$cky" "$@" --mpi "$work/strings.txt" > "$work/mpi.txt" \
      2> "$work/mpi.err" || { cat "$work/mpi.err"; exit 1; }
    cmp "$work/single.txt" "$work/mpi.txt" || exit 1
    echo "recognize ${bulk:-(CYK)}, $np ranks: identical ($(wc -l < "$work/mpi.txt") lines)"
  done
done
data=$(dirname "$input")/evalb/gum
set -- train --split-merge 1 --split-iterations 4 --merge-iterations 2 --smooth-iterations 2 \
  "$data/GUM_interview_cyclone.gld" "$data/GUM_court_loan.gld" "$data/GUM_news_iodine.gld"
"$cky" "$@" --threads 2 -o "$work/one" 2> "$work/train.err" || { cat "$work/train.err"; exit 1; }
for np in 2 3; do
  mpirun --oversubscribe -np "$np" "$cky" "$@" --threads 1 --mpi -o "$work/mpi" \
    2> "$work/mpi.err" || { cat "$work/mpi.err"; exit 1; }
  for part in grammar lexicon splits words ckybin; do
    cmp "$work/one.$part" "$work/mpi.$part" || exit 1
  done
  echo "train --split-merge, $np ranks: the same grammar ($(wc -l < "$work/mpi.grammar") rules)"
done
