#!/usr/bin/env bash
# End-to-end checks of the `cky` command line: exit codes, messages, one output line per input
# line, gzip and stdin input. Usage: cli_test.sh PATH/TO/cky SOURCE_DIR
set -u
cky=$1
data=$2/tests/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
passed=0 failed=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name" >&2; fi
}

# Parsing: one line out per line in, in order; an empty line and an unparsable one print (()).
printf 'the man saw a dog .\n\nwith with\nthe dog barks\n' > "$tmp/in.txt"
"$cky" parse --tokenized -g "$data/toy" -i "$tmp/in.txt" -o "$tmp/out.txt" 2> "$tmp/err.txt"
check "parse exits 0" test $? -eq 0
check "one line per input line" test "$(wc -l < "$tmp/out.txt")" -eq 4
check "first tree" grep -qxF '( (S (NP (DT the) (NN man)) (VP (VB saw) (NP (DT a) (NN dog))) (. .)) )' "$tmp/out.txt"
check "empty line gives (())" test "$(sed -n 2p "$tmp/out.txt")" = "(())"
check "no parse gives (())" test "$(sed -n 3p "$tmp/out.txt")" = "(())"
check "warnings name the sentences" grep -q "sentence 3 (2 words)" "$tmp/err.txt"

# Standard input, gzip input and the scored binarized form.
gzip -c "$tmp/in.txt" > "$tmp/in.txt.gz"
"$cky" parse --tokenized -g "$data/toy" -i "$tmp/in.txt.gz" > "$tmp/out_gz.txt" 2>/dev/null
check "gzip input" cmp -s "$tmp/out.txt" "$tmp/out_gz.txt"
head -1 "$tmp/in.txt" | "$cky" parse --tokenized -g "$data/toy" --decoder viterbi --binarize --substates --scores > "$tmp/scored.txt"
check "scored form" grep -q '^( (S-0 -[0-9.]* (NP-0 ' "$tmp/scored.txt"

# Decoders: max-rule (the default) and Viterbi give one line per input; max-rule's score columns
# come first, tab-separated (Berkeley's -sentence_likelihood and -modelScore); max-rule refuses
# the Viterbi-only forms.
"$cky" parse --tokenized -g "$data/toy" --decoder viterbi -i "$tmp/in.txt" > "$tmp/viterbi.txt" 2>/dev/null
check "viterbi decoder: one line per input line" test "$(wc -l < "$tmp/viterbi.txt")" -eq 4
"$cky" parse --tokenized -g "$data/toy" --sentence-likelihood --model-score -i "$tmp/in.txt" \
  > "$tmp/likelihood.txt" 2>/dev/null
check "score columns before the tree" \
  grep -qP '^-[0-9]+\.[0-9]+(E-?[0-9]+)?\t-?[0-9]+\.[0-9]{8}\t\( \(S ' "$tmp/likelihood.txt"
check "no parse: -Infinity columns and (())" \
  test "$(sed -n 3p "$tmp/likelihood.txt")" = "$(printf -- '-Infinity\t-Infinity\t(())')"
# The Viterbi decoder prints its best derivation's score as the likelihood (Berkeley's -viterbi
# -sentence_likelihood), the same as its model score.
head -1 "$tmp/in.txt" | "$cky" parse --tokenized -g "$data/toy" --decoder viterbi \
  --sentence-likelihood --model-score > "$tmp/vit_likelihood.txt" 2>/dev/null
check "viterbi --sentence-likelihood: the Viterbi score" \
  awk -F'\t' '{ exit !(NF == 3 && ($1 - $2 < 1e-6) && ($2 - $1 < 1e-6)) }' "$tmp/vit_likelihood.txt"
"$cky" parse --tokenized -g "$data/toy" --decoder viterbi --kbest 2 < /dev/null > /dev/null 2>&1
check "viterbi with --kbest is a usage error" test $? -eq 2
# K-best: K lines per sentence and a blank line, (()) alone when there is no tree; the first tree
# is the max-rule tree. The toy text export has no base unaries: --confidence is refused.
"$cky" parse --tokenized -g "$data/toy" --kbest 3 --model-score -i "$tmp/in.txt" \
  > "$tmp/kbest.txt" 2>/dev/null
check "kbest: first tree is the max-rule tree" \
  test "$(sed -n 1p "$tmp/kbest.txt" | cut -f2)" = "$(sed -n 1p "$tmp/likelihood.txt" | cut -f3)"
