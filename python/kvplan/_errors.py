"""kvplan's errors: each carries kvplan's message and the exit code the command line gives it."""

__all__ = [
    "Error",
    "UsageError",
    "InvalidInputError",
    "InvalidModelError",
    "InvalidLayoutError",
    "SizeOverflowError",
]


class Error(Exception):
    """Every error kvplan raises.

    str(error) and error.message are kvplan's message: where (a file, a model, an argument),
    the field, what was expected and what was found. error.exit_code is the exit code the
    command line gives the same failure.
    """

    exit_code = 3

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class UsageError(Error, ValueError):
    """An argument or a combination kvplan cannot take (the command line's exit code 2)."""

    exit_code = 2


class InvalidInputError(Error, ValueError):
    """Input kvplan cannot use: a file that cannot be read, parsed or mapped, an unknown id, an
    engine knob the engine refuses (the command line's exit code 3)."""

    exit_code = 3


class InvalidModelError(InvalidInputError):
    """A model description no real model has: no layers, zero heads, a zero window..."""


class InvalidLayoutError(InvalidInputError):
    """A parallel layout the model cannot take: tp that divides no KV heads, more stages than
    layers, a GPU count that is no multiple of tp x pp."""


class SizeOverflowError(InvalidInputError, OverflowError):
    """A size or count past 2^64 - 1: kvplan never wraps one."""
