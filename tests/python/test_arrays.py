# NumPy and DLPack in and out without copies: a C-contiguous input is read where it lies, and an
# output is a NumPy array over rlx's buffer that DLPack consumers share.
import numpy as np
import pytest

from reference_files import TINY_GPT, read_safetensors


def test_contiguous_numpy_input_is_not_copied(rlx):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert rlx._rlx._tensor_address(a) == a.ctypes.data


def test_dlpack_input_is_not_copied(rlx):
    class OnlyDlpack:  # an array known only through the DLPack protocol
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(6, dtype=np.int64)
    assert rlx._rlx._tensor_address(OnlyDlpack(a)) == a.ctypes.data


def test_strided_input_is_copied(rlx):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1]
    assert rlx._rlx._tensor_address(a) != a.ctypes.data


def test_output_shares_memory_through_dlpack(rlx):
    inputs = read_safetensors(f"{TINY_GPT}/inputs.safetensors")
    out = rlx.load(f"{TINY_GPT}/model.rlx").compile()(**inputs)["logits"]
    shared = np.from_dlpack(out)
    assert shared.ctypes.data == out.ctypes.data
    # The array keeps rlx's buffer alive after the run's other references are gone.
    del inputs
    assert np.isfinite(shared).all()


def test_torch_round_trip_without_copies(rlx):
    torch = pytest.importorskip("torch")
    inputs = read_safetensors(f"{TINY_GPT}/inputs.safetensors")
    ids = torch.from_numpy(inputs["ids"])
    assert rlx._rlx._tensor_address(ids) == ids.data_ptr()
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    out = compiled(ids=ids, positions=torch.from_numpy(inputs["positions"]))["logits"]
    t = torch.from_dlpack(out)
    assert t.data_ptr() == out.ctypes.data
    reference = read_safetensors(f"{TINY_GPT}/reference.safetensors")["logits"]
    np.testing.assert_allclose(t.numpy(), reference, rtol=1e-4, atol=1e-4)


def test_jax_round_trip_without_copies(rlx):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    # The model's token ids are i64: without x64 jax makes i32 arrays, which rlx refuses by
    # name rather than converting.
    jax.config.update("jax_enable_x64", True)
    inputs = read_safetensors(f"{TINY_GPT}/inputs.safetensors")
    ids, positions = jnp.asarray(inputs["ids"]), jnp.asarray(inputs["positions"])
    assert rlx._rlx._tensor_address(ids) == ids.unsafe_buffer_pointer()
    compiled = rlx.load(f"{TINY_GPT}/model.rlx").compile()
    out = compiled(ids=ids, positions=positions)["logits"]
    shared = jnp.from_dlpack(out)
    assert shared.unsafe_buffer_pointer() == out.ctypes.data
    reference = read_safetensors(f"{TINY_GPT}/reference.safetensors")["logits"]
    np.testing.assert_allclose(np.asarray(shared), reference, rtol=1e-4, atol=1e-4)
