"""rlx: an ML compiler and runtime, from Python.

    >>> import rlx
    >>> model = rlx.load("model.onnx")
    >>> compiled = model.compile(target="cpu")
    >>> outputs = compiled(input_ids=ids)        # {name: numpy.ndarray}
    >>> rlx.embed("all-MiniLM-L6-v2", ["A cat sits."])           # float32 [1, 384]
    >>> for piece in rlx.generate("Qwen3-0.6B", "Hello", max_new_tokens=20): ...

Inputs are NumPy arrays or any DLPack tensor on the CPU (torch, jax), read in place when they
are C-contiguous; outputs are NumPy arrays over rlx's own buffers (``torch.from_dlpack`` takes
them without a copy). docs/python.md is the guide.
"""

from __future__ import annotations

import json as _json
import os as _os
from typing import Any, Mapping, Sequence

from . import errors
from ._rlx import Compiled as _Compiled, Model as _Model
from . import _rlx
from .errors import (CompileError, DeviceError, Error, InternalError, OutOfMemoryError,
                     PluginError, UnsupportedError, UsageError, UserError)

__all__ = ["load", "list_targets", "embed", "generate", "quantize", "train", "compile_to", "Model", "Compiled",
           "TensorInfo", "Error", "UsageError", "UserError", "CompileError", "UnsupportedError", "DeviceError",
           "PluginError", "InternalError", "OutOfMemoryError", "errors"]


class TensorInfo(tuple):
    """(name, dtype, shape) of a graph input or output; symbolic dims are their names."""

    __slots__ = ()

    def __new__(cls, name, dtype, shape):
        return super().__new__(cls, (name, dtype, tuple(shape)))

    name = property(lambda self: self[0])
    dtype = property(lambda self: self[1])
    shape = property(lambda self: self[2])

    def __repr__(self):
        dims = ",".join(str(d) for d in self.shape)
        return f"TensorInfo({self.name}: {self.dtype}[{dims}])"


def list_targets(verbose: bool = False) -> dict:
    """The target and importer plugins found, as ``rlx --list-targets --json`` (``-v`` with
    verbose) reports them: {"targets": [...], "importers": [...], "problems": [...]}."""
    return _json.loads(_rlx.list_targets_json(verbose))


class Compiled:
    """A graph compiled for one target. Call it with the inputs by name."""

    def __init__(self, native):
        self._native = native
        self.inputs = [TensorInfo(*i) for i in native.input_infos()]
        self.outputs = [TensorInfo(*o) for o in native.output_infos()]

    def __call__(self, **inputs: Any) -> dict[str, Any]:
        """Runs on the named inputs; returns {output name: numpy.ndarray}."""
        return self._native.run(inputs)

    def run(self, inputs: Mapping[str, Any],
            outputs: Sequence[str] | dict[str, Any] | None = None) -> dict[str, Any]:
        """Runs on a dict of inputs and returns {name: array}.

        outputs: None (every output, as NumPy arrays over rlx's buffers), a list of output
        names (those only), or a dict {name: array} of arrays to write the outputs into (NumPy,
        or any writable DLPack tensor on the CPU): each must have the output's dtype and shape
        and be C-contiguous, and is returned as given, filled. A loop that passes the same
        arrays allocates no outputs after its first run.
        """
        if isinstance(outputs, dict):
            return self._native.run_into(inputs, outputs)
        return self._native.run(inputs, list(outputs) if outputs else [])

    def report(self, verbose: bool = False) -> str:
        """The dispatch report, as ``rlx explain`` prints it."""
        return self._native.report(verbose)

    def device_memory(self) -> dict[str, int] | None:
        """{'bytes': ..., 'peak_bytes': ...}: the device memory the target holds (weights,
        buffers, vendor workspaces) now and at most so far, as ``rlx bench`` reports it; None
        where the target's device does not count its memory (cpu, and the GPU-style targets
        other than cuda and vulkan)."""
        return self._native.device_memory()


