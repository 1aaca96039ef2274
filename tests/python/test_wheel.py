# `pip wheel .` from the checkout, installed into a fresh venv and used from outside the source
# tree: the package finds its own plugins, runs a model to its reference, and ships the `rlx`
# script. The build reuses scripts/build.sh's ccache (same flags, CCACHE_BASEDIR at the root).
import json
import os
import subprocess
import sys
import textwrap
import time
import venv

import pytest

from reference_files import ROOT


def run(cmd, **kwargs):
    r = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert r.returncode == 0, f"{cmd}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, CCACHE_BASEDIR=ROOT, CCACHE_NOHASHDIR="1", CCACHE_COMPRESS="1",
               CCACHE_DIR=os.environ.get("CCACHE_DIR",
                                         os.path.expanduser("~/.cache/ccache")),
               CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("RLX_JOBS", "2"))
    # The main build's compilers by name, so its ccache entries serve the wheel's build
    # (tests/python/CMakeLists.txt); a CC/CXX the caller set wins.
    for var in ("CC", "CXX"):
        if var not in os.environ and os.environ.get(f"RLX_WHEEL_{var}"):
            env[var] = os.environ[f"RLX_WHEEL_{var}"]
    env.pop("PYTHONPATH", None)
    # The installed wheel must find its own plugins: not the build tree's, which CTest names in
    # RLX_PLUGIN_PATH for the module in the build tree.
    env.pop("RLX_PLUGIN_PATH", None)
    start = time.monotonic()
    # The test venv has scikit-build-core and nanobind (scripts/test.sh): no download.
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--disable-pip-version-check", "-w", str(tmp / "dist"), ROOT], env=env)
    print(f"pip wheel took {time.monotonic() - start:.0f} s", file=sys.stderr)
    wheels = list((tmp / "dist").glob("rlx-*.whl"))
    assert len(wheels) == 1
    # Stripped, one file per shared library: 7.3 MB (2026-12; 126 MB with debug info and the
    # .so/.so.0.1.0 links stored as copies). The bound leaves room for new plugins.
    assert wheels[0].stat().st_size < 30e6, f"{wheels[0].stat().st_size / 1e6:.1f} MB"
    venv.create(tmp / "venv", with_pip=True)
    python = str(tmp / "venv" / "bin" / "python")
    # numpy from pip's cache (the test venv has it); the wheel itself without a network.
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "numpy",
         str(wheels[0])], env=env)
    return tmp, python, env


def test_installed_wheel_runs_a_model_outside_the_tree(installed):
    tmp, python, env = installed
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {os.path.join(ROOT, 'tests', 'python')!r})
        import numpy as np, rlx
        from reference_files import read_safetensors, TINY_GPT
        assert not rlx.__file__.startswith({ROOT!r}), rlx.__file__
        import os
        for typed in ("_rlx.pyi", "py.typed"):  # the stubs the build wrote
            assert os.path.isfile(os.path.join(os.path.dirname(rlx.__file__), typed)), typed
        listed = rlx.list_targets(verbose=True)
        cpu = [t for t in listed["targets"] if t["name"] == "cpu"][0]
        assert cpu["status"] == "available", cpu
        inputs = read_safetensors(TINY_GPT + "/inputs.safetensors")
        ref = read_safetensors(TINY_GPT + "/reference.safetensors")["logits"]
        out = rlx.load(TINY_GPT + "/model.rlx").compile("cpu")(**inputs)["logits"]
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
        print(json.dumps({{"module": rlx.__file__, "cpu": cpu["manifest"]}}))
    """)
    r = run([python, "-c", script], cwd=tmp, env=env)
    found = json.loads(r.stdout.strip().splitlines()[-1])
    package = os.path.dirname(found["module"])
    assert found["cpu"] == os.path.join(package, "share", "rlx", "plugins.d", "cpu.toml")


def test_installed_wheel_has_the_rlx_script(installed):
    tmp, python, env = installed
    script = os.path.join(os.path.dirname(python), "rlx")
    r = run([script, "--list-targets", "--json"], cwd=tmp, env=env)
    names = [t["name"] for t in json.loads(r.stdout)["targets"]]
    assert "cpu" in names
    assert run([script, "--version"], cwd=tmp, env=env).stdout.startswith("rlx 0.1.0")


def test_installed_wheel_still_searches_the_system_plugin_folders(installed, tmp_path):
    # A vendor's .deb puts its manifest under /usr/share/rlx/plugins.d (XDG_DATA_DIRS): the
    # wheel's registry lists it after its own plugins. This manifest names a library that is
    # not there, so it lists as broken, saying where it looked.
    tmp, python, env = installed
    folder = tmp_path / "share" / "rlx" / "plugins.d"
    folder.mkdir(parents=True)
    (folder / "vendorx.toml").write_text(textwrap.dedent("""\
        [plugin]
        name = "vendorx"
        kind = "target"
        version = "1.0.0"
        abi = "2.1"
        library = "librlx_target_vendorx.so"
        description = "a vendor's target"
        """))
    script = "import json, rlx; print(json.dumps(rlx.list_targets(verbose=True)))"
    r = run([python, "-c", script], cwd=tmp,
            env=dict(env, XDG_DATA_DIRS=str(tmp_path / "share")))
    listed = {t["name"]: t for t in json.loads(r.stdout)["targets"]}
    assert listed["cpu"]["status"] == "available"
    vendor = listed["vendorx"]
    assert vendor["status"] == "broken", vendor
    assert vendor["manifest"] == str(folder / "vendorx.toml")
    assert "librlx_target_vendorx.so not found" in vendor["detail"]
