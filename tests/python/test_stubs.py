# The type stubs the build writes with nanobind's stubgen (rlx/_rlx.pyi and py.typed beside the
# module; the wheel installs them) and the public API's docstrings.
import inspect
import os
import re


def test_stubs_describe_the_native_module(rlx):
    folder = os.path.dirname(rlx._rlx.__file__)
    assert os.path.isfile(os.path.join(folder, "py.typed"))
    with open(os.path.join(folder, "_rlx.pyi")) as f:
        stub = f.read()
    # Every function and class of the module, with its signature.
    for name, value in vars(rlx._rlx).items():
        if name.startswith("_"):  # stubgen leaves private names out
            continue
        kind = "class" if inspect.isclass(value) else "def"
        assert re.search(rf"^{kind} {name}\b", stub, re.M), name
    assert re.search(r"def compile\(self, target: str = 'cpu', graph: str = 'main', "
                     r"bind: Mapping\[str, int\] = \{\}, precision: str \| None = None, "
                     r"kv_cache: str \| None = None\)", stub)


def test_the_public_api_is_documented(rlx):
    for name in rlx.__all__:
        value = getattr(rlx, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), name
    for cls in (rlx.Model, rlx.Compiled):
        for name, member in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(member):
                assert inspect.getdoc(member), f"{cls.__name__}.{name}"


def test_the_public_functions_are_annotated(rlx):
    # The package is typed (py.typed): its own functions carry their types for checkers.
    import typing
    for fn in (rlx.load, rlx.list_targets, rlx.embed, rlx.generate, rlx.Model.compile,
               rlx.Compiled.run):
        hints = typing.get_type_hints(fn)
        assert "return" in hints, fn.__qualname__
    assert typing.get_type_hints(rlx.Model.compile)["return"] is rlx.Compiled