class Model:
    """A model read by :func:`load`: its graphs, with inputs and outputs by name."""

    def __init__(self, native):
        self._native = native
        self._encoders = {}  # target -> the encoder rlx.embed compiled

    path = property(lambda self: self._native.path)
    architecture = property(lambda self: self._native.architecture)
    metadata = property(lambda self: self._native.metadata)
    graphs = property(lambda self: self._native.graphs)

    def input_infos(self, graph: str = "main") -> list[TensorInfo]:
        """The inputs of the graph named `graph`: [TensorInfo(name, dtype, shape)]."""
        return [TensorInfo(*i) for i in self._native.input_infos(graph)]

    def output_infos(self, graph: str = "main") -> list[TensorInfo]:
        """The outputs of the graph named `graph`: [TensorInfo(name, dtype, shape)]."""
        return [TensorInfo(*o) for o in self._native.output_infos(graph)]

    @property
    def inputs(self) -> list[TensorInfo]:
        """The main graph's inputs: [TensorInfo(name, dtype, shape)]."""
        return self.input_infos()

    @property
    def outputs(self) -> list[TensorInfo]:
        """The main graph's outputs: [TensorInfo(name, dtype, shape)]."""
        return self.output_infos()

    def explain(self, target: str = "cpu", graph: str = "main", json: bool = False,
                verbose: bool = False) -> str | dict:
        """The dispatch report of ``rlx explain MODEL --target TARGET`` (a dict with json=True).
        Raises CompileError, naming the node and the refusals, when no path is legal."""
        text = self._native.explain(target, graph, json, verbose)
        return _json.loads(text) if json else text

    def compile(self, target: str = "cpu", graph: str = "main",
                bind: Mapping[str, int] | None = None, precision: str | None = None,
                kv_cache: str | None = None) -> Compiled:
        """Compiles the graph for the target.

        bind: {symbol: size}, symbolic dims fixed now (the compiled model's inputs then have
        those sizes); the symbols left are bound at each run from the inputs' shapes (and the
        compiled code kept per shape). A name that is not one of the graph's symbols is a
        UserError listing them. precision: None or "f32", the model's own dtypes; "f16" or
        "bf16", every op on narrow values, "amp-f16" or "amp-bf16", products, convolutions and
        attention narrow and the rest f32 (``rlx run --precision``; inputs and outputs stay f32,
        and ``report()`` lists each change); "q8", products with block-quantized weights (GGUF
        Q4_0, Q4_K, Q8_0, ...) take activations rounded to 8-bit blocks (``rlx run
        --q8-activations``); "tf32", f32 products may round their operands to TF32 where the
        target has TF32 tensor cores (``rlx run --allow-tf32``; cuda). Anything else is a
        UsageError (a ValueError) naming these. kv_cache: "f32", "f16" or "bf16", the dtype the
        graph's KV cache (its past_* inputs and present_* outputs) is kept in (``rlx run
        --kv-cache``); a UserError for a graph without one.
        """
        return Compiled(self._native.compile(target, graph, dict(bind or {}), precision,
                                             kv_cache))

    def _encoder(self, target):
        if target not in self._encoders:
            self._encoders[target] = _rlx.encoder(self._native, target)
        return self._encoders[target]

    def __repr__(self):
        return f"<rlx.Model {self.path!r} ({self.architecture}; graphs {', '.join(self.graphs)})>"


from ._embed import embed  # noqa: E402  (they use Model and load above)
from ._generate import generate  # noqa: E402
from ._jobs import compile_to, quantize, train  # noqa: E402  (the CLI's batch jobs)


def load(path: str | _os.PathLike, bind: Mapping[str, int] | None = None,
         input_shapes: Mapping[str, Sequence[int]] | None = None,
         input_values: Mapping[str, Any] | None = None) -> Model:
    """Reads a model as ``rlx run`` does: a file or folder an importer claims (ONNX, GGUF,
    safetensors, a Hugging Face folder), else rlx IR text.

    bind: {symbol: size}, symbolic dims fixed at import (``rlx compile --bind``).
    input_shapes: {input: shape}, the shapes the caller will run with, for importers that cannot
    keep a dim symbolic. input_values: {input: array}, inputs fixed to values at import.
    """
    return Model(_rlx.load(str(path), dict(bind or {}),
                           {k: [int(d) for d in v] for k, v in (input_shapes or {}).items()},
                           input_values))
