"""Loaded artifacts served by JAX's persistent compilation cache, across processes.

The children get JAX's cache through their environment, as a deployment
would set it (``JAX_COMPILATION_CACHE_DIR`` and the two thresholds that keep
every compilation, which ``jaxport warm`` sets for itself when they are
unset); what the cache did is read from JAX's monitoring events
and from the cache directory's entries, never from timings. A tiny function
keeps each child's compilation short.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.jax.exported.warm import keep_every_compilation
from jaxport.errors import CacheConfigError

from tests.helpers.jax_cache import KEEP_EVERY_COMPILATION

CHILD = """
import json, sys
import jax
import numpy as np
events = []
jax.monitoring.register_event_listener(
    lambda event, **_: events.append(event) if event.startswith("/jax/compilation_cache/") else None)
import jaxport
y = jaxport.load(sys.argv[1]).call(np.arange(32, dtype=np.float32).reshape(2, 16))
print(json.dumps({"events": events, "y": np.asarray(y).tolist()}))
"""
HIT = "/jax/compilation_cache/cache_hits"
WRITTEN = "/jax/compilation_cache/cache_misses"
X = np.arange(32, dtype=np.float32).reshape(2, 16)


def _f(x: jax.Array) -> jax.Array:
    return jnp.tanh(x @ jnp.ones((16, 4), jnp.float32)) * 3.0


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``_f`` exported and saved once for the module's tests, which only read it."""
    path = tmp_path_factory.mktemp("artifact") / "f.jaxport"
    jaxport.save(jaxport.export(jax.jit(_f))(jax.ShapeDtypeStruct((2, 16), jnp.float32)), path)
    return path


@pytest.fixture
def jax_cache(tmp_path: Path) -> Path:
    """The directory of JAX's cache for this test's children (made by JAX on first use)."""
    return tmp_path / "jax-cache"


def _env(jax_cache: Path | None, **settings: object) -> dict[str, str]:
    """This process's environment with JAX's cache at ``jax_cache`` keeping every compilation
    (``settings`` override JAX's settings by their config names)."""
    env = dict(os.environ)
    if jax_cache is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = str(jax_cache)
        env.update({k.upper(): str(v) for k, v in {**KEEP_EVERY_COMPILATION, **settings}.items()})
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def _call_in_child(artifact: Path, jax_cache: Path) -> tuple[dict[str, Any], str]:
    """(what a fresh process's first call of ``artifact`` reports, its stderr)."""
    done = _run(["-c", CHILD, str(artifact)], _env(jax_cache))
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result, done.stderr


def _entries(jax_cache: Path) -> list[Path]:
    return sorted(jax_cache.glob("*-cache"))


def test_a_second_process_first_call_hits_jax_cache(artifact: Path, jax_cache: Path) -> None:
    first, _ = _call_in_child(artifact, jax_cache)
    assert WRITTEN in first["events"] and HIT not in first["events"]
    assert len(_entries(jax_cache)) == 1
    second, _ = _call_in_child(artifact, jax_cache)
    assert HIT in second["events"] and WRITTEN not in second["events"]
    np.testing.assert_allclose(second["y"], np.asarray(jax.jit(_f)(X)), rtol=1e-6)
    assert second["y"] == first["y"]


def _garbage_executable(entry: bytes) -> bytes:
    """An entry that decompresses, holding bytes that are no executable."""
    return zlib.compress(zlib.decompress(entry)[:4] + b"not an executable" * 10)


@pytest.mark.parametrize("damage", [
    pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
    pytest.param(lambda b: b[:-100] + bytes(100), id="zeroed-tail"),
    pytest.param(_garbage_executable, id="not-an-executable"),
])
def test_a_damaged_entry_does_not_break_a_call(artifact: Path, jax_cache: Path,
                                               damage: Callable[[bytes], bytes]) -> None:
    expected, _ = _call_in_child(artifact, jax_cache)
    entry, = _entries(jax_cache)
    entry.write_bytes(damage(entry.read_bytes()))
    again, stderr = _call_in_child(artifact, jax_cache)
    assert again["y"] == expected["y"]
    assert HIT not in again["events"]
    assert "Error reading persistent compilation cache entry" in stderr  # JAX's warning


def test_jaxport_warm_fills_jax_cache_for_a_later_process(artifact: Path, jax_cache: Path) -> None:
    done = _run(["-m", "jaxport", "warm", str(artifact)], _env(jax_cache))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == f"{artifact}: in JAX's compilation cache at {jax_cache}\n"
    assert len(_entries(jax_cache)) == 1
    later, _ = _call_in_child(artifact, jax_cache)
    assert HIT in later["events"] and WRITTEN not in later["events"]


def test_jaxport_warm_compiles_a_bundles_functions(tmp_path: Path, jax_cache: Path) -> None:
    params = {"w": jnp.ones((16, 4), jnp.float32)}
    spec = jax.ShapeDtypeStruct((2, 16), jnp.float32)
    exp = jaxport.export(jax.jit(lambda p, x: jnp.tanh(x @ p["w"])))(params, spec)
    twice = jaxport.export(jax.jit(lambda p, x: 2 * x + jnp.sum(p["w"])))(params, spec)
    jaxport.save_bundle(tmp_path / "model", {"predict": exp, "twice": twice}, params)
    done = _run(["-m", "jaxport", "warm", str(tmp_path / "model")], _env(jax_cache))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [f"{tmp_path / 'model'} {name}: in JAX's compilation cache at {jax_cache}"
                                        for name in ("predict", "twice")]
    assert len(_entries(jax_cache)) == 2


