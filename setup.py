"""Builds kvplan's Python module for pyproject.toml (setuptools, with Debian's pybind11).

The extension is CMake's kvplan_python target (python/CMakeLists.txt) by other means: the same
sources, the library's headers, C++20, fmt linked; the bundled configs are copied into the
package (kvplan/configs), where kvplan/__init__.py looks first after $KVPLAN_CONFIG_DIR.
"""

import os
import pathlib
import re
import shutil

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent


def version():
    text = (ROOT / "include" / "kvplan" / "version.hpp").read_text()
    parts = [re.search(rf"#define KVPLAN_VERSION_{p} (\d+)", text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class build_py_with_configs(build_py):
    """The package's Python files, and the configs it reads bundled ids from."""

    def run(self):
        super().run()
        target = pathlib.Path(self.build_lib) / "kvplan" / "configs"
        if target.exists():
            shutil.rmtree(target)
        for sub in ("models", "gpus", "prices"):
            shutil.copytree(ROOT / "configs" / sub, target / sub)


# Compile the sources in parallel: $KVPLAN_BUILD_JOBS jobs, else one per core.
ParallelCompile("KVPLAN_BUILD_JOBS").install()

sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "python" / "src").glob("*.cpp"))
module = Pybind11Extension(
    "kvplan._kvplan",
    sources,
    include_dirs=["include"],
    libraries=["fmt"],
    cxx_std=20,
    # The source tree's configs, the last place the package looks (an editable build).
    define_macros=[("KVPLAN_CONFIG_DIR", '"' + str(ROOT / "configs") + '"'), ("NDEBUG", None)],
    # -O2, as CMake builds the module; $KVPLAN_OPT_LEVEL replaces it (the wheel test builds at -O0:
    # it tests the packaging, and the CMake build compiles the same sources at -O2).
    extra_compile_args=[os.environ.get("KVPLAN_OPT_LEVEL", "-O2")],
)

setup(version=version(), ext_modules=[module],
      cmdclass={"build_ext": build_ext, "build_py": build_py_with_configs},
      # Beside CMake's build folders, not in one of them.
      options={"build": {"build_base": "build-setuptools"}})
