# The Python API on the repository's models: targets, loading, explain, compile and run, with
# results compared against the models' reference outputs (PyTorch / ONNX Runtime, not rlx).
import json

import numpy as np
import pytest

from conftest import run_cli
from reference_files import BERT_ONNX, TINY_GPT, read_safetensors


def test_list_targets_gives_the_records_of_the_cli(rlx):
    listed = rlx.list_targets()
    cli = run_cli("--list-targets", "--json")
    assert cli.returncode == 0, cli.stderr
    assert listed == json.loads(cli.stdout)
    cpu = [t for t in listed["targets"] if t["name"] == "cpu"]
    assert cpu and cpu[0]["status"] == "available"
    assert any(i["name"] == "onnx" for i in listed["importers"])


def test_verbose_listing_searches_the_package_prefix(rlx):
    listed = rlx.list_targets(verbose=True)
    cpu = [t for t in listed["targets"] if t["name"] == "cpu"][0]
    # The cpu plugin is found beside librlx_registry (<prefix>/share/rlx/plugins.d).
    assert cpu["manifest"].endswith("share/rlx/plugins.d/cpu.toml")
    assert listed["search_dirs"]


def test_load_reports_inputs_and_outputs_with_symbolic_dims(rlx):
    model = rlx.load(f"{TINY_GPT}/model.rlx")
    assert model.architecture == "ir"
    assert model.graphs == ["main"]
    assert [(i.name, i.dtype, i.shape) for i in model.inputs] == [
        ("ids", "i64", ("S",)), ("positions", "i64", ("S",))]
    assert [(o.name, o.dtype, o.shape) for o in model.outputs] == [("logits", "f32", ("S", 64))]


def test_tiny_gpt_matches_its_reference(rlx):
    inputs = read_safetensors(f"{TINY_GPT}/inputs.safetensors")
    reference = read_safetensors(f"{TINY_GPT}/reference.safetensors")["logits"]
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile(target="cpu")
    out = compiled(ids=inputs["ids"], positions=inputs["positions"])
    assert list(out) == ["logits"]
    logits = out["logits"]
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, reference, rtol=1e-4, atol=1e-4)
    # run() with a list of outputs gives the same values.
    again = compiled.run(inputs, outputs=["logits"])
    np.testing.assert_array_equal(again["logits"], logits)


def test_onnx_bert_matches_onnx_runtime(rlx):
    ref = read_safetensors(f"{BERT_ONNX}/reference.safetensors")
    model = rlx.load(f"{BERT_ONNX}/model.onnx")
    assert {i.name for i in model.inputs} == {"input_ids", "attention_mask", "token_type_ids"}
    out = model.compile("cpu")(input_ids=ref["input_ids"], attention_mask=ref["attention_mask"],
                               token_type_ids=ref["token_type_ids"])
    np.testing.assert_allclose(out["last_hidden_state"], ref["last_hidden_state_ort"],
                               rtol=1e-3, atol=1e-3)


def test_symbolic_dims_follow_the_inputs(rlx):
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    inputs = read_safetensors(f"{TINY_GPT}/inputs.safetensors")
    for n in (2, 6):
        out = compiled(ids=inputs["ids"][:n], positions=inputs["positions"][:n])
        assert out["logits"].shape == (n, 64)


def test_explain_prints_the_report_of_the_cli(rlx):
    model = rlx.load(f"{TINY_GPT}/model.rlx")
    text = model.explain("cpu")
    cli = run_cli("explain", f"{TINY_GPT}/model.rlx", "--target", "cpu")
    assert cli.returncode == 0, cli.stderr
    # The CLI adds a line about how the target executes here.
    assert cli.stdout.startswith(text)
    report = model.explain("cpu", json=True)
    assert report == json.loads(run_cli("explain", f"{TINY_GPT}/model.rlx", "--target", "cpu",
                                        "--json").stdout)


def test_non_contiguous_and_list_inputs_are_laid_out(rlx):
    inputs = read_safetensors(f"{TINY_GPT}/inputs.safetensors")
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    expected = compiled(**inputs)["logits"]
    strided = np.stack([inputs["ids"], inputs["ids"]], axis=1)[:, 0]
    assert not strided.flags.c_contiguous
    out = compiled(ids=strided, positions=inputs["positions"].tolist())
    np.testing.assert_array_equal(out["logits"], expected)


def test_threads_share_a_compiled_model(rlx):
    # The GIL is released while a model runs, so calls from several threads reach the compiled
    # model together; it runs them one at a time and each gets its own results.
    from concurrent.futures import ThreadPoolExecutor
    inputs = read_safetensors(f"{TINY_GPT}/inputs.safetensors")
    reference = read_safetensors(f"{TINY_GPT}/reference.safetensors")["logits"]
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: compiled(**inputs)["logits"], range(16)))
    for logits in results:
        np.testing.assert_allclose(logits, reference, rtol=1e-4, atol=1e-4)
