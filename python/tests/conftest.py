"""Fixtures of the cky package's tests (python/README.md, "Tests").

CTest's python_tests runs them with the package built into the build folder on PYTHONPATH and
CKY_BINARY naming the `cky` command the package is compared with; tests that need the command skip
without it.
"""

import os
import subprocess
from pathlib import Path

import pytest

import cky

ROOT = Path(__file__).resolve().parents[2]  # the source root
EVALB_DATA = ROOT / "tests" / "data" / "evalb"


@pytest.fixture(scope="session")
def cky_binary():
    path = os.environ.get("CKY_BINARY")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("CKY_BINARY does not name the cky command (CTest sets it)")
    return path


@pytest.fixture(scope="session")
def run_cky(cky_binary):
    """Runs `cky ARGS...` with `stdin` as input; returns its standard output."""

    def run(*args, stdin=""):
        done = subprocess.run([cky_binary, *args], input=stdin, capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, f"cky {' '.join(args)} failed: {done.stderr}"
        return done.stdout

    return run


@pytest.fixture(scope="session")
def string_parser():
    """The built-in grammar, max-rule, on the CPU (what `cky parse -b cpu` does), strings out."""
    return cky.Parser(backend="cpu", strings=True)


@pytest.fixture(scope="session")
def tree_parser():
    """The same, nltk.Tree objects out when NLTK is installed."""
    return cky.Parser(backend="cpu")
