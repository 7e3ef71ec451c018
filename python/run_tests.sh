#!/bin/sh
# CTest's python_tests (python/CMakeLists.txt): the pytest suite, run by PYTHON on the package
# built into the build folder (PYTHONPATH). Exit 77, which CTest reports as skipped, with the
# reason when the package was not built (SKIP_REASON non-empty) or pytest is missing.
# Usage: run_tests.sh PYTHON SKIP_REASON   (from the source root)
python=$1
skip_reason=$2
if [ -n "$skip_reason" ]; then
  echo "python tests skipped: the package was not built: $skip_reason"
  exit 77
fi
if ! "$python" -c "import pytest" 2>/dev/null; then
  echo "python tests skipped: pytest is missing for $python (Debian: python3-pytest)"
  exit 77
fi
exec "$python" -m pytest -q -p no:cacheprovider python/tests
