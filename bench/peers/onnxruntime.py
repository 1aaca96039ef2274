"""ONNX Runtime on the CPU execution provider, on the ONNX graph bench/run.py exports from the
PyTorch module (same weights). Two settings, both measured:
  onnxruntime        the default session: graph optimisation level ORT_ENABLE_ALL
  onnxruntime-fused  first rewritten by onnxruntime.transformers.optimizer (model_type bert):
                     Attention, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization
                     fusions; its strongest CPU setting for BERT.
  onnxruntime-int8   (bench/quant/run.py) the graph after onnxruntime.quantization.quantize_dynamic
                     with its defaults: int8 weights, u8 activations quantized at run time
                     (DynamicQuantizeLinear + MatMulInteger), ORT's own int8 CPU path."""
import os

import onnxruntime as ort


def _fused_path(task):
    return task["onnx"].replace(".onnx", ".ort-fused.onnx")


def _int8_path(task):
    return task["onnx"].replace(".onnx", ".ort-int8.onnx")


def _path(task):
    if task["options"].get("int8"):
        return _int8_path(task)
    return _fused_path(task) if task["options"].get("fused") else task["onnx"]


def export(task):
    """The transformer optimizer's rewrite or the dynamic quantization, once per graph (not part
    of compile_ms)."""
    if task["options"].get("int8"):
        import onnx
        from onnxruntime.quantization import quantize_dynamic
        # The exporter leaves the weights as Constant nodes; quantize_dynamic only quantizes a
        # MatMul whose weight is an initializer, so they become initializers first (same values).
        model = onnx.load(task["onnx"])
        kept = []
        for node in model.graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                t = onnx.TensorProto()
                t.CopyFrom(node.attribute[0].t)
                t.name = node.output[0]
                model.graph.initializer.append(t)
            else:
                kept.append(node)
        del model.graph.node[:]
        model.graph.node.extend(kept)
        staged = _int8_path(task).replace(".onnx", ".initializers.onnx")
        onnx.save(model, staged)
        quantize_dynamic(staged, _int8_path(task))
        ops = {}
        for node in onnx.load(_int8_path(task)).graph.node:
            ops[node.op_type] = ops.get(node.op_type, 0) + 1
        return {"quantized": "quantize_dynamic defaults",
                "int8_ops": {k: v for k, v in ops.items() if "Integer" in k or "Quant" in k}}
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
    if task["options"].get("int8"):
        setting = "quantize_dynamic (int8 weights, u8 activations) + ORT_ENABLE_ALL"
    return {"version": ort.__version__, "threads": "default (one per physical core)",
            "setting": setting}


def prepare(task, inputs):
    if task["kind"] != "bert":
        raise NotImplementedError("the onnxruntime peer runs the encoder suite only")
    path = _path(task)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: the export step did not run")
    session = ort.InferenceSession(path, ort.SessionOptions(), providers=["CPUExecutionProvider"])
    feed = {i.name: inputs[i.name] for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]

    def call():
        return dict(zip(names, session.run(names, feed)))
    return call
