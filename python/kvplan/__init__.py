"""kvplan: exact KV-cache sizing and serving capacity planning for LLM inference.

The library's own C++, bound directly: typed arguments go straight into its types, and a bundled
model or GPU named by its id is read once and kept.

* Functions, each one library call: fit (does a workload fit a replica?), size (KV bytes per
  token and per sequence), compare (configurations side by side), roofline (the decode bound),
  plan (the replicas that hold a demand), disagg (prefill and decode pools), fleet (the replicas
  an arrival rate needs), trace (what a request trace asks of the cache), calibrate (a replica
  fitted to vLLM's start-up log and benchmarks), check (a model judged against a policy file)
  and diff (two revisions of a config side by side).

    >>> kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k",
    ...            concurrency=48).max_concurrency
    61

* Classes for serving code: Model and Gpu, Deployment (prepared once; evaluate() answers a
  demand in microseconds with the figures fit gives), ReplicaAnswer, Roofline (decode and
  prefill bounds), and BlockPool (admit, grow and release requests as vLLM's scheduler does).

    >>> d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    >>> d.evaluate(context=8000, concurrency=48).max_concurrency
    61

Errors raise kvplan.UsageError (an argument kvplan cannot take) or kvplan.InvalidInputError and
its subclasses (the library's errors), carrying kvplan's message. The bundled model and GPU
configs are read from config_dir().
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
    BenchCalibration,
    BenchFigures,
    BlockGroup,
    BlockPool,
    Calibration,
    CheckAnswer,
    CheckOutcome,
    CompareRow,
    ConfigChange,
    DecodeBound,
    DecodePoint,
    Deployment,
    DiffAnswer,
    DisaggPlan,
    DisaggPool,
    FleetAnswer,
    Gpu,
    Growth,
    LatencyEstimate,
    LogCalibration,
    Model,
    Percentiles,
    PlanAnswer,
    PlanCandidate,
    PrefillBound,
    Prefix,
    ReplicaAnswer,
    Request,
    RequestNeed,
    Roofline,
    Size,
    TraceAnswer,
    TraceConcurrency,
    TraceKv,
    TraceReplica,
    TraceWaste,
    calibrate,
    check,
    compare,
    diff,
    disagg,
    fit,
    fleet,
    plan,
    roofline,
    size,
    trace,
)

__version__ = _kvplan.version


def _find_config_dir():
    # As the command line finds them: $KVPLAN_CONFIG_DIR, else the package's own (a copy beside
    # the module, as a wheel would hold them), else <prefix>/share/kvplan of an installed tree
    # (this package sits a few folders under the prefix), else the source tree's.
    env = _os.environ.get("KVPLAN_CONFIG_DIR")
    if env:
        return _pathlib.Path(env)
    packaged = _pathlib.Path(__file__).resolve().parent / "configs"
    if (packaged / "models").is_dir():
        return packaged
    for parent in list(_pathlib.Path(__file__).resolve().parents)[1:6]:
        installed = parent / "share" / "kvplan"
        if (installed / "models").is_dir():
            return installed
    return _pathlib.Path(_kvplan.source_config_dir)


_kvplan.set_config_dir(str(_find_config_dir()))


def config_dir():
    """The folder of bundled configs (models/, gpus/) that ids are read from."""
    return _pathlib.Path(_kvplan.get_config_dir())


def models():
    """The ids of the bundled models and built-in presets (kvplan list models)."""
    return Model.bundled()


def gpus():
    """The ids of the bundled GPUs (kvplan list gpus)."""
    return Gpu.bundled()


__all__ = [
    "Admission", "BenchCalibration", "BenchFigures", "BlockGroup", "BlockPool", "Calibration",
    "CheckAnswer", "CheckOutcome", "CompareRow", "ConfigChange", "DecodeBound", "DecodePoint",
    "Deployment", "DiffAnswer", "DisaggPlan", "DisaggPool", "Error", "FleetAnswer", "Gpu",
    "Growth", "InvalidInputError", "InvalidLayoutError", "InvalidModelError", "LatencyEstimate",
    "LogCalibration", "Model", "Percentiles", "PlanAnswer", "PlanCandidate", "PrefillBound",
    "Prefix", "ReplicaAnswer", "Request", "RequestNeed", "Roofline", "Size",
    "SizeOverflowError", "TraceAnswer", "TraceConcurrency", "TraceKv", "TraceReplica",
    "TraceWaste", "UsageError", "calibrate", "check", "compare", "config_dir", "diff", "disagg",
    "fit", "fleet", "gpus", "models", "plan", "roofline", "size", "trace"
]