def test_jaxport_warm_refuses_without_a_cache(artifact: Path) -> None:
    done = _run(["-m", "jaxport", "warm", str(artifact)], _env(None))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"jaxport warm: CacheConfigError: Cannot warm {artifact}: "
                                  "no JAX compilation cache is configured")
    assert "JAX_COMPILATION_CACHE_DIR" in done.stderr and len(done.stderr.splitlines()) == 1


def test_jaxport_warm_says_when_jax_thresholds_keep_it_from_writing(artifact: Path, jax_cache: Path) -> None:
    env = _env(jax_cache, jax_persistent_cache_min_compile_time_secs=3600)
    done = _run(["-m", "jaxport", "warm", str(artifact)], env)
    assert done.returncode == 2, done.stderr
    assert "did not write it to its compilation cache" in done.stderr
    assert "jax_persistent_cache_min_compile_time_secs (now 3600 s)" in done.stderr
    assert "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0" in done.stderr
    assert not _entries(jax_cache)


def test_jaxport_warm_writes_a_fast_compilation_under_jax_default_thresholds(artifact: Path,
                                                                            jax_cache: Path) -> None:
    env = {k: v for k, v in _env(None).items() if not k.startswith("JAX_PERSISTENT_CACHE_MIN_")}
    env["JAX_COMPILATION_CACHE_DIR"] = str(jax_cache)  # and nothing else: JAX's default thresholds
    done = _run(["-m", "jaxport", "warm", str(artifact)], env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(_entries(jax_cache)) == 1
    later, _ = _call_in_child(artifact, jax_cache)
    assert HIT in later["events"] and WRITTEN not in later["events"]


def test_a_warming_process_keeps_every_compilation_but_where_the_environment_sets_a_threshold() -> None:
    time_name, size_name = "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes"
    before = {name: getattr(jax.config, name) for name in (time_name, size_name)}
    try:
        assert keep_every_compilation({time_name.upper(): "3600"}) == (size_name,)
        assert (getattr(jax.config, time_name), getattr(jax.config, size_name)) == (before[time_name], -1)
        assert keep_every_compilation({}) == (time_name, size_name)
        assert (getattr(jax.config, time_name), getattr(jax.config, size_name)) == (0.0, -1)
    finally:
        for name, value in before.items():
            jax.config.update(name, value)
    assert before[time_name] >= 1.0  # JAX's default, which warming a small function would not reach


def test_warm_refuses_in_a_process_without_a_cache(artifact: Path) -> None:
    assert getattr(jax.config, "jax_compilation_cache_dir") is None
    with pytest.raises(CacheConfigError, match="Cannot warm '_f': no JAX compilation cache is configured"):
        jaxport.load(artifact).warm()


def _config_snapshot() -> dict[str, str]:
    return {name: repr(getattr(jax.config, name)) for name in dir(jax.config) if name.startswith("jax_")}


def test_warm_fills_the_cache_configured_through_jax_config_and_changes_no_setting(
        artifact: Path, jax_compilation_cache: Path) -> None:
    exp = jaxport.load(artifact)
    exp.call(X)  # an earlier call in this process: warm still reaches the persistent cache
    before = _config_snapshot()
    assert exp.warm() == str(jax_compilation_cache)
    assert jaxport.load(artifact).warm() == str(jax_compilation_cache)  # a hit
    assert _config_snapshot() == before
    assert len(_entries(jax_compilation_cache)) == 1


def test_warm_needs_specs_for_symbolic_shapes(jax_compilation_cache: Path) -> None:
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.deserialize(
        jaxport.export(jax.jit(_f))(jax.ShapeDtypeStruct((b, 16), jnp.float32)).serialize())
    with pytest.raises(jaxport.errors.CallError, match="symbolic"):
        exp.warm()
    assert exp.warm(jax.ShapeDtypeStruct((7, 16), jnp.float32)) == str(jax_compilation_cache)
    with pytest.raises(jaxport.errors.ShapeMismatchError):
        exp.warm(jax.ShapeDtypeStruct((7, 15), jnp.float32))


HOME_CHILD = """
import sys
from pathlib import Path
import jax, jax.numpy as jnp, numpy as np
import jaxport
work = Path(sys.argv[1])
exp = jaxport.export(jax.jit(lambda x: jnp.sin(x) * 2))(jax.ShapeDtypeStruct((3,), jnp.float32))
jaxport.save(exp, work / "f.jaxport")
loaded = jaxport.load(work / "f.jaxport")
np.testing.assert_allclose(loaded.call(np.ones(3, np.float32)), np.sin(np.ones(3)) * 2, rtol=1e-6)
jax.jit(loaded.call)(np.ones(3, np.float32))
jaxport.deserialize(exp.serialize(vjp_order=1)).call(np.ones(3, np.float32))
w = {"w": np.ones(3, np.float32)}
weighted = jaxport.export(jax.jit(lambda p, x: x * p["w"]))(w, jax.ShapeDtypeStruct((3,), jnp.float32))
jaxport.save_bundle(work / "model", {"f": weighted}, w)
jaxport.load_bundle(work / "model")["f"](np.ones(3, np.float32))
"""


@pytest.mark.parametrize("xdg", [True, False], ids=["XDG_CACHE_HOME", "no-XDG_CACHE_HOME"])
def test_jaxport_writes_nothing_under_home_but_verdicts(tmp_path: Path, xdg: bool) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JAXPORT_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    if xdg:
        env["XDG_CACHE_HOME"] = str(home / "xdg-cache")
    done = _run(["-c", HOME_CHILD, str(work)], env, cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    verdicts = (home / "xdg-cache" if xdg else home / ".cache") / "jaxport" / "verdicts"
    written = sorted(p for p in home.rglob("*") if p.is_file())
    assert written and all(p.parent == verdicts and p.suffix == ".json" for p in written), written
