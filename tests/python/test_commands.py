"""kvplan.size(), kvplan.fit() and their siblings: the command line's JSON, to the byte, and its
errors as exceptions carrying its message."""

import inspect
import json
import pathlib

import pytest

import kvplan
from conftest import BUNDLED_MODELS, SOURCE_DIR, cli, cli_json


def same_as_cli(command, args, kwargs):
    """kvplan.<command>(**kwargs) answers what `kvplan <command> args` prints: the same JSON, or
    the same failure with the same message (its flag named as the keyword)."""
    code, out, err = cli(command, *args, "--format", "json", check=False)
    function = getattr(kvplan, command)
    if code in (0, 1):
        assert function(**kwargs)._asdict() == json.loads(out)
        return
    with pytest.raises(kvplan.Error) as e:
        function(**kwargs)
    assert e.value.exit_code == code
    line = err.strip().split(": ", 2)[2]  # "kvplan: invalid input: <message>"
    flag, sep, rest = line.partition(": ")
    if flag.startswith("--"):
        line = flag[2:].replace("-", "_") + sep + rest
    assert e.value.message == line


@pytest.mark.parametrize("model", BUNDLED_MODELS)
def test_size_is_the_cli_json_on_every_bundled_model(model):
    # The whole JSON, every figure and table row, equal to what the binary prints.
    for args, kwargs in [
        (["--context", "8192"], {"context": 8192}),
        (["--context", "32k", "--concurrency", "16", "--kv-dtype", "fp8", "--pp", "2"],
         {"context": "32k", "concurrency": 16, "kv_dtype": "fp8", "pp": 2}),
    ]:
        same_as_cli("size", ["--model", model, *args], {"model": model, **kwargs})


@pytest.mark.parametrize("model", BUNDLED_MODELS)
def test_fit_is_the_cli_json_on_every_bundled_model(model):
    for args, kwargs in [
        (["--gpu", "h100-sxm", "--context", "8192", "--concurrency", "16"],
         {"gpu": "h100-sxm", "context": 8192, "concurrency": 16}),
        (["--gpu", "h200-sxm", "--tp", "2", "--gpus", "4", "--context", "32k", "--concurrency",
          "64", "--engine", "sglang"],
         {"gpu": "h200-sxm", "tp": 2, "gpus": 4, "context": "32k", "concurrency": 64,
          "engine": "sglang"}),
    ]:
        same_as_cli("fit", ["--model", model, *args], {"model": model, **kwargs})


def test_roofline_plan_and_compare_are_the_cli_json():
    assert kvplan.roofline(model="llama-3-70b", gpu="h100-sxm", tp=4, batch=[1, 8, 32],
                           context=["1k", "8k"])._asdict() == cli_json(
        "roofline", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4", "--batch",
        "1,8,32", "--context", "1k,8k")
    assert kvplan.plan(model="llama-3-70b", gpu=["h100-sxm", "h200-sxm"], context="8k",
                       concurrency=64)._asdict() == cli_json(
        "plan", "--model", "llama-3-70b", "--gpu", "h100-sxm,h200-sxm", "--context", "8k",
        "--concurrency", "64")
    assert kvplan.compare(model=["llama-3-8b", "qwen3-8b", "gemma-3-27b"], gpu="l40s",
                          context="4k")._asdict() == cli_json(
        "compare", "--model", "llama-3-8b,qwen3-8b,gemma-3-27b", "--gpu", "l40s", "--context",
        "4k")


def test_the_answer_reads_as_attributes_and_prints_readably():
    r = kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k", concurrency=48)
    # Nested objects are Results, tables lists of them; keys also index.
    assert r.inputs.engine == "vllm" and r["inputs"]["tp"] == 4
    assert "max_concurrency" in r and "no_such_key" not in r
    assert r._fields[:3] == ("command", "kvplan_version", "verdict")
    size = kvplan.size(model="llama-3-70b")
    assert isinstance(size.layers, list) and size.layers[0].kind == "full_attention"
    # One line per key at the top level, nested objects on theirs.
    text = repr(r)
    assert text.startswith("Result(\n    command='fit',\n")
    assert "    inputs=Result(model='llama-3-70b', gpu='h100-sxm'," in text
    # A mistyped key names the nearest; the answer is read-only.
    with pytest.raises(AttributeError, match="did you mean 'max_concurrency'"):
        r.max_concurency
    with pytest.raises(AttributeError):
        r.fits = False
    assert r == kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k",
                           concurrency=48)


