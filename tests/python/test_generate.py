# rlx.generate on the qwen3-tiny fixture: greedy tokens equal the fixture's reference (float64
# transformers, full recompute each step) and `rlx generate`'s; text is checked against a
# tokenizer made to be decoded by hand (tiny_text_model.py).
import json
import threading
import time

import numpy as np
import pytest

import tiny_text_model
from conftest import run_cli
from reference_files import MINILM, QWEN3, read_safetensors


@pytest.fixture(scope="module")
def reference():
    return read_safetensors(f"{QWEN3}/reference.safetensors")


@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    return tiny_text_model.make(tmp_path_factory.mktemp("qwen3-text"))


def test_greedy_tokens_match_the_reference_and_the_cli(rlx, reference):
    model = rlx.load(QWEN3)
    for prompt, want in zip(reference["prompts"], reference["greedy_tokens"]):
        got = list(rlx.generate(model, prompt.tolist(), max_new_tokens=len(want), tokens=True))
        assert got == want.tolist()
    prompt = reference["prompts"][0]
    cli = run_cli("generate", QWEN3, "--target", "cpu", "--prompt-ids",
                  ",".join(map(str, prompt)), "-n", "24", "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["tokens"] == list(rlx.generate(model, prompt, 24, tokens=True))


def test_return_value_holds_the_tokens_and_why_it_ended(rlx, reference):
    prompt, want = reference["prompts"][1].tolist(), reference["greedy_tokens"][1].tolist()
    gen = rlx.generate(QWEN3, np.array(prompt), max_new_tokens=5, tokens=True)
    with pytest.raises(StopIteration) as end:
        while True:
            next(gen)
    result = end.value.value
    assert result["prompt_ids"] == prompt
    assert result["tokens"] == want[:5]
    assert result["finish_reason"] == "length"


def test_text_pieces_are_the_tokens_text(rlx, reference, text_model):
    prompt, want = reference["prompts"][2].tolist(), reference["greedy_tokens"][2].tolist()
    pieces = list(rlx.generate(text_model, prompt, max_new_tokens=len(want)))
    assert all(isinstance(p, str) and p for p in pieces)
    assert "".join(pieces) == tiny_text_model.decode_by_hand(want)


def test_a_text_prompt_is_tokenized(rlx, text_model):
    # Byte-level BPE without merges: a prompt's ids are its bytes.
    by_text = rlx.generate(text_model, "Hello", max_new_tokens=6, tokens=True)
    by_ids = rlx.generate(text_model, list(b"Hello"), max_new_tokens=6, tokens=True)
    assert list(by_text) == list(by_ids)


def test_stop_strings_cut_the_text(rlx, reference, text_model):
    prompt, want = reference["prompts"][0].tolist(), reference["greedy_tokens"][0].tolist()
    full = tiny_text_model.decode_by_hand(want)
    stop = full[len(full) // 2:len(full) // 2 + 3]
    gen = rlx.generate(text_model, prompt, max_new_tokens=len(want), stop=[stop, "never seen"])
    pieces = []
    try:
        while True:
            pieces.append(next(gen))
    except StopIteration as end:
        result = end.value
    assert "".join(pieces) == full[:full.index(stop)]
    assert result["finish_reason"] == "stop_string" and result["stop_string"] == stop
    assert result["text"] == "".join(pieces)


def test_closing_early_frees_the_decoder(rlx, reference):
    model = rlx.load(QWEN3)
    gen = rlx.generate(model, reference["prompts"][0], max_new_tokens=400, tokens=True)
    assert next(gen) == reference["greedy_tokens"][0][0]
    assert rlx._rlx._live_generations() == 1
    start = time.monotonic()
    gen.close()
    assert rlx._rlx._live_generations() == 0
    assert time.monotonic() - start < 5  # not the 399 tokens left
    # Leaving a loop and dropping the generator does the same.
    for _ in rlx.generate(model, reference["prompts"][0], max_new_tokens=400, tokens=True):
        break
    assert rlx._rlx._live_generations() == 0


def test_the_gil_is_free_while_tokens_are_computed(rlx, reference):
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.001)

    # Enough tokens that generating takes tens of milliseconds even with every kernel cached
    # (24 tokens took 3 ms on a fast machine): a held GIL would leave the counter at one or two.
    t = threading.Thread(target=count)
    t.start()
    try:
        n = len(list(rlx.generate(QWEN3, reference["prompts"][0], 400, tokens=True,
                                  ignore_eos=True)))
    finally:
        done.set()
        t.join()
    assert n == 400 and len(ticks) > 5, len(ticks)


def test_errors_name_what_to_change(rlx, reference, text_model):
    prompt = reference["prompts"][0].tolist()
    with pytest.raises(rlx.UserError, match="tokens=True"):
        rlx.generate(QWEN3, prompt)  # no tokenizer: text output needs one
    with pytest.raises(rlx.UserError, match="stop"):
        rlx.generate(QWEN3, prompt, stop=["x"], tokens=True)
    with pytest.raises(rlx.UserError, match="context of 512"):
        rlx.generate(QWEN3, prompt, max_new_tokens=600, tokens=True)
    with pytest.raises(rlx.UsageError, match="temperature"):
        rlx.generate(text_model, prompt, top_k=5)
    with pytest.raises(rlx.UserError, match="no 'prefill' graph"):
        rlx.generate(MINILM, prompt, tokens=True)




def test_precision_and_kv_cache_are_the_clis_and_leave_the_model_alone(rlx, reference):
    model = rlx.load(QWEN3)
    prompt = reference["prompts"][0].tolist()
    got = list(rlx.generate(model, prompt, 12, tokens=True, precision="amp-f16", kv_cache="f16"))
    cli = run_cli("generate", QWEN3, "--target", "cpu", "--prompt-ids", ",".join(map(str, prompt)),
                  "-n", "12", "--precision", "amp-f16", "--kv-cache", "f16", "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["tokens"] == got
    # The options narrowed a copy: the model still generates the float64 reference's tokens.
    want = reference["greedy_tokens"][0].tolist()
    assert list(rlx.generate(model, prompt, len(want), tokens=True)) == want
    with pytest.raises(rlx.UsageError, match="kv_cache='i8'"):
        rlx.generate(model, prompt, tokens=True, kv_cache="i8")
    with pytest.raises(rlx.UsageError, match="precision='f8'"):
        rlx.generate(model, prompt, tokens=True, precision="f8")
    with pytest.raises(rlx.UserError, match="no decode graph with a KV cache"):
        rlx.generate(MINILM, prompt, tokens=True, kv_cache="f16")


def test_sampling_is_repeatable_with_a_seed(rlx, reference):
    prompt = reference["prompts"][3].tolist()
    runs = [list(rlx.generate(QWEN3, prompt, 12, temperature=0.8, top_k=50, seed=7,
                              tokens=True)) for _ in range(2)]
    assert runs[0] == runs[1]
    cli = run_cli("generate", QWEN3, "--target", "cpu", "--prompt-ids", ",".join(map(str, prompt)),
                  "-n", "12", "--temperature", "0.8", "--top-k", "50", "--seed", "7", "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["tokens"] == runs[0]
