"""The CLI's batch jobs, ``rlx.quantize``, ``rlx.train`` and ``rlx.compile_to``, from Python.

They run the ``rlx`` program this package carries (the wheel's ``bin/rlx``; ``RLX_BINARY`` or
``rlx`` on PATH in a build tree) with ``--json`` and return its result record, so a job does in
Python exactly what it does on the command line, with its progress lines on stderr as there. A
job's failure raises the class of ``rlx.errors`` its error record names, with the CLI's message.
The GIL is released while the job runs (it is another process).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Sequence

from . import errors


def _binary() -> str:
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "rlx")
    for candidate in (bundled, os.environ.get("RLX_BINARY", ""), shutil.which("rlx") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise errors.UserError("the rlx program is missing from this install (looked for "
                           f"{bundled}, RLX_BINARY and rlx on PATH)",
                           hint="reinstall the rlx package")


def _flag(name: str, value: Any) -> list[str]:
    return [] if value is None else [f"--{name}", str(value)]


def run_job(args: list[str]) -> dict:
    """Runs ``rlx ARGS --json`` and returns its JSON record; raises its error record."""
    proc = subprocess.run([_binary(), *args, "--json"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    record = None
    for line in proc.stderr.splitlines():
        if line.startswith('{"error": '):
            record = json.loads(line)["error"]
        else:
            sys.stderr.write(line + "\n")  # progress and notes, as the CLI shows them
    if proc.returncode != 0:
        if record is None:
            raise errors.InternalError(f"rlx {args[0]} exited with status {proc.returncode} and "
                                       "no error record", kind="internal")
        cls = errors.class_for(record.get("kind", "internal"))
        raise cls(record.get("message", ""), kind=record.get("kind", "internal"),
                  hint=record.get("hint", ""), node=record.get("node"))
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise errors.InternalError(f"rlx {args[0]} --json printed no JSON record: "
                                   f"{proc.stdout[:200]!r}", kind="internal") from None


def quantize(model: str | os.PathLike, output: str | os.PathLike, scheme: str = "int8-dynamic",
             calibration: str | os.PathLike | Sequence[str] | None = None,
             method: str | None = None, percentile: float | None = None,
             group: int | None = None, smooth: float | None = None) -> dict:
    """Post-training quantization, as ``rlx quantize MODEL --scheme S -o OUTPUT``: writes a
    Hugging Face folder that ``rlx.load`` (and every rlx command) loads, and returns the command's
    ``--json`` record. ``scheme`` is ``int8-dynamic``, ``int8`` (needs ``calibration``;
    ``smooth`` is SmoothQuant's alpha, 0.75 by default with the minmax method, 0 for none) or
    ``int4-weight`` (``group`` 32, 64 or 128; with ``calibration`` its weights are rounded by
    GPTQ for the activations they multiply). ``calibration`` is a safetensors file of the
    model's inputs, a text file of sentences (one a line), or the sentences themselves as a list
    of strings; text needs an encoder with a tokenizer."""
    args = ["quantize", os.fspath(model), "--scheme", scheme, "-o", os.fspath(output)]
    args += _flag("method", method) + _flag("percentile", percentile) + _flag("group", group)
    args += _flag("smooth", smooth)
    if calibration is None or isinstance(calibration, (str, os.PathLike)):
        args += _flag("calibration", os.fspath(calibration) if calibration is not None else None)
        return run_job(args)
    sentences = list(calibration)
    if not sentences or not all(isinstance(s, str) for s in sentences):
        raise errors.UsageError("calibration sentences must be a non-empty list of strings",
                                hint="or give a file: safetensors inputs or text, one sentence a "
                                     "line")
    if any("\n" in s or "\r" in s for s in sentences):
        raise errors.UsageError("a calibration sentence holds a line break; the CLI reads one "
                                "sentence a line", hint="split it into separate sentences")
    with tempfile.TemporaryDirectory(prefix="rlx-calibration-") as folder:
        path = os.path.join(folder, "calibration.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(sentences) + "\n")
        return run_job(args + ["--calibration", path])


def train(model: str | os.PathLike = "mlp:784,128,10", data: str | os.PathLike = "synthetic:60000",
          optimizer: str | None = None, batch: int | None = None, epochs: int | None = None,
          target: str | None = None, save: str | os.PathLike | None = None,
          seed: int | None = None, task: str | None = None, nproc: int | None = None,
          pp: int | None = None, micro_batches: int | None = None,
          resume: str | os.PathLike | None = None,
          eval_data: str | os.PathLike | None = None) -> dict:
    """Trains as ``rlx train`` does (one compiled step per batch: forward, loss, backward, update)
    and returns its ``--json`` record: images per second, each epoch's loss and the accuracy.
    ``data`` is a folder of MNIST IDX files or ``synthetic:N``; ``optimizer`` is the CLI's form,
    e.g. ``"sgd:lr=0.02,momentum=0.9"``; ``save`` a safetensors file for the parameters.
    ``model`` may also be a model file whose graph's first output is its loss (its params are
    trained); ``data`` is then a .safetensors or .npz file with one array per graph input, samples
    along the first axis, and the record counts samples (``samples_per_s``). With
    ``task="causal-lm"``, ``model`` is a Hugging Face decoder folder trained on next-token
    prediction of ``data``'s ``input_ids`` (int64 [N, S]); ``save`` is then a folder that
    ``rlx.load`` and ``rlx.generate`` take like the original, and the record has ``first_loss``
    and ``last_loss``. With ``task="sequence-classification"``, ``model`` is an encoder folder
    (BERT layout) trained with BertForSequenceClassification's head on ``data``'s ``input_ids``
    and ``labels`` (int64 [N]); ``save`` is then a folder whose loaded model has a ``logits``
    output, and the record has ``labels`` (the number of classes); ``eval_data`` (labelled
    sequences as ``data``) adds ``eval_accuracy`` and ``eval_loss``. ``nproc`` trains the built-in MLP or a model file data-parallel on that
    many ranks (each an equal share of every batch, gradients averaged), with the single
    process's loss curve; a model file's loss must be a mean over the samples (checked).
    ``pp`` cuts the model into that many pipeline stages, one a rank, and each batch into
    ``micro_batches`` (default 2 x pp) run on the 1F1B schedule, again with the whole batch's
    loss curve; ``micro_batches`` alone accumulates gradients in one process. ``resume``
    continues the run whose ``save`` wrote that safetensors file (its parameters, optimizer
    state and step count)."""
    args = ["train", "--model", os.fspath(model), "--data", os.fspath(data)] + _flag("task", task)
    args += _flag("optimizer", optimizer) + _flag("batch", batch) + _flag("epochs", epochs)
    args += _flag("target", target) + _flag("seed", seed) + _flag("nproc", nproc)
    args += _flag("pp", pp) + _flag("micro-batches", micro_batches)
    args += _flag("save", os.fspath(save) if save is not None else None)
    args += _flag("resume", os.fspath(resume) if resume is not None else None)
    args += _flag("eval-data", os.fspath(eval_data) if eval_data is not None else None)
    return run_job(args)


def compile_to(model: str | os.PathLike, output_dir: str | os.PathLike, target: str = "cpu",
               bind: dict[str, int] | None = None, precision: str | None = None,
               cpu: str | None = None, cuda_arch: str | None = None,
               deployment_target: str | None = None, compute_units: str | None = None) -> dict:
    """Writes what a target generates for the model, as ``rlx compile MODEL --target T -o DIR``
    (the MIR and LIR, the dispatch report, and the target's own files: C for cortexm, a .cu and
    cubin for cuda, ``model.mlpackage`` and ``io.json`` for ane, ...), and returns the command's
    ``--json`` record (``files``: each path, kind and size). ``bind`` fixes symbolic dims
    ({"B": 1, "S": 128}); ``cpu`` is cortexm's core, ``cuda_arch`` cuda's architecture,
    ``deployment_target`` (``"ios17"``, ``"macos14"``, ...) and ``compute_units``
    (``"CPU_AND_NE"``, ...) ane's package options."""
    args = ["compile", os.fspath(model), "--target", target, "-o", os.fspath(output_dir)]
    for symbol, size in (bind or {}).items():
        args += ["--bind", f"{symbol}={int(size)}"]
    args += _flag("precision", precision) + _flag("cpu", cpu) + _flag("cuda-arch", cuda_arch)
    args += _flag("deployment-target", deployment_target)
    args += _flag("compute-units", compute_units)
    return run_job(args)