check "kbest: blank line after each sentence" test "$(grep -c '^$' "$tmp/kbest.txt")" -eq 4
check "kbest: (()) for no tree" grep -qxP -- '-Infinity\t\(\(\)\)' "$tmp/kbest.txt"
head -1 "$tmp/in.txt" | "$cky" parse --tokenized -g "$data/toy" --kbest 2 --model-score \
  --format json > "$tmp/kbest.json" 2>/dev/null
check "kbest: JSON array of trees with their scores" \
  grep -qF '"kbest":[{"tree":"( (S (NP (DT the) (NN man))' "$tmp/kbest.json"
"$cky" parse --tokenized -g "$data/toy" --confidence < /dev/null > /dev/null 2>&1
check "--confidence without base unaries is a usage error" test $? -eq 2
"$cky" parse --tokenized -g "$data/toy" --scores < /dev/null > /dev/null 2>&1
check "max-rule with --scores is a usage error" test $? -eq 2

# Raw text (the default): split into sentences and tokenized; one tree per sentence.
printf 'The man saw a dog. The dog barks.\n\nThe man saw the telescope.\n' | \
  "$cky" parse -g "$data/toy" > "$tmp/raw.txt" 2>/dev/null
check "raw text gives one tree per sentence" test "$(wc -l < "$tmp/raw.txt")" -eq 3
check "raw text is tokenized" grep -qF '(VP (VB barks)) (. .))' "$tmp/raw.txt"

# Empty input: no output, success.
: > "$tmp/empty.txt"
"$cky" parse --tokenized -g "$data/toy" -i "$tmp/empty.txt" > "$tmp/out_empty.txt" 2> "$tmp/err_empty.txt"
check "empty input exits 0" test $? -eq 0
check "empty input prints no tree" test ! -s "$tmp/out_empty.txt"
check "empty input is reported" grep -q "holds no sentences" "$tmp/err_empty.txt"
printf '\xff\xfe garbage \x01\n' | "$cky" parse > "$tmp/out_bad.txt" 2> "$tmp/err_bad_bytes.txt"
check "invalid UTF-8 does not crash" test $? -eq 0
check "invalid UTF-8 still gives one line" test "$(wc -l < "$tmp/out_bad.txt")" -eq 1

# Errors: clear message, exit 1 for bad files, 2 for bad usage.
mkdir -p "$tmp/bad"
cp "$data/toy.lexicon" "$tmp/bad/g.lexicon"
printf 'S_0 -> NP_0 VP_0 0.5\nS_0 -> NP_0 oops\n' > "$tmp/bad/g.grammar"
"$cky" parse --tokenized -g "$tmp/bad/g" -i "$tmp/in.txt" > /dev/null 2> "$tmp/err_bad.txt"
check "malformed grammar exits 1" test $? -eq 1
check "malformed grammar names file and line" grep -q "g.grammar:2:" "$tmp/err_bad.txt"
"$cky" parse --tokenized -g "$tmp/nonexistent" < /dev/null > /dev/null 2> "$tmp/err_missing.txt"
check "missing grammar exits 1" test $? -eq 1
check "missing grammar is explained" grep -q "no grammar at" "$tmp/err_missing.txt"
"$cky" parse --tokenized -g "$data/toy" -i "$tmp/nonexistent.txt" > /dev/null 2>&1
check "missing input exits 1" test $? -eq 1
"$cky" parse --no-such-option > /dev/null 2>&1
check "bad option exits 2" test $? -eq 2
"$cky" parse --help > "$tmp/help.txt"
check "help exits 0" test $? -eq 0
check "help explains options" grep -q -- "--max-length" "$tmp/help.txt"

# A too-long sentence gets (()) and the next still parses.
printf 'the dog barks\nthe dog barks with the man\nthe dog barks\n' | \
  "$cky" parse --tokenized -g "$data/toy" --max-length 4 > "$tmp/out_long.txt" 2> "$tmp/err_long.txt"
check "too long gives (())" test "$(sed -n 2p "$tmp/out_long.txt")" = "(())"
check "after too long, parsing goes on" test "$(sed -n 3p "$tmp/out_long.txt")" = "$(sed -n 1p "$tmp/out_long.txt")"

# The binary cache round trip.
"$cky" convert "$data/toy" -o "$tmp/toy.ckybin" 2>/dev/null
check "convert exits 0" test $? -eq 0
"$cky" parse --tokenized -g "$tmp/toy.ckybin" -i "$tmp/in.txt" > "$tmp/out_cache.txt" 2>/dev/null
check "cache parses the same" cmp -s "$tmp/out.txt" "$tmp/out_cache.txt"

