#!/bin/sh
# The installed library works for another project: installs the `library` component of BUILD into
# a temporary prefix, configures tests/consumer/ against it (find_package(cky)), builds it with
# the same compiler and runs it. CTest's consumer_test checks its output.
# Usage: consumer_test.sh CMAKE BUILD_DIR SOURCE_DIR CXX_COMPILER
set -eu
cmake=$1 build=$2 source=$3 cxx=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work/prefix" --component library >/dev/null
"$cmake" -S "$source/tests/consumer" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/build/cky_consumer"
