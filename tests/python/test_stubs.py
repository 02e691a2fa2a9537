"""kvplan/__init__.pyi states the package as the module defines it: every public name, every class's
attributes and methods, every function's and method's parameters, in order, none more."""

import ast
import inspect

import kvplan
from conftest import SOURCE_DIR

STUB = ast.parse((SOURCE_DIR / "python" / "kvplan" / "__init__.pyi").read_text())


def stubbed():
    """{name: ast node} of the stub's top-level classes and functions."""
    return {n.name: n for n in STUB.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}


def parameters(fn):
    """Parameter names of a stubbed function, as inspect.signature lists them (self left out)."""
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    return [n for n in names if n != "self"]


def test_the_stub_names_every_public_name_and_nothing_else():
    names = set(stubbed()) | {t.id for n in STUB.body if isinstance(n, ast.Assign)
                              for t in n.targets}
    assert set(kvplan.__all__) <= names
    # Besides the public names, the stub holds only its type aliases.
    assert names - set(kvplan.__all__) == {"Tokens", "ModelLike", "GpuLike"}


def test_each_class_has_the_stubs_members():
    for name, node in stubbed().items():
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(kvplan, name)
        if issubclass(cls, Exception):
            continue
        members = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
        public = {k for k in vars(cls) if not k.startswith("_")}
        assert set(members) - {"__init__", "__bool__", "__repr__"} == public, name
        for k, f in members.items():
            if any(isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list):
                assert isinstance(vars(cls)[k], property), (name, k)
                continue
            runtime = getattr(cls, k)
            try:
                sig = inspect.signature(runtime)
            except ValueError:
                continue  # no text signature (a default __init__): nothing to compare
            expected = [p for p in sig.parameters if p != "self"]
            assert parameters(f) == expected, (name, k)


def test_each_function_takes_the_stubs_parameters():
    for name, node in stubbed().items():
        if isinstance(node, ast.FunctionDef) and name in kvplan.__all__:
            expected = list(inspect.signature(getattr(kvplan, name)).parameters)
            assert parameters(node) == expected, name