# Berkeley's own .gr files (skipped without ../shared): parse directly, convert to the cache and to
# the text export; each form parses as its source does.
gr_dir=$2/../shared/grammars/berkeley-small
if [ -f "$gr_dir/small_sm2.gr" ]; then
  sentences=$2/../shared/grammars/reference/small_sm2/sentences.txt
  head -5 "$sentences" > "$tmp/ref5.txt"
  "$cky" parse --tokenized -g "$gr_dir/small_sm2.gr" --decoder viterbi --binarize --substates --scores \
    -i "$tmp/ref5.txt" > "$tmp/gr.txt" 2>/dev/null
  check ".gr parses" test $? -eq 0
  check ".gr gives one tree per sentence" test "$(grep -c '^( (' "$tmp/gr.txt")" -eq 5
  "$cky" convert "$gr_dir/small_sm2.gr" -o "$tmp/sm2.ckybin" 2>/dev/null
  check "convert .gr to cache" test $? -eq 0
  "$cky" parse --tokenized -g "$tmp/sm2.ckybin" --decoder viterbi --binarize --substates --scores \
    -i "$tmp/ref5.txt" > "$tmp/gr_cache.txt" 2>/dev/null
  check "cache of a .gr parses the same (exact lexicon kept)" \
    cmp -s "$tmp/gr.txt" "$tmp/gr_cache.txt"
  "$cky" convert "$gr_dir/small_sm2.gr" -o "$tmp/sm2_text" 2>/dev/null
  check "convert .gr to text" test $? -eq 0
  check "text export files written" test -s "$tmp/sm2_text.grammar" -a -s "$tmp/sm2_text.lexicon" \
    -a -s "$tmp/sm2_text.splits" -a -s "$tmp/sm2_text.words"
  check "same split trees as Berkeley's export" \
    cmp -s "$gr_dir/small_sm2.splits" "$tmp/sm2_text.splits"
  "$cky" parse --tokenized --no-cache -g "$gr_dir/small_sm2" --decoder viterbi --binarize --substates --scores \
    -i "$tmp/ref5.txt" > "$tmp/export.txt" 2>/dev/null
  "$cky" parse --tokenized --no-cache -g "$tmp/sm2_text" --decoder viterbi --binarize --substates --scores \
    -i "$tmp/ref5.txt" > "$tmp/converted.txt" 2>/dev/null
  check "converted text parses as Berkeley's text export" \
    cmp -s "$tmp/export.txt" "$tmp/converted.txt"
  head -c 5000 "$gr_dir/small_sm2.gr" > "$tmp/cut.gr"
  "$cky" parse --tokenized -g "$tmp/cut.gr" -i "$tmp/ref5.txt" > /dev/null 2> "$tmp/err_cut.txt"
  check "truncated .gr exits 1" test $? -eq 1
  check "truncated .gr is explained" grep -q "cut.gr" "$tmp/err_cut.txt"
fi

# Membership: one 1/0 per line, the same from plain CYK and the bulk (bitwise-parallel) path.
printf "start S\nS -> S S\nS -> S B\nS -> A A\nS -> A B\nS -> B S\nS -> B B\nA -> 'a'\nB -> 'b'\n" \
  > "$tmp/paper.cnf"
printf 'a b\na\nb b\na a a\n' > "$tmp/strings.txt"
"$cky" recognize --grammar "$tmp/paper.cnf" "$tmp/strings.txt" > "$tmp/cyk.txt" 2>/dev/null
check "recognize exits 0" test $? -eq 0
check "recognize answers" test "$(tr '\n' ' ' < "$tmp/cyk.txt")" = "1 0 1 0 "
"$cky" recognize --grammar "$tmp/paper.cnf" --bulk "$tmp/strings.txt" > "$tmp/bulk.txt" 2>/dev/null
check "bulk gives the same answers" cmp -s "$tmp/cyk.txt" "$tmp/bulk.txt"
"$cky" recognize --grammar "$tmp/paper.cnf" --bulk --bulk-kernel 2 --word-bits 32 \
  "$tmp/strings.txt" > "$tmp/bulk2.txt" 2>/dev/null
check "bulk kernel choice gives the same answers" cmp -s "$tmp/cyk.txt" "$tmp/bulk2.txt"
"$cky" recognize --grammar "$tmp/paper.cnf" --bulk --bulk-kernel 3 < "$tmp/strings.txt" \
  > /dev/null 2>&1
check "unknown bulk kernel is refused" test $? -ne 0

echo "$passed passed, $failed failed"
test "$failed" -eq 0
