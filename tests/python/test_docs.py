"""The README's Python example and the docstrings' examples run, and print what they say."""

import contextlib
import doctest
import io
import re

import kvplan
from conftest import SOURCE_DIR


def readme_python_section():
    text = (SOURCE_DIR / "README.md").read_text()
    start = text.index("\n## Python\n")
    return text[start:text.index("\n## ", start + 1)]


def test_the_readme_example_prints_what_the_readme_shows():
    section = readme_python_section()
    code = re.findall(r"```python\n(.*?)```", section, re.S)
    shown = re.findall(r"```text\n(.*?)```", section, re.S)
    assert len(code) == 1 and len(shown) == 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code[0], "README.md (## Python)", "exec"), {})
    assert out.getvalue() == shown[0]


def test_the_docstring_examples_hold():
    # The package's, Result's, and each subcommand's example.
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(kvplan, "kvplan", globs={"kvplan": kvplan})
    tests += finder.find(kvplan.Result, "kvplan.Result", globs={"kvplan": kvplan})
    for name in ("size", "fit", "roofline", "plan", "compare"):
        tests += finder.find(getattr(kvplan, name), f"kvplan.{name}", module=False,
                             globs={"kvplan": kvplan})
    examples = 0
    for t in tests:
        examples += len(t.examples)
        runner.run(t)
    assert examples >= 8
    assert runner.failures == 0


def test_help_explains_every_class_and_function():
    # Every public name has a docstring that says more than its name.
    for name in kvplan.__all__:
        doc = getattr(kvplan, name).__doc__
        assert doc and len(doc.split()) >= 5, name
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        help(kvplan.Deployment)
    assert "evaluate(" in text.getvalue() and "kv_memory" in text.getvalue()
