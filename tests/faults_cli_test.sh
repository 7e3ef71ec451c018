#!/usr/bin/env bash
# The faults of issue 39, end to end: nothing crashes, nothing is lost, nothing wrong is trusted.
# Each block names the item of the issue it guards. Usage: faults_cli_test.sh PATH/TO/cky SOURCE_DIR
set -u
cky=$1
data=$(cd "$2" && pwd)/tests/data
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
passed=0 failed=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name" >&2; fi
}
# Memory and file-size limits (ulimit -v) cannot be combined with AddressSanitizer's shadow memory.
sanitized=false
grep -q __asan_init "$cky" && sanitized=true
toy="--tokenized -g $data/toy --no-progress"
printf 'the man saw a dog .\nthe dog barks\n' > "$tmp/two.txt"

# 1. Trees nested deeper than the stack allows (200,000 levels): read, scored, never recursed on.
python3 - "$tmp" <<'EOF'
import sys
depth = 200000
with open(sys.argv[1] + "/deep.mrg", "w") as f:
    f.write("(S " * depth + "(NN dog)" + ")" * depth + "\n")
with open(sys.argv[1] + "/flat.mrg", "w") as f:
    f.write("(S (NN dog))\n")
EOF
"$cky" eval "$tmp/flat.mrg" "$tmp/deep.mrg" > "$tmp/deep_eval.txt" 2> "$tmp/deep_eval_err.txt"
rc=$?
check "1: eval of a 200,000-deep test tree does not crash" test $rc -lt 128
check "1: eval of a deep tree prints its report" grep -q "Bracketing FMeasure" "$tmp/deep_eval.txt"
"$cky" eval "$tmp/deep.mrg" "$tmp/flat.mrg" > "$tmp/deep_eval2.txt" 2>&1
check "1: eval of a deep gold tree" grep -q "Bracketing Recall *= *0.00" "$tmp/deep_eval2.txt"
"$cky" eval --strip-root --json "$tmp/deep.mrg" "$tmp/flat.mrg" > /dev/null 2>&1
check "1: eval --json with a deep gold tree does not crash" test $? -lt 128
"$cky" train "$tmp/deep.mrg" -o "$tmp/deep_grammar" > /dev/null 2> "$tmp/deep_train_err.txt"
check "1: training on a deep tree is an error, not a crash" test $? -eq 1
check "1: the error names the file and the tree" grep -q "deep.mrg: tree 1 is nested" "$tmp/deep_train_err.txt"

# 2. Absurd thread counts are a usage error, not an abort.
"$cky" parse $toy --threads 100000 < "$tmp/two.txt" > /dev/null 2> "$tmp/threads_err.txt"
check "2: --threads 100000 is a usage error" test $? -eq 2
check "2: --threads 100000 is explained" grep -q -- "--threads" "$tmp/threads_err.txt"

# 3. A sentence whose chart cannot fit in memory gets (()) and a warning; the others are parsed.
if ! $sanitized; then
  python3 -c "print('the dog barks'); print(' '.join(['the'] * 5000)); print('the dog barks')" \
    > "$tmp/long.txt"
  (ulimit -v 1500000; "$cky" parse $toy --max-length 0 -b cpu -i "$tmp/long.txt" \
    > "$tmp/long_out.txt" 2> "$tmp/long_err.txt")
  check "3: a sentence too big for memory does not end the run" test $? -eq 0
  check "3: one line per sentence" test "$(wc -l < "$tmp/long_out.txt")" -eq 3
  check "3: the sentence that does not fit gets (())" test "$(sed -n 2p "$tmp/long_out.txt")" = "(())"
  check "3: the others are parsed" test "$(sed -n 3p "$tmp/long_out.txt")" != "(())"
  check "3: the warning says why" grep -q "sentence 2 .*memory" "$tmp/long_err.txt"
fi

