"""ONNX Runtime on the CPU execution provider, on the ONNX graph bench/run.py exports from the
PyTorch module (same weights). Two settings, both measured:
  onnxruntime        the default session: graph optimisation level ORT_ENABLE_ALL
  onnxruntime-fused  first rewritten by onnxruntime.transformers.optimizer (model_type bert):
                     Attention, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization
                     fusions; its strongest CPU setting for BERT."""
import os

import onnxruntime as ort


def _fused_path(task):
    return task["onnx"].replace(".onnx", ".ort-fused.onnx")


def export(task):
    """The transformer optimizer's rewrite, once per graph (not part of compile_ms)."""
    if not task["options"].get("fused"):
        return {}
    from onnxruntime.transformers import optimizer
    cfg = task["config"]
    model = optimizer.optimize_model(task["onnx"], model_type="bert",
                                     num_heads=cfg["num_attention_heads"],
                                     hidden_size=cfg["hidden_size"])
    model.save_model_to_file(_fused_path(task))
    stats = {k: v for k, v in model.get_fused_operator_statistics().items() if v}
    return {"fused_ops": stats}


def describe(task):
    setting = "transformers optimizer (bert) + ORT_ENABLE_ALL" if task["options"].get("fused") \
        else "default session (ORT_ENABLE_ALL)"
    return {"version": ort.__version__, "threads": "default (one per physical core)",
            "setting": setting}


def prepare(task, inputs):
    if task["kind"] != "bert":
        raise NotImplementedError("the onnxruntime peer runs the encoder suite only")
    path = _fused_path(task) if task["options"].get("fused") else task["onnx"]
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: the export step did not run")
    session = ort.InferenceSession(path, ort.SessionOptions(), providers=["CPUExecutionProvider"])
    feed = {i.name: inputs[i.name] for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]

    def call():
        return dict(zip(names, session.run(names, feed)))
    return call
