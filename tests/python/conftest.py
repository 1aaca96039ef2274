# Shared by the Python package's tests: the rlx binary the CLI comparisons run (RLX_BINARY, set
# by CTest) and the package under test.
import os
import subprocess

import pytest

from reference_files import BERT_ONNX, ROOT, TINY_GPT, read_safetensors  # noqa: F401


def run_cli(*args):
    binary = os.environ.get("RLX_BINARY")
    if not binary:
        pytest.skip("RLX_BINARY is not set (CTest sets it)")
    return subprocess.run([binary, *args], capture_output=True, text=True)


@pytest.fixture(scope="session")
def rlx():
    import rlx as module
    return module
