# compile(bind=, precision=) and run(outputs={name: array}): sizes fixed at compile time, the
# precisions rlx offers and nothing else, results written into the caller's arrays, and bf16
# in and out (ml_dtypes for NumPy, DLPack for the rest). References: the models' reference
# outputs and NumPy's own arithmetic.
import ctypes
import sys

import numpy as np
import pytest

from reference_files import QWEN3, TINY_GPT, read_safetensors

AXPY = """graph @t(%x: f32[N], %y: f32[N]) {
  %a = mul(%x, %y) : f32[N]
  %b = add(%a, %x) : f32[N]
  return %b
}
"""
BF16 = """graph @t(%x: bf16[4], %y: f32[4]) {
  %w = convert(%x) {dtype = f32} : f32[4]
  %s = add(%w, %y) : f32[4]
  %z = convert(%s) {dtype = bf16} : bf16[4]
  return %s, %z
}
"""


@pytest.fixture
def graph_file(tmp_path):
    def write(text):
        path = tmp_path / "g.rlx"
        path.write_text(text)
        return str(path)
    return write


@pytest.fixture(scope="module")
def tiny_gpt():
    return (read_safetensors(f"{TINY_GPT}/inputs.safetensors"),
            read_safetensors(f"{TINY_GPT}/reference.safetensors")["logits"])


def test_bind_fixes_a_symbolic_dim(rlx, tiny_gpt):
    inputs, reference = tiny_gpt
    n = len(inputs["ids"])
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile("cpu", bind={"S": n})
    assert [i.shape for i in compiled.inputs] == [(n,), (n,)]
    assert compiled.outputs[0].shape == (n, 64)
    np.testing.assert_allclose(compiled(**inputs)["logits"], reference, rtol=1e-4, atol=1e-4)
    with pytest.raises(rlx.UserError):  # the size is fixed now
        compiled(ids=inputs["ids"][:2], positions=inputs["positions"][:2])


def test_bind_names_only_the_graphs_symbols(rlx):
    model = rlx.load(f"{TINY_GPT}/model.rlx")
    with pytest.raises(rlx.UserError, match=r"bind\['batch'\].*no symbolic dim 'batch'.*S"):
        model.compile(bind={"batch": 2})
    with pytest.raises(rlx.UserError, match="at least 1"):
        model.compile(bind={"S": 0})


def test_precision_offers_what_rlx_has(rlx, tiny_gpt):
    inputs, reference = tiny_gpt
    model = rlx.load(f"{TINY_GPT}/model.rlx")
    for precision in (None, "f32"):
        out = model.compile(precision=precision)(**inputs)["logits"]
        np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError) as e:  # a UsageError, naming what there is
        model.compile(precision="fp16")
    assert isinstance(e.value, rlx.UsageError)
    assert "precision='fp16'" in str(e.value)
    for offered in ('"q8"', '"f32"', "None", '"amp-bf16"', '"f16"', '"tf32"'):
        assert offered in str(e.value)
    with pytest.raises(rlx.UserError, match="block-quantized"):
        model.compile(precision="q8")  # f32 weights: nothing to quantize
    # TF32 is an allowance: the cpu has no TF32 arithmetic and computes in f32, and says so.
    tf32 = model.compile(precision="tf32")
    np.testing.assert_allclose(tf32(**inputs)["logits"], reference, rtol=1e-4, atol=1e-4)
    assert "--allow-tf32" in tf32.report() and "tf32      %" in tf32.report()


def test_precision_policies_narrow_and_keep_the_f32_interface(rlx, tiny_gpt):
    inputs, reference = tiny_gpt
    model = rlx.load(f"{TINY_GPT}/model.rlx")
    scale = np.abs(reference).max()
    # bf16 keeps 8 bits (relative error 2^-9 per rounding), f16 11: bounds for a 2-layer model.
    for precision, bound in (("amp-f16", 5e-3), ("f16", 1e-2), ("amp-bf16", 4e-2), ("bf16", 8e-2)):
        compiled = model.compile(precision=precision)
        out = compiled(**inputs)["logits"]
        assert out.dtype == np.float32
        err = np.abs(out - reference).max() / scale
        assert 0 < err < bound, (precision, err)
        assert f"precision {precision}: " in compiled.report()


