"""A soak test: 8 threads exporting, serializing, loading and calling different functions."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxport

THREADS = 8
ROUNDS = 4


def function(k: int) -> Callable[[Any], Any]:
    """A different function per thread."""
    def f(x: Any) -> Any:
        return jnp.sin(x) * (k + 1) + jnp.cos(x * k) - k
    f.__name__ = f"f{k}"
    return f


def reference(k: int, x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.sin(x) * (k + 1) + np.cos(x * k) - k
    return out


def work(k: int, folder: Path) -> int:
    """Rounds of export, serialize, save, load (verified), call and differentiate; the checks done."""
    checks = 0
    for r in range(ROUNDS):
        symbolic = (k + r) % 2 == 0
        if symbolic:
            n, = jaxport.symbolic_shape("n", constraints=("n >= 2",))
            spec = jax.ShapeDtypeStruct((n, 3), jnp.float32)
        else:
            spec = jax.ShapeDtypeStruct((4, 3), jnp.float32)
        exp = jaxport.export(jax.jit(function(k)))(spec)
        x = np.linspace(-1, 1, 12 if not symbolic else 3 * (2 + r), dtype=np.float32).reshape(-1, 3)
        path = folder / f"f{k}-{r}.jaxport"
        jaxport.save(exp, path, vjp_order=1)
        for loaded in (jaxport.load(path), jaxport.deserialize(exp.serialize(vjp_order=1))):
            np.testing.assert_allclose(loaded.call(x), reference(k, x), rtol=1e-5, atol=1e-5)
            grad = jax.grad(lambda v: jnp.sum(loaded.call(v)))(x)
            np.testing.assert_allclose(grad, np.cos(x) * (k + 1) - np.sin(x * k) * k,
                                       rtol=1e-4, atol=1e-4)
            checks += 2
    return checks


def test_eight_threads_export_serialize_load_and_call_different_functions(tmp_path: Path) -> None:
    with ThreadPoolExecutor(THREADS) as pool:
        done = list(pool.map(lambda k: work(k, tmp_path), range(THREADS)))
    assert done == [ROUNDS * 4] * THREADS
