#!/bin/sh
# pyproject.toml builds the module offline with the system's tools: the files an sdist holds are
# copied to a fresh folder, pip builds a wheel from them without an index or an isolated
# environment (the build back end and pybind11 are Debian's), and the wheel, unpacked alone on
# PYTHONPATH, answers the headline fit from its own bundled configs.
#   usage: wheel_build.sh PYTHON SOURCE_DIR WORK_DIR
set -eu
py=$1
src=$2
work=$3
rm -rf "$work"
mkdir -p "$work/src/docs" "$work/site"
cp -r "$src/pyproject.toml" "$src/setup.py" "$src/LICENSE" "$src/include" "$src/python" \
    "$src/configs" "$work/src/"
cp "$src/docs/python.md" "$work/src/docs/"
# At -O0 (setup.py's $KVPLAN_OPT_LEVEL): what is tested is the packaging, and the module's sources
# are compiled at -O2 by the CMake build beside this test (at -O2 this build takes 1.6 x as long).
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 KVPLAN_BUILD_JOBS=${KVPLAN_BUILD_JOBS:-2} \
    KVPLAN_OPT_LEVEL=${KVPLAN_OPT_LEVEL:--O0} \
    "$py" -m pip wheel --no-build-isolation --no-deps --wheel-dir "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/kvplan-*.whl)
"$py" -m zipfile -e "$wheel" "$work/site"
cd "$work"
env -u KVPLAN_CONFIG_DIR PYTHONPATH="$work/site" PYTHONDONTWRITEBYTECODE=1 "$py" -c '
import pathlib, kvplan
package = pathlib.Path(kvplan.__file__).parent
assert (package / "py.typed").is_file() and (package / "__init__.pyi").is_file()
answer = kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k", concurrency=48)
print(kvplan.__version__, kvplan.config_dir() == package / "configs", answer.max_concurrency)'