def test_kv_cache_keeps_the_decode_graphs_cache_narrow(rlx):
    model = rlx.load(QWEN3)
    bind = {"B": 1, "T": 4}
    wide = model.compile(graph="decode", bind=bind)
    narrow = model.compile(graph="decode", bind=bind, kv_cache="f16")
    caches = [i for i in narrow.inputs if i.name.startswith("past_")]
    assert caches and all(i.dtype == "f16" for i in caches)
    assert all(i.dtype == "f32" for i in wide.inputs if i.name.startswith("past_"))
    # One step at position 0 over empty caches: the same logits but for f16's rounding of the
    # new keys and values, and the new rows stored as f16.
    feed = {"input_ids": np.array([[5]], dtype=np.int64), "position": np.array([0], dtype=np.int64)}
    for i in wide.inputs:
        if i.name.startswith("past_"):
            feed[i.name] = np.zeros(i.shape, dtype=np.float32)
    got_wide = wide(**feed)
    for i in narrow.inputs:
        if i.name.startswith("past_"):
            feed[i.name] = np.zeros(i.shape, dtype=np.float16)
    got_narrow = narrow(**feed)
    np.testing.assert_allclose(got_narrow["logits"], got_wide["logits"], rtol=2e-2, atol=2e-2)
    present = next(n for n in got_narrow if n.startswith("present_"))
    assert got_narrow[present].dtype == np.float16
    np.testing.assert_array_equal(got_narrow[present],
                                  got_wide[present].astype(np.float16))
    with pytest.raises(rlx.UsageError, match="kv_cache='f64'"):
        model.compile(graph="decode", bind=bind, kv_cache="f64")
    with pytest.raises(rlx.UserError, match="no KV cache"):
        model.compile(graph="prefill", kv_cache="f16")


def test_outputs_are_written_into_the_callers_arrays(rlx, tiny_gpt):
    inputs, reference = tiny_gpt
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    logits = np.full(reference.shape, np.nan, dtype=np.float32)
    result = compiled.run(inputs, outputs={"logits": logits})
    assert result["logits"] is logits
    np.testing.assert_allclose(logits, reference, rtol=1e-4, atol=1e-4)
    # Again into the same array: overwritten in place.
    logits[:] = 0
    compiled.run(inputs, outputs={"logits": logits})
    np.testing.assert_allclose(logits, reference, rtol=1e-4, atol=1e-4)


def test_wrong_output_arrays_are_refused_by_name(rlx, tiny_gpt):
    inputs, reference = tiny_gpt
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    n = reference.shape[0]
    cases = [
        (np.zeros((n, 64), np.float64), "dtype f64, and the output is f32"),
        (np.zeros((n, 64, 1), np.float32), "3 dims, and the output has 2"),
        (np.zeros((n + 1, 64), np.float32), rf"shape \[{n + 1},64\], and this run's output is "
                                            rf"f32\[{n},64\]"),
        (np.zeros((64, n), np.float32).T, "not C-contiguous"),
        ([0.0] * 64, "not a writable C-contiguous array"),
        ("logits", "not a writable"),
    ]
    read_only = np.zeros((n, 64), np.float32)
    read_only.flags.writeable = False
    cases.append((read_only, "read-only"))
    for array, message in cases:
        with pytest.raises(rlx.UserError, match=message):
            compiled.run(inputs, outputs={"logits": array})
    with pytest.raises(rlx.UserError, match="no output 'probs'.*logits"):
        compiled.run(inputs, outputs={"probs": np.zeros(3, np.float32)})


def test_outputs_of_a_dlpack_tensor_are_written_in_place(rlx, graph_file):
    compiled = rlx.load(graph_file(AXPY)).compile()
    x, y = np.arange(8, dtype=np.float32), np.full(8, 3, np.float32)
    out = DlpackArray(np.zeros(8, np.float32))
    compiled.run({"x": x, "y": y}, outputs={"b": out})
    np.testing.assert_array_equal(out.array, x * y + x)


def test_bf16_in_and_out_with_ml_dtypes(rlx, graph_file):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    compiled = rlx.load(graph_file(BF16)).compile()
    x = np.array([1.5, -2, 3.25, 256], dtype=ml_dtypes.bfloat16)
    y = np.array([0.5, 0.25, 1, 1], dtype=np.float32)
    out = compiled(x=x, y=y)
    want = x.astype(np.float32) + y
    np.testing.assert_array_equal(out["s"], want)
    assert out["z"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out["z"], want.astype(ml_dtypes.bfloat16))
    # A bf16 array given to write into.
    z = np.zeros(4, dtype=ml_dtypes.bfloat16)
    assert compiled.run({"x": x, "y": y}, outputs={"z": z})["z"] is z
    np.testing.assert_array_equal(z, want.astype(ml_dtypes.bfloat16))
    # A strided bf16 input is laid out first.
    wide = np.stack([x, x], axis=1)[:, 0]
    np.testing.assert_array_equal(compiled(x=wide, y=y)["s"], want)


