"""Apache TVM (PyPI apache-tvm, Relax): the ONNX graph exported with the case's static shapes,
imported by tvm.relax.frontend.onnx, the default Relax build for
llvm with -mcpu set to this host's CPU (no auto-tuning: tuning takes hours per shape) and the Relax VM. Importing
and building count in compile_ms."""
import numpy as np

NAMES = ("input_ids", "attention_mask", "token_type_ids")


def describe(task):
    import tvm
    return {"version": tvm.__version__, "threads": "TVM default",
            "setting": "relax default pipeline, llvm for the host CPU, untuned"}


def prepare(task, inputs):
    if task["kind"] != "bert":
        raise NotImplementedError("the tvm peer runs the encoder suite only")
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    shape = list(inputs["input_ids"].shape)
    mod = from_onnx(onnx.load(task["onnx_static"]), shape_dict={n: shape for n in NAMES},
                    keep_params_in_input=False)
    cpu = tvm.target.codegen.llvm_get_system_cpu()
    try:
        target = tvm.target.Target({"kind": "llvm", "mcpu": cpu})
    except (ValueError, TypeError):  # releases before the JSON form
        target = tvm.target.Target(f"llvm -mcpu={cpu}")
    build = getattr(tvm, "compile", None) or relax.build
    ex = build(mod, target=target)
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    args = [tvm.nd.array(inputs[n], dev) if hasattr(tvm, "nd") else tvm.runtime.tensor(inputs[n])
            for n in NAMES]

    def call():
        out = vm["main"](*args)
        return {"last_hidden_state": out[0].numpy(), "sentence_embedding": out[1].numpy()}
    return call
