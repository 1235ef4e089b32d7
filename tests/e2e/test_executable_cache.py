"""The executable cache of loaded artifacts, across processes and against damage.

Each test points ``JAXPORT_CACHE_DIR`` at its own temporary folder (children
get it through their environment), and uses a tiny function that compiles
in well under a second.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.cache_store import DirectoryCacheStore
from jaxport.adapters.module_cache import PlainModuleCache
from jaxport.adapters.xla_executables import XlaExecutables
from jaxport.application.executable_cache import ExecutableCache, default_cache
from jaxport.domain.cache_entry import CacheWarning

CHILD = """
import json, sys
import numpy as np
import jaxport
from jaxport.application.executable_cache import default_cache
exp = jaxport.load(sys.argv[1])
y = exp.call(np.arange(32, dtype=np.float32).reshape(2, 16))
print(json.dumps({"stats": vars(default_cache().stats), "y": np.asarray(y).tolist()}))
"""


def _f(x: jax.Array) -> jax.Array:
    return jnp.tanh(x @ jnp.ones((16, 4), jnp.float32)) * 3.0


X = jnp.arange(32, dtype=jnp.float32).reshape(2, 16)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(root))
    return root


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    path = tmp_path / "f.jaxport"
    jaxport.save(jaxport.export(jax.jit(_f))(jax.ShapeDtypeStruct((2, 16), jnp.float32)), path)
    return path


def _entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "executables").glob("*.entry"))


def _child(artifact: Path, cache_dir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "JAXPORT_CACHE_DIR": str(cache_dir)}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(artifact)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def test_a_second_process_loads_the_executable_from_the_cache(artifact: Path, cache_dir: Path) -> None:
    first = _result(_child(artifact, cache_dir))
    second = _result(_child(artifact, cache_dir))
    assert (first["stats"]["misses"], first["stats"]["hits"]) == (1, 0)
    assert (second["stats"]["misses"], second["stats"]["hits"]) == (0, 1)
    np.testing.assert_allclose(second["y"], np.asarray(jax.jit(_f)(X)), rtol=1e-6)
    assert second["y"] == first["y"]
    assert len(_entries(cache_dir)) == 1


def test_two_processes_filling_the_cache_at_once_both_succeed(artifact: Path, cache_dir: Path) -> None:
    children = [_child(artifact, cache_dir) for _ in range(2)]
    results = [_result(c) for c in children]
    assert all(r["y"] == results[0]["y"] for r in results)
    assert len(_entries(cache_dir)) == 1
    assert not [p for p in (cache_dir / "executables").iterdir() if p.name.startswith(".")]
    assert _result(_child(artifact, cache_dir))["stats"]["hits"] == 1


def _fresh_cache() -> ExecutableCache:
    return ExecutableCache(DirectoryCacheStore("executables"), XlaExecutables())


def _call_with(cache: ExecutableCache, artifact: Path) -> Any:
    """A fresh load of ``artifact`` called once through ``cache``."""
    from jaxport.application.executable_cache import CachingCaller

    exp = jaxport.load(artifact)
    caller = exp._caller
    assert isinstance(caller, CachingCaller)
    caller._cache = cache
    return np.asarray(exp.call(X))


@pytest.mark.parametrize("damage", [
    pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
    pytest.param(lambda b: b[:-100] + bytes(100), id="flipped"),
    pytest.param(lambda b: b"ELF\x7f" + b[4:], id="foreign"),
])
def test_a_damaged_entry_is_recompiled_with_a_warning(artifact: Path, cache_dir: Path,
                                                      damage: Any) -> None:
    expected = _call_with(_fresh_cache(), artifact)
    entry, = _entries(cache_dir)
    entry.write_bytes(damage(entry.read_bytes()))
    cache = _fresh_cache()
    with pytest.warns(CacheWarning, match="ignoring the cached executable .* compiling again"):
        np.testing.assert_array_equal(_call_with(cache, artifact), expected)
    assert (cache.stats.rejected, cache.stats.misses) == (1, 1)
    again = _fresh_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(_call_with(again, artifact), expected)
    assert again.stats.hits == 1


def test_an_entry_whose_executable_the_backend_refuses_is_recompiled(artifact: Path, cache_dir: Path) -> None:
    from jaxport.domain.cache_entry import encode_entry, stored_key
    from jaxport.domain.executable_key import EXECUTABLE_MAGIC, ExecutableKey

    expected = _call_with(_fresh_cache(), artifact)
    entry, = _entries(cache_dir)
    key = stored_key(entry.read_bytes())
    assert ExecutableKey.decode(key).digest() == entry.stem
    entry.write_bytes(encode_entry(EXECUTABLE_MAGIC, key, b"not an executable" * 10))
    cache = _fresh_cache()
    with pytest.warns(CacheWarning, match="JaxRuntimeError|XlaRuntimeError|INVALID_ARGUMENT"):
        np.testing.assert_array_equal(_call_with(cache, artifact), expected)


def test_eviction_keeps_the_cache_within_its_bound(tmp_path: Path, cache_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    b, = jaxport.symbolic_shape("b")
    path = tmp_path / "poly.jaxport"
    jaxport.save(jaxport.export(jax.jit(_f))(jax.ShapeDtypeStruct((b, 16), jnp.float32)), path)
    exp = jaxport.load(path)
    # Executables differ in size from one batch size and one CPU to the next:
    # what is checked is computed from the sizes of the entries written.
    written: list[tuple[str, int]] = []  # (name, size), oldest first

    def call(batch: int) -> dict[str, int]:
        before = {p.name for p in _entries(cache_dir)}
        exp.call(np.ones((batch, 16), np.float32))
        now = {p.name: p.stat().st_size for p in _entries(cache_dir)}
        new, = now.keys() - before
        written.append((new, now[new]))
        # Last use in the order of the calls, whatever the clock's resolution.
        os.utime(cache_dir / "executables" / new, (len(written), len(written)))
        return now

    call(1)
    bound = int(written[0][1] * 2.5)
    monkeypatch.setenv("JAXPORT_CACHE_MAX_BYTES", str(bound))
    for batch in (2, 3, 4, 5):
        now = call(batch)
        # The most recently used entries are kept, as many as fit the bound.
        kept = len(now)
        assert now.keys() == {name for name, _ in written[-kept:]}
        assert sum(now.values()) <= bound
        assert kept == len(written) or sum(size for _, size in written[-kept - 1:]) > bound
    assert len(now) < len(written)


def _config_snapshot() -> dict[str, Any]:
    return {name: repr(getattr(jax.config, name)) for name in dir(jax.config)
            if name.startswith("jax_")}


def test_calls_and_warm_up_leave_jax_global_configuration_unchanged(artifact: Path, cache_dir: Path) -> None:
    before = _config_snapshot()
    exp = jaxport.load(artifact)
    assert exp.warm() == "compiled"
    assert jaxport.load(artifact).warm() == "hit"
    exp.call(X)
    after = _config_snapshot()
    assert after == before
    assert after["jax_compilation_cache_dir"] == repr(None)


def test_warm_fills_the_cache_that_a_later_process_hits(artifact: Path, cache_dir: Path) -> None:
    assert jaxport.load(artifact).warm(jax.ShapeDtypeStruct((2, 16), jnp.float32)) == "compiled"
    assert _result(_child(artifact, cache_dir))["stats"]["hits"] == 1


def test_warm_needs_specs_for_symbolic_shapes(tmp_path: Path, cache_dir: Path) -> None:
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.deserialize(
        jaxport.export(jax.jit(_f))(jax.ShapeDtypeStruct((b, 16), jnp.float32)).serialize())
    with pytest.raises(jaxport.errors.CallError, match="symbolic"):
        exp.warm()
    assert exp.warm(jax.ShapeDtypeStruct((7, 16), jnp.float32)) == "compiled"
    with pytest.raises(jaxport.errors.ShapeMismatchError):
        exp.warm(jax.ShapeDtypeStruct((7, 15), jnp.float32))


def test_with_caching_off_calls_still_compile(artifact: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_DIR", "")
    exp = jaxport.load(artifact)
    assert exp.warm() == "uncached"
    np.testing.assert_allclose(np.asarray(exp.call(X)), np.asarray(jax.jit(_f)(X)), rtol=1e-6)


@dataclasses.dataclass(frozen=True)
class _Elsewhere(XlaExecutables):
    """The real compiler, describing its environment as another machine's."""

    changes: tuple[tuple[str, Any], ...] = ()

    def environment(self, lowered: jax.stages.Lowered) -> dict[str, Any]:
        return {**super().environment(lowered), **dict(self.changes)}


