"""The answer of a kvplan subcommand, its JSON keys as attributes."""

import difflib

__all__ = ["Result"]


def _wrap(value):
    if isinstance(value, dict):
        return Result(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _unwrap(value):
    if isinstance(value, Result):
        return value._asdict()
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


class Result:
    """The JSON a kvplan subcommand prints, read as attributes.

    Each key of the JSON object is an attribute: numbers, strings, booleans and None as they
    are (bytes as ints, seconds as floats), objects as Results, arrays as lists. The keys are
    the command line's (docs/cli.md, "JSON output"), so code and JSON read alike:

        >>> r = kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k",
        ...                concurrency=48)
        >>> r.fits, r.max_concurrency, r.inputs.engine
        (True, 62, 'vllm')

    r["key"] and "key" in r work too; r._fields lists the keys and r._asdict() gives the JSON
    as dicts and lists (the leading underscore keeps them from shadowing a key, as in
    collections.namedtuple).
    """

    __slots__ = ("_data",)

    def __init__(self, data):
        object.__setattr__(self, "_data", {k: _wrap(v) for k, v in data.items()})

    @property
    def _fields(self):
        """The keys, in the order kvplan prints them."""
        return tuple(self._data)

    def _asdict(self):
        """The JSON as plain dicts and lists."""
        return {k: _unwrap(v) for k, v in self._data.items()}

    def __getattr__(self, name):
        try:
            return self._data[name]
        except KeyError:
            near = difflib.get_close_matches(name, self._data, n=1)
            hint = f"; did you mean '{near[0]}'?" if near else ""
            raise AttributeError(f"this kvplan answer has no '{name}'{hint}") from None

    def __setattr__(self, name, value):
        raise AttributeError("a kvplan answer is read-only")

    def __getitem__(self, key):
        return self._data[key]

    def __contains__(self, key):
        return key in self._data

    def __eq__(self, other):
        if not isinstance(other, Result):
            return NotImplemented
        return self._data == other._data

    __hash__ = None

    def __dir__(self):
        return sorted(set(self._data) | {"_fields", "_asdict"})

    def __repr__(self):
        return self._repr(0)

    def _repr(self, depth):
        def value(v, d):
            if isinstance(v, Result):
                return v._repr(d)
            if isinstance(v, list):
                shown = [value(x, d + 1) for x in v[:3]]
                if len(v) > 3:
                    shown.append(f"... {len(v) - 3} more")
                return "[" + ", ".join(shown) + "]"
            return repr(v)

        items = [f"{k}={value(v, depth + 1)}" for k, v in self._data.items()]
        if depth > 0:
            return "Result(" + ", ".join(items) + ")"
        # The top level a line per key, as a person reads an answer.
        return "Result(\n" + "".join(f"    {i},\n" for i in items) + ")"
