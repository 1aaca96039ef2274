"""Writes the numpy input files of tests/cli/test_input_forms_cli.cpp (run from this folder).

The files are committed, so the tests need no Python; this script says how they were made and
remakes them (numpy 2.4 wrote the committed ones). The values
are small integers and halves, so every expected output is computed by hand in the tests.
"""
import numpy as np

x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)

# The small model's inputs (y = (x + w) * x): numpy's own zip layout (zip64 local headers), stored
# by np.savez and deflated by np.savez_compressed.
np.savez("small_stored.npz", x=x, w=np.ones((2, 3), dtype=np.float32))
np.savez_compressed("small_compressed.npz", x=x, w=np.full((2, 3), 0.5, dtype=np.float32))

# One array for --input NAME=@FILE.npy, and the forms rlx refuses.
np.save("x_f32.npy", x)
np.save("x_fortran.npy", np.asfortranarray(x))
np.save("x_big_endian.npy", x.astype(">f4"))
np.save("strings.npy", np.array(["a", "bc"]))

# One array of every dtype an input file may hold, for a model taking each.
np.savez(
    "dtypes.npz",
    a=np.array([1.5, -0.25], dtype=np.float16),
    b=np.array([0.1, 1e300], dtype=np.float64),
    c=np.array([-300, 7], dtype=np.int16),
    d=np.array([-100, 5], dtype=np.int8),
    e=np.array([100, 7], dtype=np.uint8),
    f=np.array([True, False]),
    g=np.array([-5, 2**30], dtype=np.int32),
    h=np.array([2**40, -3], dtype=np.int64),
)
