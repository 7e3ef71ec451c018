"""Builds the cky package's C++ module, cky._cky, with the project's own CMake build (the target
cky_python, python/CMakeLists.txt) for the interpreter that runs pip, and puts it beside
cky/__init__.py. Metadata is in pyproject.toml; python/README.md says how to install.

Environment: CKY_BUILD_DIR, a CMake build folder to use (default: one under pip's build folder);
CKY_CMAKE_ARGS, more CMake arguments (e.g. -DCKY_ENABLE_CUDA=OFF); JOBS, parallel build jobs.
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent.parent  # the source root: python/ lives in it


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if not (ROOT / "CMakeLists.txt").is_file():
            raise RuntimeError(f"{ROOT} is not a cky source tree: install from a checkout "
                               "(python3 -m pip install --no-build-isolation ./python)")
        build_dir = Path(os.environ.get("CKY_BUILD_DIR") or
                         Path(self.build_temp) / "cmake").resolve()
        env = dict(os.environ)
        nvcc = Path("/usr/local/cuda/bin/nvcc")  # outside PATH on many machines, as scripts/build
        if shutil.which("nvcc") is None and nvcc.exists():
            env["PATH"] = f"{nvcc.parent}{os.pathsep}{env.get('PATH', '')}"
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     f"-DCKY_PYTHON_EXECUTABLE={sys.executable}", "-DCKY_BUILD_TESTS=OFF",
                     "-DCKY_BUILD_BENCH=OFF", *shlex.split(env.get("CKY_CMAKE_ARGS", ""))]
        subprocess.run(configure, check=True, env=env)
        jobs = env.get("JOBS") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "cky_python", "-j", jobs],
                       check=True, env=env)
        built = sorted((build_dir / "python" / "cky").glob("_cky*.so"))
        if not built:
            raise RuntimeError(f"CMake built no cky._cky into {build_dir}/python/cky: is "
                               "pybind11 installed (Debian: pybind11-dev, python3-dev)?")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


setup(packages=["cky"], ext_modules=[Extension("cky._cky", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