@pytest.mark.parametrize("changes", [
    pytest.param((("platform", "cuda"), ("device_kind", "NVIDIA H200")), id="platform"),
    pytest.param((("device_count", 4), ("device_ids", (0, 1, 2, 3))), id="device-count"),
])
def test_another_platform_or_device_count_misses_the_cache(artifact: Path, cache_dir: Path,
                                                           changes: Any) -> None:
    _call_with(_fresh_cache(), artifact)
    elsewhere = ExecutableCache(DirectoryCacheStore("executables"), _Elsewhere(changes))
    _call_with(elsewhere, artifact)
    assert (elsewhere.stats.hits, elsewhere.stats.misses) == (0, 1)
    assert len(_entries(cache_dir)) == 2


def test_a_call_on_another_device_misses_the_cache(artifact: Path, cache_dir: Path) -> None:
    exp = jaxport.load(artifact)
    exp.call(X)
    on_device_1 = exp.call(jax.device_put(X, jax.devices()[1]))
    assert on_device_1.devices() == {jax.devices()[1]}
    assert len(_entries(cache_dir)) == 2


def test_under_jit_grad_and_vmap_the_loaded_call_is_unchanged(cache_dir: Path) -> None:
    exp = jaxport.deserialize(jaxport.export(jax.jit(_f))(
        jax.ShapeDtypeStruct((2, 16), jnp.float32)).serialize(vjp_order=1))
    np.testing.assert_allclose(exp.call(X), jax.jit(_f)(X), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(exp.call)(X), jax.jit(_f)(X), rtol=1e-6)
    g = jax.grad(lambda x: exp.call(x).sum())(X)
    np.testing.assert_allclose(g, jax.grad(lambda x: _f(x).sum())(X), rtol=1e-5)
    xs = jnp.stack([X, X + 1])
    np.testing.assert_allclose(jax.vmap(exp.call)(xs), jax.vmap(_f)(xs), rtol=1e-6)


