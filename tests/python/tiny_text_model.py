# The qwen3-tiny fixture (token ids only) with a tokenizer that a test can follow by hand, as
# tests/cli/tiny_tokenizer.h makes it for the CLI's tests: byte-level BPE without merges, id b
# (0..255) is byte b, 256 <|endoftext|>, 257 <|im_start|>, 258 <|im_end|> (special), and every
# id from 259 to 2047 a filler token whose text is "<N>", so any id the random model picks has
# text.
import json
import os

from reference_files import FIXTURES

VOCAB = 2048
SPECIAL = {256: "<|endoftext|>", 257: "<|im_start|>", 258: "<|im_end|>"}


def _byte_char(b):
    """GPT-2's byte-level alphabet: the character standing for byte b in token texts."""
    def printable(x):
        return 33 <= x <= 126 or 161 <= x <= 172 or 174 <= x <= 255
    if printable(b):
        return chr(b)
    return chr(256 + sum(1 for x in range(b) if not printable(x)))


def decode_by_hand(ids):
    """The text of generated ids as transformers decodes them with skip_special_tokens."""
    out = bytearray()
    for i in ids:
        if i < 256:
            out.append(i)
        elif i not in SPECIAL:
            out += f"<{i}>".encode()
    return out.decode("utf-8", errors="replace")


def make(dir_path):
    """A folder with qwen3-tiny's files (linked) and the tokenizer above; returns its path."""
    os.makedirs(dir_path, exist_ok=True)
    src = os.path.join(FIXTURES, "qwen3-tiny")
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        os.symlink(os.path.join(src, name), os.path.join(dir_path, name))
    vocab = {_byte_char(b): b for b in range(256)}
    vocab.update({f"<{i}>": i for i in range(259, VOCAB)})
    tokenizer = {
        "added_tokens": [{"id": i, "content": t, "special": True} for i, t in SPECIAL.items()],
        "pre_tokenizer": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    }
    with open(os.path.join(dir_path, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)
    with open(os.path.join(dir_path, "tokenizer_config.json"), "w") as f:
        f.write("{}")
    return str(dir_path)