def test_keywords_are_the_flags():
    # A switch is True; a list is a comma list; a path, a Model or a Gpu stands for its file or id.
    explained = kvplan.fit(model="llama-3-8b", gpu="h100-sxm", explain=True)
    assert "explain" in explained and "explain" not in kvplan.fit(model="llama-3-8b",
                                                                  gpu="h100-sxm")
    config = SOURCE_DIR / "configs" / "models" / "qwen3-8b.json"
    by_path = kvplan.size(model=pathlib.Path(config))
    assert by_path._asdict() == cli_json("size", "--model", str(config))
    assert kvplan.fit(model=kvplan.Model("llama-3-8b"), gpu=kvplan.Gpu("h100")) == kvplan.fit(
        model="llama-3-8b", gpu="h100-sxm")
    # roofline's --batch is also --concurrency.
    assert kvplan.roofline(model="llama-3-8b", gpu="h100", concurrency=8).points[0].batch == 8
    # A value that starts with '-' stays a value: --context=-5, refused as the flag refuses it.
    with pytest.raises(kvplan.UsageError, match="^context: expected"):
        kvplan.fit(model="llama-3-8b", gpu="h100", context="-5")


def test_signatures_and_help_explain_the_flags():
    sig = inspect.signature(kvplan.fit)
    assert sig.parameters["model"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["allow_long_context"].default is False
    assert sig.parameters["context"].default is None
    assert "format" not in sig.parameters
    doc = kvplan.fit.__doc__
    assert doc.startswith("Does a workload fit a replica?")
    assert "  concurrency: Sequences held at once, over every replica of --gpus" in doc
    # Positional arguments stay positional: kvplan diff OLD NEW.
    assert list(inspect.signature(kvplan.diff).parameters)[:2] == ["old", "new"]
    assert kvplan.list_bundled("gpus").gpus[0].id == cli_json("list", "gpus")["gpus"][0]["id"]


def test_check_returns_a_failed_requirement_as_an_answer(tmp_path):
    policy = SOURCE_DIR / "examples" / "ci" / "policy.json"
    code, out, _ = cli("check", "--policy", str(policy), "--format", "json")
    r = kvplan.check(policy=policy)
    assert r._asdict() == json.loads(out)
    assert r.passed is (code == 0)
    # A policy whose requirement cannot hold: exit 1 on the command line, passed False here.
    strict = json.loads(policy.read_text())
    strict["requirements"] = [{"name": "a million sequences", "kind": "min_concurrency",
                               "sequences": 1000000, "context_tokens": 8000}]
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(strict))
    assert cli("check", "--policy", str(path))[0] == 1
    failed = kvplan.check(policy=path)
    # The requirement is judged on each replica the example policy lists (the H100 and the H200).
    assert failed.passed is False and failed.failed_count == len(strict["replicas"]) == 2


def test_usage_errors_raise_with_the_cli_message():
    code, _, err = cli("fit", "--model", "llama-3-8b", "--gpu", "h100", "--block-size", "7",
                       check=False)
    assert code == 2
    with pytest.raises(kvplan.UsageError) as e:
        kvplan.fit(model="llama-3-8b", gpu="h100", block_size=7)
    # The CLI's line without its "kvplan: error: " and with the keyword for the flag.
    assert err.startswith("kvplan: error: --block-size: ")
    assert e.value.message == "block_size: " + err.strip()[len("kvplan: error: --block-size: "):]
    assert e.value.exit_code == 2 and isinstance(e.value, ValueError)


def test_invalid_input_raises_with_the_cli_message():
    code, _, err = cli("fit", "--model", "llama-3-7b", "--gpu", "h100", check=False)
    assert code == 3
    with pytest.raises(kvplan.InvalidInputError) as e:
        kvplan.fit(model="llama-3-7b", gpu="h100")
    # The CLI's line without its "kvplan: invalid input: " and with the keyword for the flag.
    assert err.startswith("kvplan: invalid input: --model: model: expected a bundled model id")
    assert str(e.value) == "model: " + err.strip()[len("kvplan: invalid input: --model: "):]
    assert "; did you mean '" in str(e.value)
    assert e.value.exit_code == 3
    with pytest.raises(kvplan.InvalidInputError, match="no such file|cannot be read|not found"):
        kvplan.size(model="/nonexistent/config.json")


def test_python_mistakes_raise_type_errors():
    with pytest.raises(TypeError, match="unexpected keyword argument 'conccurency'; "
                                        "did you mean 'concurrency'"):
        kvplan.fit(model="llama-3-8b", gpu="h100", conccurency=4)
    with pytest.raises(TypeError, match="format"):
        kvplan.fit(model="llama-3-8b", gpu="h100", format="text")
    with pytest.raises(TypeError, match="tp: expected a value, found a bool"):
        kvplan.fit(model="llama-3-8b", gpu="h100", tp=True)
    with pytest.raises(TypeError, match="explain: expected True or False"):
        kvplan.fit(model="llama-3-8b", gpu="h100", explain="yes")
    with pytest.raises(TypeError, match="context: expected a number"):
        kvplan.fit(model="llama-3-8b", gpu="h100", context={"tokens": 8})
    with pytest.raises(TypeError, match="inline"):
        kvplan.size(model=kvplan.Model.from_fields(num_hidden_layers=2, hidden_size=64,
                                                   num_attention_heads=4, vocab_size=100,
                                                   intermediate_size=128))
