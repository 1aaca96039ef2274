# rlx's errors as Python exceptions: the class of the CLI's error kind, with the message and hint
# it prints and the node it names.
import json

import numpy as np
import pytest

from conftest import run_cli
from reference_files import TINY_GPT


def cli_error(*args):
    r = run_cli(*args, "--json")
    assert r.returncode != 0
    return json.loads(r.stderr.strip().splitlines()[-1])["error"]


def test_missing_model_is_a_user_error_with_the_cli_message(rlx, tmp_path):
    path = str(tmp_path / "absent.onnx")
    with pytest.raises(rlx.UserError) as e:
        rlx.load(path)
    assert str(e.value) == f"model '{path}' does not exist"
    assert e.value.hint.startswith("check the path")
    expected = cli_error("run", path, "--target", "cpu")
    assert (e.value.kind, e.value.message, e.value.hint) == (
        expected["kind"], expected["message"], expected["hint"])


def test_unknown_target_lists_the_available_ones(rlx):
    model = rlx.load(f"{TINY_GPT}/model.rlx")
    with pytest.raises(rlx.Error) as e:
        model.compile(target="no-such-target")
    expected = cli_error("run", f"{TINY_GPT}/model.rlx", "--target", "no-such-target")
    assert e.value.kind == expected["kind"]
    assert e.value.message == expected["message"]
    assert "cpu" in e.value.message


def test_compile_error_names_the_node_and_the_refusals(rlx, tmp_path):
    path = tmp_path / "complex.rlx"
    path.write_text("graph @g(%x: c64[4]) {\n  %y = Erf(%x) : c64[4]\n  return %y\n}\n")
    model = rlx.load(str(path))
    with pytest.raises(rlx.CompileError) as e:
        model.compile("cpu")
    assert e.value.node == "%y"  # as the CLI's --json error names it
    assert "primitive: the cpu code generator has no c64 kernels for erf" in str(e.value)
    assert "split-complex has no complex form of erf" in str(e.value)
    expected = cli_error("explain", str(path), "--target", "cpu")
    assert (e.value.kind, e.value.message, e.value.node) == (
        expected["kind"], expected["message"], expected["node"])
    with pytest.raises(rlx.CompileError):
        model.explain("cpu")


def test_wrong_input_dtype_is_a_user_error(rlx):
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    with pytest.raises(rlx.UserError) as e:
        compiled(ids=np.zeros(4, np.float32), positions=np.arange(4))
    assert "ids" in str(e.value)


def test_unknown_output_name(rlx):
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    with pytest.raises(rlx.UserError, match="no output 'nope'"):
        compiled.run({"ids": np.arange(2), "positions": np.arange(2)}, outputs=["nope"])
