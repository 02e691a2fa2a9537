"""What the Python tests share: the built command line to compare with, and the bundled ids.

tests/python.cmake runs them with the package of the build tree on PYTHONPATH, the CLI's path in
KVPLAN_EXE and the source tree in KVPLAN_SOURCE_DIR.
"""

import json
import os
import pathlib
import subprocess

import pytest

SOURCE_DIR = pathlib.Path(os.environ["KVPLAN_SOURCE_DIR"])
CLI = os.environ["KVPLAN_EXE"]

# Every bundled model, as configs/models/ holds them.
BUNDLED_MODELS = sorted(p.stem for p in (SOURCE_DIR / "configs" / "models").glob("*.json"))


def cli(*args, check=True):
    """Runs the built kvplan with `args`: (exit code, stdout, stderr)."""
    p = subprocess.run([CLI, *args], capture_output=True, text=True,
                       env={**os.environ, "KVPLAN_CONFIG_DIR": str(SOURCE_DIR / "configs")})
    if check:
        assert p.returncode in (0, 1), p.stderr
    return p.returncode, p.stdout, p.stderr


def cli_json(*args):
    """The JSON the built kvplan prints for `args`."""
    return json.loads(cli(*args, "--format", "json")[1])


@pytest.fixture(autouse=True)
def source_configs(monkeypatch):
    """The package reads the same bundled configs as the CLI it is compared with."""
    import kvplan

    kvplan._kvplan.set_config_dir(str(SOURCE_DIR / "configs"))
    yield