# 4. Damaged compressed input is an error naming the cause; what was intact is not lost.
for i in $(seq 1 50); do echo "the dog barks"; done > "$tmp/fifty.txt"
zstd -q -c "$tmp/fifty.txt" > "$tmp/fifty.zst"
head -c $(($(stat -c %s "$tmp/fifty.zst") - 3)) "$tmp/fifty.zst" > "$tmp/cut.zst"
"$cky" parse $toy -i "$tmp/cut.zst" > "$tmp/cut_out.txt" 2> "$tmp/cut_err.txt"
check "4: a truncated .zst is an error" test $? -eq 1
check "4: a truncated .zst is explained" grep -qi "cut.zst.*truncated" "$tmp/cut_err.txt"
"$cky" tokenize -i "$tmp/cut.zst" > /dev/null 2> "$tmp/cut_tok_err.txt"
check "4: cky tokenize: a truncated .zst is an error" test $? -eq 1
check "4: cky tokenize: a truncated .zst is explained" grep -qi "truncated" "$tmp/cut_tok_err.txt"
gzip -c "$tmp/fifty.txt" > "$tmp/garbage.gz"
echo "trailing garbage" >> "$tmp/garbage.gz"
"$cky" parse $toy -i "$tmp/garbage.gz" > "$tmp/garbage_out.txt" 2> "$tmp/garbage_err.txt"
check "4: trailing garbage after gzip data is an error" test $? -eq 1
check "4: every intact sentence before the garbage is parsed" test "$(wc -l < "$tmp/garbage_out.txt")" -eq 50
check "4: trailing garbage is named" grep -qi "garbage.gz.*trailing" "$tmp/garbage_err.txt"
gzip -c "$tmp/fifty.txt" > "$tmp/crc.gz"
size=$(stat -c %s "$tmp/crc.gz")
printf '\x00\x00' | dd of="$tmp/crc.gz" bs=1 seek=$((size - 8)) conv=notrunc 2>/dev/null
"$cky" parse $toy -i "$tmp/crc.gz" > /dev/null 2> "$tmp/crc_err.txt"
check "4: a bad gzip CRC is an error" test $? -eq 1
check "4: a bad gzip CRC is named" grep -qi "crc.gz.*CRC" "$tmp/crc_err.txt"

# 5. Output that cannot be written is an error, for every command.
printf '(S (NN dog))\n' > "$tmp/one.mrg"
for args in "eval $tmp/one.mrg $tmp/one.mrg" "eval --json $tmp/one.mrg $tmp/one.mrg" \
            "tokenize -i $tmp/two.txt" "parse $toy -i $tmp/two.txt"; do
  "$cky" $args > /dev/full 2> "$tmp/full_err.txt"
  check "5: cky $args >/dev/full fails" test $? -eq 1
  check "5: cky $args >/dev/full says why" grep -qi "no space" "$tmp/full_err.txt"
  "$cky" $args >&- 2> "$tmp/closed_err.txt"
  check "5: cky $args >&- fails" test $? -eq 1
done

