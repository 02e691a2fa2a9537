"""One function per kvplan subcommand, its flags as keyword arguments.

Each function runs the command line's own code in-process with --format json and returns the
JSON as a kvplan.Result, so its figures are the CLI's to the byte. The signatures and
docstrings are built from the command line's own flags (their names and help), so a flag the
command line gains is a keyword here at once.
"""

import difflib
import inspect
import json
import os

from . import _kvplan
from ._errors import InvalidInputError, UsageError
from ._result import Result

# Python names of the subcommands; `list` keeps clear of the builtin.
_NAMES = {"list": "list_bundled"}

# Flags the functions set themselves: the answer is always the JSON.
_OWN = {"format"}

# What each main subcommand is for in a serving stack, and an example whose output a test checks.
_EXAMPLES = {
    "size": ('kvplan.size(model="llama-3-70b", context=8192).kv_bytes_per_sequence', "2684354560"),
    "fit": ('kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k",\n'
            '...            concurrency=48).max_concurrency', "62"),
    "roofline": ('kvplan.roofline(model="llama-3-70b", gpu="h100-sxm", tp=4, batch=8,\n'
                 '...                 context="8k").bound', "'memory'"),
    "plan": ('kvplan.plan(model="llama-3-70b", gpu=["h100-sxm", "h200-sxm"], context="8k",\n'
             '...             concurrency=64).found', "True"),
    "compare": ('[r.model for r in kvplan.compare(model=["llama-3-8b", "qwen3-8b"]).rows]',
                "['llama-3-8b', 'qwen3-8b']"),
}


def _value(v, name):
    """A keyword argument as its flag reads it."""
    if isinstance(v, bool):
        raise TypeError(f"{name}: expected a value, found a bool (only switches take True)")
    if isinstance(v, (int, float, str)):
        return str(v) if not isinstance(v, float) else repr(v)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    arg = getattr(v, "_cli_source", None)
    if arg is not None:
        return arg()
    if isinstance(v, (list, tuple)):
        if not v:
            raise UsageError(f"{name}: expected at least one value, found an empty list")
        return ",".join(_value(x, name) for x in v)
    raise TypeError(f"{name}: expected a number, a string, a path or a list of them, "
                    f"found {type(v).__name__}")


def _message(err):
    """kvplan's message from the command line's one line on stderr."""
    line = err.decode("utf-8", "replace").strip()
    for prefix in ("kvplan: error: ", "kvplan: invalid input: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
            break
    # Flags named as the keywords that set them.
    if line.startswith("--"):
        flag, sep, rest = line[2:].partition(":")
        if sep and " " not in flag:
            line = flag.replace("-", "_") + sep + rest
    for see in (" (see kvplan --help)",):
        line = line.replace(see, "")
    return line


def _make(info):
    command = info["name"]
    pyname = _NAMES.get(command, command)
    params = []
    flag_of = {}  # keyword -> (flag, takes_value, positional)
    lines = []
    for f in info["flags"]:
        if f["names"][0] in _OWN:
            continue
        for i, n in enumerate(f["names"]):
            kw = n.lower().replace("-", "_")
            flag_of[kw] = (f["name"], f["takes_value"], f["positional"])
            if f["positional"]:
                kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
                default = inspect.Parameter.empty if f["required"] else None
            else:
                kind = inspect.Parameter.KEYWORD_ONLY
                default = (inspect.Parameter.empty if f["required"]
                           else (False if not f["takes_value"] else None))
            params.append(inspect.Parameter(kw, kind, default=default))
            what = f["description"] if i == 0 else f"the same as {f['names'][0].replace('-', '_')}"
            extra = []
            if f["required"]:
                extra.append("required")
            if f["default"] and f["takes_value"]:
                extra.append(f"default {f['default']}")
            if not f["takes_value"]:
                extra.append("True or False")
            lines.append(f"  {kw}: {what}" + (f" ({', '.join(extra)})" if extra else ""))
    # Positional arguments first, as the signature requires.
    params.sort(key=lambda p: p.kind)
    signature = inspect.Signature(params)

    def run(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            unknown = [k for k in kwargs if k not in flag_of]
            if unknown:
                near = difflib.get_close_matches(unknown[0], flag_of, n=1)
                hint = f"; did you mean '{near[0]}'?" if near else ""
                raise TypeError(f"{pyname}() got an unexpected keyword argument "
                                f"'{unknown[0]}'{hint}") from None
            raise TypeError(f"{pyname}(): {e}") from None
        argv = [command]
        positional = []
        for kw, v in bound.arguments.items():
            flag, takes_value, is_positional = flag_of[kw]
            if v is None:
                continue
            if is_positional:
                positional.append(_value(v, kw))
            elif not takes_value:
                if not isinstance(v, bool):
                    raise TypeError(f"{kw}: expected True or False, found {type(v).__name__}")
                if v:
                    argv.append(flag)
            else:
                # --flag=value: a value that starts with "-" stays a value.
                argv.append(f"{flag}={_value(v, kw)}")
        argv += ["--format", "json"]
        if positional:
            argv += ["--", *positional]
        code, out, err = _kvplan.run(argv)
        if code == 2:
            raise UsageError(_message(err))
        if code not in (0, 1):
            raise InvalidInputError(_message(err))
        return Result(json.loads(out))

    run.__name__ = run.__qualname__ = pyname
    run.__module__ = "kvplan"
    run.__signature__ = signature
    doc = [info["description"].rstrip(".") + ".", "",
           f"Runs `kvplan {command}` in-process with --format json and returns its JSON as a",
           "kvplan.Result whose attributes are the JSON's keys (docs/cli.md, \"JSON output\"): the",
           "command line's figures, to the byte.", "",
           "Each keyword is the flag of the same name (- as _), read as the flag reads it:",
           "numbers and strings as written (context=\"8k\" is 8,000 tokens), True for a",
           "switch, a list for a comma list, a kvplan.Model or kvplan.Gpu for the id or path",
           "it came from.", "", "Keywords:", *lines, "",
           "Raises kvplan.UsageError (the command line's exit code 2) or",
           "kvplan.InvalidInputError (exit code 3) carrying kvplan's message."]
    if command == "check":
        doc += ["", "A requirement that fails is an answer, not an error: `passed` is False."]
    if command in _EXAMPLES:
        call, output = _EXAMPLES[command]
        doc += ["", "Example:", "", f">>> {call}", output]
    run.__doc__ = "\n".join(doc)
    return pyname, run


def commands():
    """Every subcommand as a function, by its Python name."""
    return dict(_make(info) for info in _kvplan.describe())
