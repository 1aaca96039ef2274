"""rlx.generate: text from a decoder model, as ``rlx generate`` produces it, piece by piece."""

from __future__ import annotations

from typing import Any, Generator, Sequence

from . import _rlx


def generate(model: Any, prompt: str | Sequence[int], max_new_tokens: int = 32, *,
             temperature: float | None = None, top_k: int | None = None,
             top_p: float | None = None, seed: int | None = None,
             repetition_penalty: float | None = None, stop: str | Sequence[str] = (),
             ignore_eos: bool = False, tokens: bool = False,
             target: str = "cpu", precision: str | None = None,
             kv_cache: str | None = None) -> Generator[str | int, None, dict]:
    """A generator of the text a decoder model (qwen3, llama, gemma3) continues `prompt` with.

    prompt: text (tokenized with the model's tokenizer, its BOS added as the model asks) or a
    list of token ids. Each item is the text a new token adds, as soon as it is chosen (whole
    characters: bytes of an unfinished UTF-8 sequence wait for the token that completes it);
    with tokens=True, each item is the token id instead (the only choice for a model without a
    tokenizer). Generation is greedy unless temperature > 0, which samples after top_k, top_p and
    repetition_penalty as ``rlx generate`` does; seed makes the draws repeatable. It ends after
    max_new_tokens, after an end-of-sequence token of the model (unless ignore_eos), or when the
    text contains one of the `stop` strings (the text is cut before it).

    precision narrows the model as ``rlx generate --precision`` does ("f16", "bf16", "amp-f16",
    "amp-bf16", "tf32" or "q8", as Model.compile takes it); kv_cache keeps the decode graph's KV
    cache in "f32", "f16" or "bf16" (``--kv-cache``). Either one works on a copy of the model's
    graphs: `model` itself is left as it was.

    The tokens are computed on a worker thread with the GIL released, at most one ahead of the
    reader. Closing the generator (``gen.close()``, leaving a ``for`` loop over it with
    ``break`` and dropping it, or garbage collection) stops the decoder and frees it with its KV
    cache. The generator's return value (``StopIteration.value``, or ``result = yield from``) is
    {"prompt_ids", "tokens", "finish_reason": "eos" | "stop_string" | "length", "text",
    "stop_string"} (text without tokens=True; stop_string when one was found).
    """
    from . import Model, load  # the package's, which imports this module
    if not isinstance(model, Model):
        model = load(model)
    if isinstance(stop, str):
        stop = [stop]
    text = prompt if isinstance(prompt, str) else None
    ids = [] if text is not None else [int(t) for t in prompt]
    native = _rlx.generate(model._native, target, text, ids, int(max_new_tokens), temperature,
                           top_k, top_p, seed, repetition_penalty, list(stop), bool(ignore_eos),
                           bool(tokens), precision, kv_cache)
    return _pieces(native)


def _pieces(native):
    try:
        while True:
            piece = native.next()
            if piece is None:
                return native.result()
            yield piece
    finally:
        native.close()