def test_in_process_exports_do_not_use_the_cache(cache_dir: Path) -> None:
    exp = jaxport.export(jax.jit(_f))(jax.ShapeDtypeStruct((2, 16), jnp.float32))
    before = dataclasses.replace(default_cache().stats)
    exp.call(X)
    assert default_cache().stats == before
    assert not (cache_dir / "executables").exists() or not _entries(cache_dir)


def test_a_bad_size_bound_is_a_typed_error(artifact: Path, cache_dir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_MAX_BYTES", "lots")
    with pytest.raises(jaxport.errors.CacheConfigError, match="JAXPORT_CACHE_MAX_BYTES='lots'"):
        jaxport.load(artifact).warm()


def test_the_parsed_module_is_kept_for_the_first_lowering_of_a_later_load(artifact: Path,
                                                                          cache_dir: Path) -> None:
    spec = jax.ShapeDtypeStruct((2, 16), jnp.float32)
    want = jax.jit(jaxport.load(artifact).call).lower(spec).as_text()
    PlainModuleCache.flush()  # the entry is written on a background thread
    modules = sorted((cache_dir / "modules").glob("*.entry"))
    assert len(modules) == 1
    assert jax.jit(jaxport.load(artifact).call).lower(spec).as_text() == want
    modules[0].write_bytes(modules[0].read_bytes()[:-10])
    with pytest.warns(CacheWarning, match="ignoring the cached module .*truncated"):
        assert jax.jit(jaxport.load(artifact).call).lower(spec).as_text() == want
    assert jax.jit(jaxport.load(artifact).call).lower(spec).as_text() == want
