"""rlx.embed: sentence embeddings of an encoder model, as ``rlx embed`` computes them."""

from __future__ import annotations

from typing import Any, Sequence

from .errors import UsageError


def embed(model: Any, sentences: str | Sequence[str] | None = None, *, target: str = "cpu",
          input_ids: Any = None, attention_mask: Any = None,
          token_type_ids: Any = None) -> Any:
    """Sentence embeddings: a NumPy float32 array [n, hidden], one unit-length row per sentence.

    model: a path (an encoder such as a sentence-transformers folder) or a Model from
    :func:`rlx.load`; a Model keeps the encoder it compiled for each target, so later calls do
    not compile again. sentences: a str or a list of them, tokenized with the model's tokenizer
    ([CLS] ... [SEP], cut to the model's length limit). Or, instead of sentences, token ids:
    input_ids [n, seq] (i64 or i32), with attention_mask (default all ones: ragged rows end in
    zeros) and token_type_ids (default zeros). Pooling is the mean over unmasked tokens, then L2
    normalisation (the model's ``sentence_embedding`` output), as ``rlx embed``.
    """
    from . import Model, load  # the package's, which imports this module
    if not isinstance(model, Model):
        model = load(model)
    encoder = model._encoder(target)
    if sentences is not None:
        if input_ids is not None:
            raise UsageError("give either sentences or input_ids, not both",
                             kind="usage", hint="token ids go in input_ids=; text in sentences")
        if isinstance(sentences, str):
            sentences = [sentences]
        sentences = list(sentences)
        if not sentences:
            raise UsageError("sentences is empty: give at least one sentence", kind="usage")
        return encoder.embed_text(sentences)
    if input_ids is None:
        raise UsageError("give the sentences to embed, or their token ids as input_ids=",
                         kind="usage")
    inputs = {"input_ids": input_ids}
    if attention_mask is not None:
        inputs["attention_mask"] = attention_mask
    if token_type_ids is not None:
        inputs["token_type_ids"] = token_type_ids
    return encoder.embed_ids(inputs)
