"""kvplan: exact KV-cache sizing and serving capacity planning for LLM inference.

Two ways in, both running kvplan's own C++ in this process:

* One function per command line subcommand, its flags as keyword arguments, returning the
  command's JSON as a kvplan.Result: size, fit, roofline, plan, compare, check, diff, trace,
  fleet, calibrate and list_bundled (`kvplan list`).

    >>> kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k",
    ...            concurrency=48).fits
    True

* Classes for serving code, bound directly on the library: Model and Gpu (resolved as --model
  and --gpu are), Deployment (prepared once; evaluate() answers a demand in microseconds with
  the figures fit gives), ReplicaAnswer, Roofline (decode and prefill bounds), and BlockPool
  (admit, grow and release requests as vLLM's scheduler does).

    >>> d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    >>> d.evaluate(context=8000, concurrency=48).max_concurrency
    62

Errors raise kvplan.UsageError or kvplan.InvalidInputError (and its subclasses) carrying
kvplan's message. The bundled model and GPU configs are read from config_dir().
"""

import os as _os
import pathlib as _pathlib

from ._errors import (
    Error,
    InvalidInputError,
    InvalidLayoutError,
    InvalidModelError,
    SizeOverflowError,
    UsageError,
)
from . import _kvplan
from ._kvplan import (
    Admission,
    BlockGroup,
    BlockPool,
    DecodeBound,
    DecodePoint,
    Deployment,
    Gpu,
    Growth,
    Model,
    PrefillBound,
    Prefix,
    ReplicaAnswer,
    Request,
    RequestNeed,
    Roofline,
)
from ._result import Result
from ._commands import commands as _commands

__version__ = _kvplan.version


def _find_config_dir():
    # As the command line finds them: $KVPLAN_CONFIG_DIR, else <prefix>/share/kvplan of an
    # installed tree (this package sits a few folders under the prefix), else the source tree's.
    env = _os.environ.get("KVPLAN_CONFIG_DIR")
    if env:
        return _pathlib.Path(env)
    for parent in list(_pathlib.Path(__file__).resolve().parents)[1:6]:
        installed = parent / "share" / "kvplan"
        if (installed / "models").is_dir():
            return installed
    return _pathlib.Path(_kvplan.source_config_dir)


_kvplan.set_config_dir(str(_find_config_dir()))


def config_dir():
    """The folder of bundled configs (models/, gpus/) that ids are read from."""
    return _pathlib.Path(_kvplan.get_config_dir())


# Model and Gpu objects stand for the id or path they came from in the functions' keywords.
def _model_source(self):
    if self.source.startswith("inline"):
        raise TypeError("an inline kvplan.Model has no id or path the command line can read; "
                        "use kvplan.Deployment")
    return self.id


Model._cli_source = _model_source
Gpu._cli_source = lambda self: self.source if not self.source.startswith("bundled ") else self.id

globals().update(_commands())
del _commands

__all__ = [
    "Admission", "BlockGroup", "BlockPool", "DecodeBound", "DecodePoint", "Deployment", "Error",
    "Gpu", "Growth", "InvalidInputError", "InvalidLayoutError", "InvalidModelError", "Model",
    "PrefillBound", "Prefix", "ReplicaAnswer", "Request", "RequestNeed", "Result", "Roofline",
    "SizeOverflowError", "UsageError", "calibrate", "check", "compare", "config_dir", "diff",
    "fit", "fleet", "list_bundled", "plan", "roofline", "size", "trace",
]