def test_bf16_through_dlpack(rlx, graph_file):
    compiled = rlx.load(graph_file(BF16)).compile()
    bits = np.array([0x3FC0, 0xC000, 0x4050, 0x4380], dtype=np.uint16)  # 1.5 -2 3.25 256
    y = np.zeros(4, np.float32)
    out = compiled.run({"x": DlpackArray(bits, bf16=True), "y": y}, outputs={
        "z": DlpackArray(np.zeros(4, np.uint16), bf16=True)})
    assert out["z"].array.tolist() == bits.tolist()


def test_bf16_without_ml_dtypes_says_how_to_get_it(rlx, graph_file, monkeypatch):
    compiled = rlx.load(graph_file(BF16)).compile()
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes fails
    x = DlpackArray(np.array([0x3FC0] * 4, dtype=np.uint16), bf16=True)
    with pytest.raises(TypeError, match="pip install ml_dtypes"):
        compiled.run({"x": x, "y": np.zeros(4, np.float32)})
    # Asking only for the f32 output needs no bf16 array.
    s = compiled.run({"x": x, "y": np.zeros(4, np.float32)}, outputs=["s"])["s"]
    np.testing.assert_array_equal(s, np.full(4, 1.5, np.float32))


class DlpackArray:
    """A NumPy array's memory offered only through DLPack, its dtype told as bf16 when asked:
    a DLPack producer independent of rlx (and of torch, which the test venv lacks)."""

    def __init__(self, array, bf16=False):
        self.array = array
        self.bf16 = bf16

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __dlpack__(self, stream=None, **kwargs):
        return _capsule(self.array, bf16=self.bf16)


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_kept = []  # the structures and arrays the capsules point into (a test's lifetime is enough)


def _capsule(array, bf16):
    codes = {"f": 2, "i": 0, "u": 1}  # kDLFloat, kDLInt, kDLUInt
    shape = (ctypes.c_int64 * array.ndim)(*array.shape)
    managed = _DLManagedTensor()
    managed.dl_tensor = _DLTensor(array.ctypes.data, 1, 0, array.ndim,
                                  4 if bf16 else codes[array.dtype.kind],  # kDLBfloat
                                  array.dtype.itemsize * 8, 1, shape, None, 0)
    _kept.append((array, shape, managed))
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(managed), b"dltensor", None)


def test_device_memory_is_none_where_the_device_does_not_count(rlx, graph_file):
    # cpu computes in host memory and keeps no count; cuda answers (tests/gpu/run-on-device.sh
    # checks rlx bench's peak_device_mb, the same figure, on the H200).
    compiled = rlx.load(graph_file(AXPY)).compile(bind={"N": 4})
    assert compiled.device_memory() is None


def test_device_memory_counts_what_vulkan_allocates(rlx, graph_file):
    vulkan = [t for t in rlx.list_targets()["targets"] if t["name"] == "vulkan"]
    if not vulkan or vulkan[0]["status"] != "available":
        pytest.skip("vulkan is not available here: " + (vulkan[0]["detail"] if vulkan else "no plugin"))
    compiled = rlx.load(graph_file(AXPY)).compile("vulkan", bind={"N": 1024})
    x, y = np.full(1024, 2.0, np.float32), np.full(1024, 3.0, np.float32)
    np.testing.assert_array_equal(compiled(x=x, y=y)["b"], x * y + x)
    memory = compiled.device_memory()
    # x, y and the result were on the device: 1024 f32 each, at least.
    assert memory["peak_bytes"] >= 3 * 1024 * 4
    assert 0 < memory["bytes"] <= memory["peak_bytes"]


COMPLEX = """graph @t(%a: c64[N], %b: c64[N], %m: c64[N,3], %k: c64[3,2]) {
  %p = Mul(%a, %b) : c64[N]
  %q = Div(%p, %b) : c64[N]
  %e = Exp(%a) : c64[N]
  %r = Abs(%a) : f32[N]
  %y = MatMul(%m, %k) : c64[N,2]
  return %p, %q, %e, %r, %y
}
"""


def test_complex64_in_and_out_against_numpy(rlx, graph_file):
    rng = np.random.default_rng(5)
    def c(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    a, b, m, k = c(6), c(6), c(6, 3), c(3, 2)
    out = rlx.load(graph_file(COMPLEX)).compile()(a=a, b=b, m=m, k=k)
    assert out["p"].dtype == np.complex64 and out["r"].dtype == np.float32
    np.testing.assert_allclose(out["p"], a * b, rtol=1e-6)
    np.testing.assert_allclose(out["q"], a, rtol=1e-5)
    np.testing.assert_allclose(out["e"], np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(out["r"], np.abs(a), rtol=1e-6)
    np.testing.assert_allclose(out["y"], m @ k, rtol=1e-5)
