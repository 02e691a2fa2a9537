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


# The unity groups of CMake's kvplan_python target (python/CMakeLists.txt, which says why these):
# the files of a group are compiled as one, parsing pybind11's and the library's headers once;
# the other sources compile alone.
UNITY_GROUPS = {
    "python_a": ("deployment.cpp", "convert.cpp", "module.cpp", "calibrate.cpp", "keywords.cpp"),
    "python_b": ("roofline.cpp", "plan.cpp", "trace.cpp", "check.cpp"),
}


class build_ext_unity(build_ext):
    """build_ext over the unity groups: each group's sources become one file in build_temp that
    includes them, so the sdist and the source tree keep the sources as they are."""

    def build_extensions(self):
        unity_dir = pathlib.Path(self.build_temp).resolve() / "unity"
        unity_dir.mkdir(parents=True, exist_ok=True)
        for ext in self.extensions:
            grouped = {name for group in UNITY_GROUPS.values() for name in group}
            sources = [s for s in ext.sources if pathlib.Path(s).name not in grouped]
            for group, names in UNITY_GROUPS.items():
                unity = unity_dir / f"{group}.cpp"
                text = "".join(f'#include "{(ROOT / "python" / "src" / n).as_posix()}"\n'
                               for n in names)
                if not unity.exists() or unity.read_text() != text:
                    unity.write_text(text)
                sources.append(str(unity))
            ext.sources = sources
        super().build_extensions()


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
      cmdclass={"build_ext": build_ext_unity, "build_py": build_py_with_configs},
      # Beside CMake's build folders, not in one of them.
      options={"build": {"build_base": "build-setuptools"}})
