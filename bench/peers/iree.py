"""IREE (PyPI iree-base-compiler + iree-base-runtime): the ONNX graph exported with the case's
static shapes (IREE compiles static shapes best), imported with iree-import-onnx, compiled for
llvm-cpu with --iree-llvmcpu-target-cpu=host and run by the local-task driver (its default
thread pool). Importing and compiling count in compile_ms."""
import os
import subprocess
import sys

import numpy as np

NAMES = ("input_ids", "attention_mask", "token_type_ids")


def describe(task):
    from importlib.metadata import version
    return {"version": version("iree-base-compiler"),
            "threads": "local-task default", "setting": "llvm-cpu, target-cpu=host, static shapes"}


def prepare(task, inputs):
    if task["kind"] != "bert":
        raise NotImplementedError("the iree peer runs the encoder suite only")
    import iree.compiler as ireec
    import iree.runtime as ireert
    import onnx
    base = os.path.join(os.path.dirname(task["output"]), f"{task['case']}.iree")
    importer = os.path.join(os.path.dirname(sys.executable), "iree-import-onnx")
    r = subprocess.run([importer, task["onnx_static"], "-o", base + ".mlir"], capture_output=True,
                       text=True)
    if r.returncode:
        raise RuntimeError("iree-import-onnx: " + (r.stderr.strip().splitlines() or ["?"])[-1])
    vmfb = ireec.compile_file(base + ".mlir", target_backends=["llvm-cpu"],
                              extra_args=["--iree-llvmcpu-target-cpu=host"])
    config = ireert.Config("local-task")
    ctx = ireert.SystemContext(config=config)
    ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, vmfb))
    # The importer names the function after the ONNX graph ("torch_jit" from torch.onnx).
    fn = ctx.modules.module[onnx.load(task["onnx_static"], load_external_data=False).graph.name]
    args = [inputs[n] for n in NAMES]

    def call():
        last, emb = fn(*args)
        return {"last_hidden_state": np.asarray(last.to_host()),
                "sentence_embedding": np.asarray(emb.to_host())}
    return call
