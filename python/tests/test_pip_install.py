"""`pip install ./python` into a virtual environment, offline (python/README.md, "Installing").

It builds the whole library a second time (pip runs the project's CMake build), so it runs only
when asked: CKY_TEST_PIP_INSTALL=1, with CKY_BUILD_DIR to keep that build between runs and
CKY_CMAKE_ARGS (e.g. -DCKY_ENABLE_CUDA=OFF) passed on to it.
"""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(os.environ.get("CKY_TEST_PIP_INSTALL") != "1",
                                reason="builds the library again: set CKY_TEST_PIP_INSTALL=1")


def test_pip_installs_the_package_into_a_virtual_environment(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--no-index", "--no-build-isolation",
                    str(ROOT / "python")], check=True)
    code = ("import cky, sys; p = cky.Parser(backend='cpu', strings=True);"
            "print(cky.__file__); print(p.parse_one('The cat sat .'.split()))")
    done = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          check=True)
    where, tree = done.stdout.splitlines()
    assert where.startswith(str(venv))  # the installed copy, not the source tree
    assert tree == "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)) )"
