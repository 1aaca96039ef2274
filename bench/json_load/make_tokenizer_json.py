"""Writes a byte-level BPE tokenizer.json shaped like Qwen2's (about 150k tokens, as many merges,
pretty-printed the way `tokenizers` saves it) for timing rlx::json::parse. No real multi-MB
tokenizer.json ships with the repository, so the tokens are built from the real
vocabularies of the llama.cpp test files (SentencePiece and WordPiece, many scripts); every
token is reachable by its merges, so the file is a consistent BPE model.

    python3 bench/json_load/make_tokenizer_json.py tests/data/gguf out.json
"""
import json
import struct
import sys
from pathlib import Path


def gguf_tokens(path):
    """tokenizer.ggml.tokens of a GGUF file (format v2/v3)."""
    data = Path(path).read_bytes()
    pos = 4 + 4 + 8  # magic, version, tensor count
    (n_kv,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
              12: "d"}

    def read(kind):
        nonlocal pos
        if kind == 8:
            (n,) = struct.unpack_from("<Q", data, pos)
            pos += 8 + n
            return data[pos - n:pos].decode("utf-8", "replace")
        if kind == 9:
            item, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            return [read(item) for _ in range(n)]
        (v,) = struct.unpack_from("<" + scalar[kind], data, pos)
        pos += struct.calcsize(scalar[kind])
        return v

    for _ in range(n_kv):
        key = read(8)
        (kind,) = struct.unpack_from("<I", data, pos)
        pos += 4
        value = read(kind)
        if key == "tokenizer.ggml.tokens":
            return value
    raise SystemExit(f"{path}: no tokenizer.ggml.tokens")


def byte_alphabet():
    """GPT-2's byte -> printable character map, as byte-level BPE vocabularies spell bytes."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def main():
    shared, out = Path(sys.argv[1]), Path(sys.argv[2])
    words = []
    for t in gguf_tokens(shared / "ggml-vocab-llama-spm.gguf"):
        if not (t.startswith("<") and t.endswith(">")):
            words.append(t.replace("\u2581", " "))
    for t in gguf_tokens(shared / "ggml-vocab-bert-bge.gguf"):
        if not (t.startswith("[") and t.endswith("]")):
            w = t[2:] if t.startswith("##") else t
            words += [w, " " + w, w.capitalize(), " " + w.upper()]
    alphabet = byte_alphabet()
    vocab = {alphabet[b]: None for b in range(256)}
    merges = []

    def add(token):  # token: a tuple of mapped characters
        if "".join(token) in vocab:
            return
        add(token[:-1])
        vocab["".join(token)] = None
        merges.append("".join(token[:-1]) + " " + token[-1])

    for w in words:
        mapped = tuple(alphabet[b] for b in w.encode("utf-8"))
        if len(mapped) > 1:
            add(mapped)
    vocab = {t: i for i, t in enumerate(vocab)}
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": len(vocab) + i, "content": s, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False, "special": True}
                         for i, s in enumerate(special)],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}"
                                          "\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                                          "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
             "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                           "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                    "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": merges},
    }
    out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{out}: {len(vocab)} tokens, {len(merges)} merges, {out.stat().st_size} bytes")


main()