# 6. A damaged binary grammar is never trusted: -g FILE.ckybin is an error, a damaged cache is
#    rebuilt with a warning.
"$cky" convert "$data/toy" -o "$tmp/toy.ckybin" 2>/dev/null
"$cky" parse $toy < "$tmp/two.txt" > "$tmp/good.txt" 2>/dev/null
cp "$tmp/toy.ckybin" "$tmp/flipped.ckybin"
size=$(stat -c %s "$tmp/flipped.ckybin")
# Flip one bit in the middle of the file.
byte=$(od -An -tu1 -j $((size / 2)) -N1 "$tmp/flipped.ckybin" | tr -d ' ')
printf "\\$(printf %03o $((byte ^ 4)))" | dd of="$tmp/flipped.ckybin" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$cky" parse --tokenized -g "$tmp/flipped.ckybin" < "$tmp/two.txt" > /dev/null 2> "$tmp/flip_err.txt"
check "6: a bit flipped in a .ckybin is an error" test $? -eq 1
check "6: the error names the file and the checksum" grep -qi "flipped.ckybin.*checksum" "$tmp/flip_err.txt"
cache_file=$(ls "$XDG_CACHE_HOME"/cky/*.ckybin | head -1)
size=$(stat -c %s "$cache_file")
byte=$(od -An -tu1 -j $((size / 2)) -N1 "$cache_file" | tr -d ' ')
printf "\\$(printf %03o $((byte ^ 4)))" | dd of="$cache_file" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$cky" parse $toy < "$tmp/two.txt" > "$tmp/rebuilt.txt" 2> "$tmp/rebuilt_err.txt"
check "6: a damaged cache still parses" test $? -eq 0
check "6: a damaged cache parses as the grammar does" cmp -s "$tmp/good.txt" "$tmp/rebuilt.txt"
check "6: a damaged cache is warned about" grep -qi "checksum" "$tmp/rebuilt_err.txt"
"$cky" parse $toy < "$tmp/two.txt" > /dev/null 2> "$tmp/after_err.txt"
check "6: a damaged cache is replaced" test "$(grep -ci "checksum\|wrote a binary cache" "$tmp/after_err.txt")" -eq 0

# 7. The cache directory is private: created 0700, never under a shared /tmp, and files another
#    user could have planted are not trusted.
check "7: the cache directory is created 0700" test "$(stat -c %a "$XDG_CACHE_HOME/cky")" = 700
mkdir -p "$tmp/nohome"
(unset HOME XDG_CACHE_HOME; cd "$tmp/nohome" && TMPDIR="$tmp/nohome" "$cky" parse $toy \
  < "$tmp/two.txt" > /dev/null 2>&1)
check "7: no cache in TMPDIR without HOME" test -z "$(ls -A "$tmp/nohome")"
chmod 0777 "$XDG_CACHE_HOME/cky"
"$cky" parse $toy < "$tmp/two.txt" > "$tmp/open_dir.txt" 2> "$tmp/open_dir_err.txt"
check "7: a cache directory others can write still parses" cmp -s "$tmp/good.txt" "$tmp/open_dir.txt"
check "7: a cache directory others can write is not used, with a warning" \
  grep -qi "cache.*others" "$tmp/open_dir_err.txt"
chmod 0700 "$XDG_CACHE_HOME/cky"
if [ "$(id -u)" -eq 0 ]; then
  chown nobody "$cache_file"
  "$cky" parse $toy < "$tmp/two.txt" > "$tmp/planted.txt" 2> "$tmp/planted_err.txt"
  check "7: a cache file owned by another user still parses" cmp -s "$tmp/good.txt" "$tmp/planted.txt"
  check "7: a cache file owned by another user is ignored with a warning" \
    grep -qi "owned by another user" "$tmp/planted_err.txt"
fi

# 8. Bad grammars are file:line errors.
mkdir -p "$tmp/g"
bad_grammar() {  # bad_grammar NAME: copies the toy grammar to $tmp/g/NAME.*
  for ext in grammar lexicon splits; do cp "$data/toy.$ext" "$tmp/g/$1.$ext"; done
}
bad_grammar unknown_tag
echo "VBF barks [1.0]" >> "$tmp/g/unknown_tag.lexicon"
"$cky" parse --tokenized --no-cache -g "$tmp/g/unknown_tag" < "$tmp/two.txt" > /dev/null 2> "$tmp/err8a.txt"
check "8: a lexicon row with an unknown tag is an error" test $? -eq 1
check "8: ... naming file and line" grep -q "unknown_tag.lexicon:13:" "$tmp/err8a.txt"
bad_grammar empty
: > "$tmp/g/empty.grammar"
"$cky" parse --tokenized --no-cache -g "$tmp/g/empty" < "$tmp/two.txt" > /dev/null 2> "$tmp/err8b.txt"
check "8: an empty .grammar is an error" test $? -eq 1
check "8: ... naming the file" grep -q "empty.grammar" "$tmp/err8b.txt"
bad_grammar substate
echo "VP_99 -> VB_0 NP_0 0.5" >> "$tmp/g/substate.grammar"
"$cky" parse --tokenized --no-cache -g "$tmp/g/substate" < "$tmp/two.txt" > /dev/null 2> "$tmp/err8c.txt"
check "8: an out-of-range substate is an error" test $? -eq 1
check "8: ... naming file and line" grep -q "substate.grammar:19:" "$tmp/err8c.txt"
bad_grammar lexicon_size
echo "NN cat [0.5, 0.5]" >> "$tmp/g/lexicon_size.lexicon"
"$cky" parse --tokenized --no-cache -g "$tmp/g/lexicon_size" < "$tmp/two.txt" > /dev/null 2> "$tmp/err8d.txt"
check "8: a lexicon row of the wrong size is an error" test $? -eq 1
check "8: ... naming file and line" grep -q "lexicon_size.lexicon:13:" "$tmp/err8d.txt"

# 9. What was read is what is printed: invalid UTF-8 and NUL bytes come out as U+FFFD, and a
#    byte-order mark is no part of the first token, in every input form.
printf 'the \xff\xfe dog\n' > "$tmp/bad_utf8.txt"
# The built-in grammar parses unknown words (the toy one would print (()) for them).
builtin="--tokenized -b cpu --no-progress"
"$cky" parse $builtin -i "$tmp/bad_utf8.txt" > "$tmp/bad_utf8_out.txt" 2>/dev/null
check "9: invalid UTF-8 is printed as U+FFFD" grep -q $'\xef\xbf\xbd\xef\xbf\xbd' "$tmp/bad_utf8_out.txt"
check "9: no raw invalid bytes in the output" test "$(grep -c $'\xff' "$tmp/bad_utf8_out.txt")" -eq 0
printf 'the \000 dog\n' > "$tmp/nul.txt"
"$cky" parse $builtin -i "$tmp/nul.txt" > "$tmp/nul_out.txt" 2> "$tmp/nul_err.txt"
check "9: a NUL byte is printed as U+FFFD" grep -q $'\xef\xbf\xbd' "$tmp/nul_out.txt"
check "9: no NUL byte in the output" test "$(tr -d '\000' < "$tmp/nul_out.txt" | wc -c)" -eq "$(wc -c < "$tmp/nul_out.txt")"
check "9: a NUL byte is warned about" grep -q "nul.txt:1:" "$tmp/nul_err.txt"
printf '\xef\xbb\xbfthe dog barks\n' > "$tmp/bom.txt"
for form in "--tokenized" "--sentence-per-line" ""; do
  "$cky" parse -g "$data/toy" --no-progress $form -i "$tmp/bom.txt" > "$tmp/bom_out.txt" 2>/dev/null
  check "9: a BOM is stripped ($form)" grep -q "(DT the)" "$tmp/bom_out.txt"
done
"$cky" tokenize -i "$tmp/bom.txt" > "$tmp/bom_tok.txt" 2>/dev/null
check "9: cky tokenize strips a BOM" test "$(cat "$tmp/bom_tok.txt")" = "the dog barks"

# 10. Failed writes leave nothing behind; absurd option values are named.
if ! $sanitized; then
  mkdir -p "$tmp/out10"
  (ulimit -f 1; trap '' XFSZ; "$cky" convert "$data/toy" -o "$tmp/out10/toy.ckybin" 2> "$tmp/err10.txt")
  check "10: a failed convert fails" test $? -eq 1
  check "10: a failed convert leaves no temporary file" test -z "$(ls -A "$tmp/out10")"
  rm -rf "$tmp/cache10"
  (export XDG_CACHE_HOME=$tmp/cache10; ulimit -f 1; trap '' XFSZ
   "$cky" parse $toy < "$tmp/two.txt" > /dev/null 2> "$tmp/err10_cache.txt")
  # Before, the cut-off file was renamed into place (and announced as written).
  check "10: a failed cache write leaves nothing in the cache" test -z "$(ls -A "$tmp/cache10/cky")"
  check "10: a failed cache write is warned about" grep -q "cache not written" "$tmp/err10_cache.txt"
fi
"$cky" parse $toy --batch-size 2147483648 < /dev/null > /dev/null 2> "$tmp/batch_err.txt"
check "10: --batch-size 2147483648 is a usage error" test $? -eq 2
check "10: --batch-size 2147483648 names the limit" grep -q "2147483647" "$tmp/batch_err.txt"
"$cky" parse $toy --min-rule-prob nan < /dev/null > /dev/null 2>&1
check "10: --min-rule-prob nan is a usage error" test $? -eq 2
"$cky" parse --help > "$tmp/help.txt"
check "10: --help says what --kbest costs" grep -A3 -- "--kbest" "$tmp/help.txt" | grep -qi "memory"

# Messages about files say why (from issue 37): an output that cannot be opened names the reason.
"$cky" parse $toy -i "$tmp/two.txt" -o "$tmp/no/such/dir/out.txt" 2> "$tmp/open_err.txt"
check "cannot open for writing: the reason" grep -q "No such file or directory" "$tmp/open_err.txt"

echo "$passed passed, $failed failed"
test "$failed" -eq 0
