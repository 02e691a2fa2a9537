"""The Python examples of the README and docs/python.md, and the docstrings' examples, run and
print what they say."""

import contextlib
import doctest
import io
import re

import kvplan
from conftest import SOURCE_DIR

# Each example: a ```python block and, right after it, the ```text block of what it prints.
EXAMPLE = re.compile(r"```python\n(.*?)```\s*```text\n(.*?)```", re.S)


def examples(doc):
    return EXAMPLE.findall((SOURCE_DIR / doc).read_text())


def test_the_doc_examples_print_what_the_docs_show():
    for doc in ("README.md", "docs/python.md"):
        found = examples(doc)
        assert len(found) == 1, doc
        for code, shown in found:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, doc, "exec"), {})
            assert out.getvalue() == shown, doc


def test_the_docstring_examples_hold():
    # The package's and each function's example.
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(kvplan, "kvplan", globs={"kvplan": kvplan})
    for name in ("size", "fit", "roofline", "plan"):
        tests += finder.find(getattr(kvplan, name), f"kvplan.{name}", module=False,
                             globs={"kvplan": kvplan})
    examples = 0
    for t in tests:
        examples += len(t.examples)
        runner.run(t)
    assert examples >= 7
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
