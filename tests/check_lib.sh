# Sourced by the shell tests: a scratch folder $tmp, removed on exit; `check NAME CONDITION...`,
# which runs the condition and counts it passed or failed (naming a failure on stderr); and
# `finish NAME`, which prints the counts and returns nonzero when a check failed.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() {
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name" >&2; fi
}
finish() {
  echo "$1: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
