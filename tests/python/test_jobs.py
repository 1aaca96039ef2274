# rlx.quantize and rlx.train: the CLI's batch jobs from Python, checked against references rlx did
# not compute (the MiniLM fixture's float64 embeddings; ln(10), the cross-entropy of a guess among
# ten classes) and against the CLI's own error messages.
import math
import os

import numpy as np
import pytest

from reference_files import MINILM, read_safetensors


@pytest.fixture(autouse=True)
def needs_binary():
    if not os.environ.get("RLX_BINARY"):
        pytest.skip("RLX_BINARY is not set (CTest sets it; a wheel carries its own rlx)")


def test_int8_dynamic_quantization_keeps_the_embeddings(rlx, tmp_path):
    out = tmp_path / "q8"
    record = rlx.quantize(MINILM, out, scheme="int8-dynamic")
    assert record["scheme"] == "int8-dynamic" and record["weights_quantized"] > 0
    assert record["bytes_after"] < record["bytes_before"]
    ref = read_safetensors(f"{MINILM}/reference.safetensors")
    got = rlx.embed(str(out), input_ids=ref["input_ids"], attention_mask=ref["attention_mask"],
                    token_type_ids=ref["token_type_ids"]).astype(np.float64)
    want = ref["sentence_embedding_f64"]
    cosine = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cosine.min() > 0.99, cosine


def test_training_lowers_the_loss_below_a_guess(rlx, tmp_path):
    save = tmp_path / "mlp.safetensors"
    record = rlx.train(model="mlp:784,16,10", data="synthetic:512", batch=128, epochs=2,
                       save=save)
    losses = record["epoch_losses"]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)
    assert losses[-1] < math.log(10) and losses[-1] < losses[0]
    assert record["images_per_s"] > 0 and save.exists()


def test_a_job_error_raises_the_cli_message(rlx, tmp_path):
    with pytest.raises(rlx.UserError, match="needs at least two sizes"):
        rlx.train(model="mlp:784", data="synthetic:64")
    with pytest.raises(rlx.Error) as e:
        rlx.quantize(tmp_path / "missing", tmp_path / "out")
    assert "missing" in str(e.value)
